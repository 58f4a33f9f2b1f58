import Foundation
import KeychainCore
import KeychainDaemon
import KeychainPrompt
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the Secret Service does for a program that is not registered (`security app add`).
package enum UnregisteredCallerPolicy: String, Sendable, Hashable, CaseIterable {
    /// Ask the person once per program and collection (allow once / always / deny), through the prompter.
    case ask
    /// Let every program of the user reach the collections of unregistered programs (gnome-keyring's behaviour:
    /// for headless machines and test rigs).
    case allow
    /// Refuse every program that is not registered.
    case deny

    /// The environment variable that overrides the keychain's setting.
    package static let environmentVariable = "KEYCHAIN_SECRET_SERVICE_UNREGISTERED"

    /// The policy `environment` sets, or nil when it sets none; an unknown value is an error that names the
    /// accepted ones.
    package static func fromEnvironment(_ environment: [String: String]) throws(KeychainError) -> UnregisteredCallerPolicy? {
        guard let value = environment[environmentVariable], !value.isEmpty else { return nil }
        guard let policy = UnregisteredCallerPolicy(rawValue: value) else {
            throw KeychainError(code: .invalidParameter, message: "\(environmentVariable) is '\(value)'; it must be ask, allow or deny.")
        }
        return policy
    }
}

/// One program calling the Secret Service, identified per call from what the bus daemon says of its connection.
package struct SecretServiceCaller: Sendable {
    /// The caller's unique bus name (`:1.42`).
    package var busName: String
    /// keychaind's session for the process: its identity from `/proc`, its user's keychain.
    package var session: Session
    /// The access groups it is registered for, or nil when it is not registered (or untrusted).
    package var registeredGroups: [String]?

    /// How prompts and logs name it.
    package var description: String { session.identity.description }
}

