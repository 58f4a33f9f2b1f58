import Foundation
import KeychainCore
import KeychainProtocol
import KeychainPrompt
import Logging

/// Carries out one typed request for one session against its keychain's engine (its user's, ``Session/keychain``): the daemon's policy decides the access
/// groups (item calls) or whether the caller may manage the keychain (everything else), then the engine acts.
/// Blocking (SQLite, the group commit, passcode stretching); keychaind runs it on a worker thread, except the
/// quick reads, which it answers on the connection's event loop.
package struct RequestDispatcher: Sendable {
    package let authority: Authority
    package let logger: Logger
    /// What asks the person at this machine (pinentry, per keychain settings), for proofs of presence.
    package let prompters: PrompterCache
    /// The fingerprint reader (fprintd), when there is one.
    package let biometrics: any BiometricVerifier
    /// The requests waiting for the person's approval from a terminal.
    package let approvals: PendingApprovals

    package init(
        authority: Authority, logger: Logger, prompters: PrompterCache = PrompterCache(),
        biometrics: any BiometricVerifier = NoBiometrics(), approvals: PendingApprovals = PendingApprovals()
    ) {
        self.authority = authority
        self.logger = logger
        self.prompters = prompters
        self.biometrics = biometrics
        self.approvals = approvals
    }

    /// The response to `request`: its result, or the failure (code, `OSStatus` and message) the client reports.
    package func respond(to request: KeychainRequest, session: Session) -> KeychainResponse {
        let engine = session.engine
        do {
            try engine.followKeybagChanges()
            // The idle time and a suspend are checked before the request is served; the request is a use.
            engine.applyLockSettings()
            // A locked login keychain may be unlocked with a prompt and the request served again (LockedKeychainPrompt.swift).
            return try unlockingWhenLocked(request, session: session) { () throws(KeychainError) in
                if case .onKeychains(let names, let inner) = request { return try perform(inner, session: session, on: names) }
                return try perform(request, session: session, on: nil)
            }
        } catch {
            logger.debug("request failed", metadata: ["request": "\(request.name)", "status": "\(error.status.rawValue)"])
            return .failure(error)
        }
    }

    /// Carries out `request` for the keychains `names` (an ``KeychainRequest/onKeychains(_:_:)`` request's), else
    /// for the user's search list (item calls) or login keychain (the rest).
    func perform(_ request: KeychainRequest, session: Session, on names: [KeychainName]?) throws(KeychainError) -> KeychainResponse {
        try validate(request)
        let engine = session.engine
        /// An item query for the named keychains.
        func routed(_ query: ItemQuery) -> ItemQuery {
            var routed = query
            if let names { routed.keychains = names }
            return routed
        }
        /// The one keychain lock, unlock, status, passcode, settings, verification and backups act on.
        func target() throws(KeychainError) -> KeychainEngine {
            guard let names else { return engine }
            guard names.count == 1, let only = names.first else {
                throw KeychainError(code: .invalidParameter, message: "A \(request.name) request acts on one keychain; name one.")
            }
            let chosen = try engine.keychain(named: only)
            if chosen !== engine {
                try chosen.followKeybagChanges()
                chosen.applyLockSettings()
            }
            return chosen
        }
        /// Refuses a request that only the login keychain answers when other keychains are named.
        func loginOnly() throws(KeychainError) {
            guard let names, names != [.login] else { return }
            throw KeychainError(code: .invalidParameter, message: "A \(request.name) request applies to the login keychain only; send it without naming a keychain.")
        }
        let readOnlyTarget = names.flatMap { $0.count == 1 ? $0.first : nil }
        switch request {
        case .add(let query, let claim):
            let policy = try itemPolicy(for: session, claim: claim)
            if session.isAdminTool, let group = query.accessGroup ?? policy.groups.first, group != session.identity.privateGroup {
                try approve(.add(to: group), session: session, engine: engine)
            }
            return .item(try engine.addRouted(routed(query), caller: policy).leavingEngine().trimmed(to: query.returns))
        case .find(let query, let claim):
            let found = try engine.findRouted(routed(query), caller: itemPolicy(for: session, claim: claim))
            return .items(try approvedReads(found, session: session, engine: engine).map { $0.trimmed(to: query.returns) })
        case .update(let query, let changes, let claim):
            let policy = try itemPolicy(for: session, claim: claim)
            try approveChanges(routed(query), session: session, engine: engine, policy: policy)
            try engine.updateRouted(routed(query), attributes: changes.attributes, sync: changes.sync, data: changes.data, caller: policy)
            return .done
        case .delete(let query, let claim):
            let policy = try itemPolicy(for: session, claim: claim)
            try approveChanges(routed(query), session: session, engine: engine, policy: policy)
            return .count(try engine.deleteRouted(routed(query), caller: policy))
        case .tokenKey(let tokenRequest, let claim, let authentication):
            let policy = try itemPolicy(for: session, claim: claim)
            try approveTokenKey(tokenRequest, keychains: names ?? tokenRequest.keychains, session: session, engine: engine, policy: policy)
            return .tokenKey(
                try engine.tokenKeyRouted(
                    tokenRequest, keychains: names ?? tokenRequest.keychains,
                    caller: policy, authentication: authentication))
        case .status:
            return .status(status(session, engine: try target()))
        case .lock:
            try target().lock()
            logger.info("locked on request", metadata: ["pid": "\(session.identity.pid)"])
            return .done
        case .unlock(let passcode):
            let chosen = try target()
            try chosen.unlock(passcode: passcode)
            logger.info("unlocked", metadata: ["pid": "\(session.identity.pid)"])
            return .done
        case .changePasscode(let old, let new):
            try authority.requireAdmin(session, for: "change the passcode")
            try KeychainEngine.refuseReadOnly(readOnlyTarget, "set a passcode on")
            let chosen = try target()
            try chosen.changePasscode(from: old, to: new)
            return .done
        case .backup(let password, let authentication):
            try authority.requireAdmin(session, for: "back up the keychain")
            try approve(Approval(subject: "backup-export", action: "export a backup of every item in the keychain"), session: session, engine: engine)
            let (data, summary) = try target().backup(
                password: password, authentication: authentication,
                caller: authority.policy(for: session, claim: nil))
            return .backup(data, summary)
        case .restore(let data, let password):
            try authority.requireAdmin(session, for: "restore a backup")
            try KeychainEngine.refuseReadOnly(readOnlyTarget, "restore a backup into")
            try approve(Approval(subject: "backup-restore", action: "restore a backup into the keychain, replacing older items"), session: session, engine: engine)
            return .restored(try target().restore(data, password: password))
        case .settings:
            return .settings(try KeychainSettings.load(target().location))
        case .setSettings(let settings):
            try authority.requireAdmin(session, for: "change the keychain's settings")
            try KeychainEngine.refuseReadOnly(readOnlyTarget, "change the settings of")
            let chosen = try target()
            let current = (try? KeychainSettings.load(chosen.location)) ?? nil
            try settings.validate(replacing: current)
            if settings != current ?? KeychainSettings() {
                try approve(.settings(settings, replacing: current), session: session, engine: engine)
            }
            try settings.save(chosen.location)
            chosen.lockSettingsChanged()
            return .done
        case .registerProgram(let entry):
            try loginOnly()
            try authority.requireAdmin(session, for: "register programs")
            guard !entry.accessGroups.contains(where: \.isEmpty) else {
                throw KeychainError(code: .invalidParameter, message: "An access group name is empty. Register the program with non-empty group names.")
            }
            try approve(.register(entry), session: session, engine: engine)
            try engine.updateAppRegistry { $0.register(entry) }
            return .done
        case .listPrograms:
            try loginOnly()
            try authority.requireAdmin(session, for: "list registered programs")
            return .programs(try engine.appRegistry().entries)
        case .unregisterProgram(let name):
            try loginOnly()
            try authority.requireAdmin(session, for: "unregister programs")
            return .count(try engine.updateAppRegistry { $0.remove(named: name) })
        case .verify:
            try authority.requireAdmin(session, for: "verify the keychain")
            return .verification(try target().verify())
        case .authenticate(let requirement, let options):
            try loginOnly()
            // The prompt names the program as identified here and the item as stored, never as the client says.
            let caller = try authority.policy(for: session, claim: nil)
            let stored = try engine.storedRequirement(requirement, caller: caller)
            try engine.authenticate(
                stored, options: options, caller: caller, prompter: prompters.prompter(for: engine.location),
                biometrics: biometrics)
            return .done
        case .invalidateContext(let context):
            try loginOnly()
            engine.invalidate(context: context, caller: try authority.policy(for: session, claim: nil))
            return .done
        case .resetAuthorizations:
            try loginOnly()
            try authority.requireAdmin(session, for: "reset granted authorizations")
            return .count(engine.resetAuthorizations())
        case .listConsents:
            try loginOnly()
            try authority.requireAdmin(session, for: "list the programs' remembered permissions")
            return .consents(try engine.consents())
        case .revokeConsents(let name, let subject):
            try loginOnly()
            try authority.requireAdmin(session, for: "revoke the programs' remembered permissions")
            guard !name.isEmpty, subject?.isEmpty != true else {
                throw KeychainError(
                    code: .invalidParameter, message: "The program's name or the subject is empty. Name the program by its path, Flatpak app ID or snap name, as `security app consents` shows it.")
            }
            return .count(try engine.revokeConsents(named: name, subject: subject))
        case .pendingApprovals:
            try loginOnly()
            try authority.requireAdmin(session, for: "list the requests waiting for approval")
            return .pendingApprovals(approvals.list(uid: session.identity.uid))
        case .answerPending(let id, let answer):
            try loginOnly()
            try authority.requireAdmin(session, for: "answer a request waiting for approval")
            try answerPending(id: id, answer: answer, session: session, engine: engine)
            return .done
        case .importSecretServiceItems(let batch):
            try loginOnly()
            try authority.requireAdmin(session, for: "import Secret Service items")
            try approve(Approval(subject: "import", action: "import items from another keychain"), session: session, engine: engine)
            let summary = try SecretStore(engine: engine).importItems(batch)
            logger.info(
                "imported Secret Service items",
                metadata: [
                    "added": "\(summary.added)", "skipped": "\(summary.skipped)", "failed": "\(summary.failed)",
                ])
            return .importSummary(summary)
        case .sync(let command):
            try loginOnly()
            // The account and its devices are the user's to manage, like the passcode and backups; where sync
            // stands (no item data, no key) any caller of the keychain may read, as it may read the lock state.
            if command != .status { try authority.requireAdmin(session, for: command.action) }
            if command.needsApproval { try approve(Approval(subject: "sync-account", action: command.action), session: session, engine: engine) }
            let engines = try SyncEngineRegistry.engines()
            return .sync(try waitBlocking { () async throws(KeychainError) -> SyncReply in try await engines.perform(command, engine: engine) })
        case .onKeychains:
            throw KeychainError(code: .invalidParameter, message: "A request for some keychains cannot hold another.")
        case .listKeychains:
            try loginOnly()
            return .keychains(try engine.keychainListing())
        case .createKeychain(let name, let passcode):
            try loginOnly()
            try authority.requireAdmin(session, for: "create a keychain")
            try engine.createKeychain(name, passcode: passcode)
            return .done
        case .deleteKeychain(let name):
            try loginOnly()
            try authority.requireAdmin(session, for: "delete a keychain")
            try approve(Approval(subject: "delete-keychain \(name)", action: "delete the keychain \(name) and every item in it"), session: session, engine: engine)
            try engine.deleteKeychain(name)
            return .done
        case .setSearchList(let list, let defaultKeychain):
            try loginOnly()
            try authority.requireAdmin(session, for: "change the keychain search list")
            try engine.setSearchList(list, defaultKeychain: defaultKeychain)
            return .done
        }
    }

    /// The checks the client's parser made, made again: a client is not trusted to have parsed what it sends.
    func validate(_ request: KeychainRequest) throws(KeychainError) {
        switch request {
        case .add(let query, _), .find(let query, _), .delete(let query, _), .tokenKey(.create(let query), _, _):
            try query.validate()
        case .update(let query, let changes, _):
            try query.validate()
            try changes.validate(for: query.itemClass)
        case .importSecretServiceItems(let batch):
            try batch.validate()
        default:
            break
        }
    }

    /// What `security daemon status` shows: the daemon, the keychain, and how it sees the caller.
    func status(_ session: Session, engine: KeychainEngine) -> ServiceStatus {
        let groups: [String]? = session.isAdminTool ? ["*"] : try? authority.registeredGroups(session)
        let statistics = engine.commitStatistics
        return ServiceStatus(
            home: engine.location.home, lockState: engine.lockState,
            daemon: .init(
                pid: getpid(), caller: session.identity.description, isAdminTool: session.isAdminTool,
                accessGroups: groups, transactions: statistics.transactions, writes: statistics.writes,
                writerNanoseconds: Int(statistics.serialTime.nanoseconds)))
    }
}

extension SyncCommand {
    /// Whether the person must approve it: joining, creating or changing the account sends the keychain's items to
    /// another machine (listing, status and syncing now do not).
    var needsApproval: Bool {
        switch self {
        case .createAccount, .join, .approve, .removeDevice, .invite, .reject: true
        case .devices, .status, .now, .pending: false
        }
    }

    /// What the command does, as the admin-only refusal names it ("Only the security tool may … through keychaind").
    var action: String {
        switch self {
        case .createAccount: "create a sync account"
        case .join: "join a sync account"
        case .approve: "approve a device for sync"
        case .devices: "list the sync account's devices"
        case .removeDevice: "remove a device from sync"
        case .status: "read the sync status"
        case .now: "sync now"
        case .invite: "invite a device to the sync account"
        case .pending: "list the devices waiting to join the sync account"
        case .reject: "reject a device waiting to join the sync account"
        }
    }
}