/// Who may reach which collection, decided for each call.
///
/// - A collection whose group is one of a program's registered groups (or a program registered with `*`) is
///   reachable by it, without a prompt.
/// - A collection of unregistered programs (group ``SecretStore/groupPrefix``…) is reachable by any program as the
///   ``UnregisteredCallerPolicy`` says: `allow`, `deny`, or `ask` — the person answers once per program and
///   collection; `always` and `deny` are remembered in `apps.consents` for the program's executable path and
///   SHA-256 (or Flatpak/snap identity), `once` for as long as that bus connection lasts.
/// - A collection of a registered group is never reachable by any other program.
///
/// What this cannot stop: a program of the same user that makes itself look like another (the same executable
/// run with a different script or input) is that program; and keychaind learns the caller's process from the bus
/// daemon, which records it when the connection is made (see SECURITY.md).
package final class SecretServiceAccess: Sendable {
    /// keychaind's identification of callers (and their registry).
    package let authority: Authority
    /// The policy the environment sets (`KEYCHAIN_SECRET_SERVICE_UNREGISTERED`), which overrides the settings.
    package let environmentPolicy: UnregisteredCallerPolicy?
    /// What asks the person (pinentry, per the keychain's settings).
    package let prompters: PrompterCache
    /// Requests waiting for `security approve` when no prompt can be shown (keychaind's one list).
    package let approvals: PendingApprovals
    /// The settings' policy as last read, with the settings file's stamp then.
    private let settingsPolicy = Mutex<(stamp: FileStamp?, policy: UnregisteredCallerPolicy)?>(nil)
    private let logger: Logger
    /// Collections allowed `once`, by bus connection.
    private let onceGrants = Mutex<[String: Set<String>]>([:])
    /// The most connections with `once` grants remembered (the oldest are forgotten past it).
    static let maximumGrantHolders = 4_096

    /// Why each connection's last unlock prompt did not open a collection to it, by bus name: told in the IsLocked
    /// errors that follow, which would otherwise only say "call Unlock" (the reason was in keychaind's log alone).
    private let lastRefusals = Mutex<[String: String]>([:])

    /// Records why `caller`'s unlock prompt opened nothing (`reason` in the user's terms, one sentence or two).
    package func recordRefusal(_ caller: SecretServiceCaller, _ reason: String) {
        lastRefusals.withLock { refusals in
            if refusals.count >= Self.maximumGrantHolders, refusals[caller.busName] == nil { refusals.removeAll() }
            refusals[caller.busName] = String(reason.prefix(1_000))
        }
    }

    /// Why `caller`'s last unlock prompt opened nothing, if one did not.
    package func lastRefusal(_ caller: SecretServiceCaller) -> String? {
        lastRefusals.withLock { $0[caller.busName] }
    }

    /// Access decided with `authority`'s identification, asking through `prompters`, or, when they cannot show a
    /// prompt, waiting in `approvals` for `security approve`.
    package init(
        authority: Authority, environmentPolicy: UnregisteredCallerPolicy?, prompters: PrompterCache, approvals: PendingApprovals,
        logger: Logger
    ) {
        self.authority = authority
        self.environmentPolicy = environmentPolicy
        self.prompters = prompters
        self.approvals = approvals
        self.logger = logger
    }

    /// A connection's process as identified at its first call, with its `/proc/PID/status` held open (the open file
    /// stays with that process: once it is gone, reading fails, even if another process has the pid by then).
    final class Identified: Sendable {
        let session: Session
        let pid: UInt32
        let status: Int32

        init(session: Session, pid: UInt32, status: Int32) {
            self.session = session
            self.pid = pid
            self.status = status
        }

        deinit { if status >= 0 { close(status) } }
    }

    /// Identified connections, by unique bus name (never reused by the bus); forgotten when they leave the bus.
    private let identified = Mutex<[String: Identified]>([:])
    /// The most connections kept identified (past it, the table starts again).
    static let maximumIdentified = 16_384

    /// Identifies the process behind `busName` from the bus daemon's process ID and user ID for it.
    ///
    /// As keychaind does for its own socket, the process is identified once, at the connection's first call, and
    /// checked at every call after: still the same process (its status file, opened before it was identified, still
    /// reads) and not traced since (a tracer makes it untrusted, and it is identified again). Its registration is
    /// looked up at every call, so `security app add` and `remove` apply at once.
    package func caller(busName: String, pid: UInt32?, uid: UInt32?) throws(KeychainError) -> SecretServiceCaller {
        guard let pid, let uid, pid > 0, pid <= UInt32(Int32.max) else {
            throw KeychainError(code: .missingEntitlement, message: "The bus did not say which process is behind \(busName); it cannot be identified.")
        }
        let session: Session
        if let known = stillIdentified(busName, pid: pid) {
            session = known
        } else {
            let status = authority.inspector.openStatus(of: Int32(pid))
            let fresh = Identified(session: try authority.session(pid: Int32(pid), uid: uid), pid: pid, status: status)
            identified.withLock { table in
                if table.count >= Self.maximumIdentified, table[busName] == nil { table.removeAll() }
                table[busName] = fresh
            }
            session = fresh.session
        }
        return try caller(busName: busName, session: session)
    }

    /// The caller behind `busName` when it was identified before and is still that process, untraced (the checks
    /// ``caller(busName:pid:uid:)`` makes at every call); nil when it would have to be identified now (reading and
    /// hashing its executable), which is not quick.
    package func identifiedCaller(busName: String, pid: UInt32?) throws(KeychainError) -> SecretServiceCaller? {
        guard let pid, let session = stillIdentified(busName, pid: pid) else { return nil }
        return try caller(busName: busName, session: session)
    }

    /// The session of `busName` identified before, when it is still process `pid` (its status file reads) and not
    /// traced since (or was untrusted already).
    private func stillIdentified(_ busName: String, pid: UInt32) -> Session? {
        guard let known = identified.withLock({ $0[busName] }), known.pid == pid, known.status >= 0,
            let tracer = authority.inspector.tracer(status: known.status), tracer == 0 || known.session.identity.untrusted != nil
        else {
            return nil
        }
        return known.session
    }

    /// `session` as a caller of `busName`, with its registration looked up now.
    private func caller(busName: String, session: Session) throws(KeychainError) -> SecretServiceCaller {
        var groups: [String]?
        if session.identity.untrusted == nil, let registration = try session.keychain.registry().registration(for: session.identity) {
            groups = registration.groups
        }
        return SecretServiceCaller(busName: busName, session: session, registeredGroups: groups)
    }

    /// The policy for unregistered programs now: the environment's, else the keychain's settings (read again when
    /// the file changes, so `security set-keychain-settings --secret-service-unregistered` applies at once), else
    /// ``UnregisteredCallerPolicy/ask``. A value the settings file should not hold counts as `ask`, which never
    /// grants anything without the person.
    package func policy(for engine: KeychainEngine) -> UnregisteredCallerPolicy {
        if let environmentPolicy { return environmentPolicy }
        let path = KeychainSettings.path(engine.location)
        let stamp = FileStamp(path: path)
        if let known = settingsPolicy.withLock({ $0 }), known.stamp == stamp { return known.policy }
        var policy = UnregisteredCallerPolicy.ask
        do {
            if let value = try KeychainSettings.load(engine.location)?.secretServiceUnregistered {
                if let parsed = UnregisteredCallerPolicy(rawValue: value) {
                    policy = parsed
                } else {
                    logger.warning("keychain.settings has an unknown secret-service-unregistered value; asking", metadata: ["value": "\(value.prefix(32))"])
                }
            }
        } catch {
            logger.warning("keychain.settings could not be read; the Secret Service asks unregistered programs", metadata: ["reason": "\(error.message)"])
        }
        settingsPolicy.withLock { $0 = (stamp, policy) }
        return policy
    }

    /// Whether `caller` may use `collection` now, without asking anyone.
    package func isGranted(_ caller: SecretServiceCaller, _ collection: SecretCollection) throws(KeychainError) -> Bool {
        if let groups = caller.registeredGroups, groups.contains("*") || groups.contains(collection.group) { return true }
        guard collection.group.hasPrefix(SecretStore.groupPrefix) else { return false }
        switch policy(for: caller.session.engine) {
        case .allow: return true
        case .deny: return false
        case .ask:
            if onceGrants.withLock({ $0[caller.busName]?.contains(collection.id) ?? false }) { return true }
            guard let program = caller.session.identity.consentProgram else { return false }
            let remembered = try caller.session.engine.rememberedConsent(for: program, subject: collection.path)
            return remembered?.verdict == .always
        }
    }

    /// Why `caller` can never be asked about `collection`, or nil when asking can grant it.
    package func refusal(_ caller: SecretServiceCaller, _ collection: SecretCollection) -> String? {
        guard collection.group.hasPrefix(SecretStore.groupPrefix) else {
            return "Collection '\(collection.label)' belongs to access group \(collection.group); only programs registered for it reach it (`security app add --group \(collection.group) PROGRAM`)."
        }
        switch policy(for: caller.session.engine) {
        case .allow, .ask: return nil
        case .deny:
            return
                "Programs that are not registered may not use the Secret Service here (\(UnregisteredCallerPolicy.environmentVariable)=deny). Register \(caller.description) with `security app add`."
        }
    }

    /// Asks the person whether `caller` may use `collection` (blocking: it runs the prompter), and grants it
    /// when they allow it; when no prompt can be shown, waits for `security approve` instead
    /// (``waitForApproval(_:_:reason:)``). Throws `errSecAuthFailed` for a (remembered) refusal,
    /// `errSecUserCanceled`, `errSecInteractionNotAllowed` when nobody could be asked.
    package func ask(_ caller: SecretServiceCaller, _ collection: SecretCollection) throws(KeychainError) {
        if let refusal = refusal(caller, collection) {
            throw KeychainError(code: .authenticationFailed, message: refusal)
        }
        if try isGranted(caller, collection) { return }
        let engine = caller.session.engine
        let prompter = prompters.prompter(for: engine.location)
        let grant: ConsentGrant
        if let program = caller.session.identity.consentProgram {
            let request = ConsentRequest(
                program: program, programDescription: caller.description, subject: collection.path,
                subjectDescription: Self.describe([collection]))
            do {
                grant = try engine.applicationConsent(request, prompter: prompter, interactionAllowed: true)
            } catch  where error.code == .interactionNotAllowed {
                try waitForApproval(caller, [collection], reason: error.message)
                return
            }
        } else {
            // An untrusted process may run code that is not its program's: it is asked each time, with Allow and Deny
            // only (no "Always allow": nothing about it can be remembered), and never remembered.
            switch prompter.confirm(
                PromptText(
                    title: "Allow access to the keychain?",
                    description: "\(caller.description) wants to use \(Self.describe([collection])). "
                        + "It could not be identified reliably, so you are asked each time and nothing is remembered."))
            {
            case .answered(false): throw KeychainError(code: .authenticationFailed, message: "The person refused \(caller.description).")
            case .answered(true): grant = .once
            case .cancelled, .timedOut: throw KeychainError(code: .userCanceled, message: "The prompt was cancelled.")
            case .unavailable(let why):
                try waitForApproval(caller, [collection], reason: "no prompt can be shown: \(why)")
                return
            }
        }
        logger.info("secret service access granted", metadata: ["program": "\(caller.description)", "collection": "\(collection.id)", "grant": "\(grant)"])
        if grant == .once { grantOnce(caller, collection) }
    }

    /// How prompts and messages name `collections`.
    static func describe(_ collections: [SecretCollection]) -> String {
        let names = collections.map { "'\($0.label)'" }.joined(separator: ", ")
        return collections.count == 1 ? "the Secret Service collection \(names)" : "the Secret Service collections \(names)"
    }

    /// No prompt could ask the person (no display, no terminal, pinentry failed, or none installed; `reason` says
    /// which): with a passcode set, the request waits, for the prompt timeout, as a pending request that the person
    /// answers with `security approve` from any terminal of theirs (keychaind asks the passcode there, which also
    /// unlocks a locked keychain), and the answer is applied to `collections`; without a passcode nothing can prove
    /// the person, and the error says to set one. Throws `errSecInteractionNotAllowed` when nobody answered,
    /// `errSecAuthFailed` when the person refused (remembered, as at a prompt).
    package func waitForApproval(_ caller: SecretServiceCaller, _ collections: [SecretCollection], reason: String) throws(KeychainError) {
        let engine = caller.session.engine
        let action = "use \(Self.describe(collections))"
        guard engine.lockState != .noPasscode else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message: """
                    \(caller.description) needs your permission to \(action), and keychaind has no way to ask: \(reason)
                    Run it in a desktop session, where keychaind's pinentry can ask you; or set a passcode with `security set-keychain-password`, then such requests wait for `security approve` in a terminal of yours (only the passcode proves it is you: any program of yours can type into a terminal it opened). Registering the program (`security app add`) lets it in without asking.
                    """)
        }
        let seconds = ((try? KeychainSettings.load(engine.location)) ?? nil)?.promptTimeout ?? 60
        let timeout = Duration.seconds(min(max(seconds, 1), 600))
        let identity = caller.session.identity
        let answer = try approvals.wait(uid: identity.uid, program: caller.description, action: action, timeout: timeout) { id in
            logger.notice(
                "a request waits for approval: answer it with `security approve` from a terminal",
                metadata: ["id": "\(id)", "pid": "\(identity.pid)", "program": "\(caller.description)", "reason": "\(reason)"])
        }
        guard let answer else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message: """
                    \(caller.description) needs your permission to \(action), and keychaind has no way to ask (\(reason)); nobody approved it with `security approve` within \(seconds) seconds.
                    Try again, and while it waits run `security approve` in a terminal of yours to list and allow it.
                    """)
        }
        let program = identity.consentProgram
        let verdict: ConsentDecision.Verdict? =
            switch answer {
            case .once: nil
            case .always: program == nil ? nil : .always
            case .deny: program == nil ? nil : .deny
            }
        if let program, let verdict {
            for collection in collections {
                do {
                    try engine.rememberConsent(
                        ConsentDecision(
                            program: program, subject: collection.path, subjectDescription: Self.describe([collection]), verdict: verdict,
                            date: Date()))
                } catch {
                    logger.warning("an answer could not be remembered", metadata: ["reason": "\(error.message)"])
                }
            }
        }
        logger.notice("a waiting Secret Service request was answered", metadata: ["program": "\(caller.description)", "answer": "\(answer.rawValue)"])
        if answer == .deny {
            throw KeychainError(
                code: .authenticationFailed,
                message: program == nil
                    ? "The person refused \(caller.description) with `security approve --deny`."
                    : "The person refused \(caller.description) with `security approve --deny`, and the refusal is remembered.\nTo be asked again, revoke it with `security app revoke PROGRAM` (`security app consents` lists them)."
            )
        }
        if verdict == nil { for collection in collections { grantOnce(caller, collection) } }
    }

    /// Lets `caller`'s bus connection use `collection` for as long as it lasts (an answer of `once`, or a
    /// collection it created).
    package func grantOnce(_ caller: SecretServiceCaller, _ collection: SecretCollection) {
        onceGrants.withLock { grants in
            if grants.count >= Self.maximumGrantHolders, grants[caller.busName] == nil { grants.removeAll() }
            grants[caller.busName, default: []].insert(collection.id)
        }
    }

    /// Takes back the `once` permissions of `caller`'s connection for the collections `ids`.
    package func revokeOnce(_ caller: SecretServiceCaller, _ ids: Set<String>) {
        onceGrants.withLock { grants in
            grants[caller.busName]?.subtract(ids)
            if grants[caller.busName]?.isEmpty == true { grants[caller.busName] = nil }
        }
    }

    /// Whether a prompt could be shown at all for `caller`'s keychain (a pinentry program is there to run).
    package func canPrompt(_ caller: SecretServiceCaller) -> Bool {
        if case .unavailable = PinentryChoice.resolve(
            settings: (try? KeychainSettings.load(caller.session.engine.location)) ?? nil,
            environment: prompters.environment)
        {
            return false
        }
        return true
    }

    /// Forgets what was granted to a bus connection that is gone.
    package func forget(busName: String) {
        _ = onceGrants.withLock { $0.removeValue(forKey: busName) }
        _ = lastRefusals.withLock { $0.removeValue(forKey: busName) }
        _ = identified.withLock { $0.removeValue(forKey: busName) }
    }
}
