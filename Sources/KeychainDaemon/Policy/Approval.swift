import Foundation
import KeychainCore

/// Something only the person may allow a program to do through keychaind: read or change another program's item,
/// register a program, change a setting that steers the trusted path, export or restore a backup.
///
/// The person is asked by keychaind's own pinentry (on the display, else on the requesting program's terminal),
/// never by the requesting program; when a passcode is set, it is asked in that same trusted prompt. "Always" and
/// "Deny" are remembered for the program as the kernel identified it (its path and SHA-256, Flatpak app ID or snap
/// name) and this ``subject`` (``ConsentDecision``), listed with `security app consents` and revoked with `security app revoke`.
package struct Approval: Sendable, Hashable {
    /// What the decision is remembered under: `read ITEM`, `change ITEM`, `add GROUP`, `register-program`,
    /// `settings`, `backup-export`, … (at most ``ConsentRequest/maximumLength`` bytes).
    package var subject: String
    /// What the program wants to do, as the prompt continues "PROGRAM wants to …".
    package var action: String

    package init(subject: String, action: String) {
        self.subject = subject
        self.action = action
    }

    /// Reading the secret of `item`, another program's.
    static func read(_ item: FoundItem) -> Approval {
        Approval(subject: "read \(item.subjectName)", action: "use your confidential information stored in \(item.promptName)")
    }

    /// Changing or deleting `item`, another program's.
    static func change(_ item: FoundItem) -> Approval {
        Approval(subject: "change \(item.subjectName)", action: "change or delete \(item.promptName)")
    }

    /// Using `key`, another program's key kept by keychaind, to sign, decrypt or agree.
    static func use(_ key: FoundItem) -> Approval {
        Approval(subject: "use \(key.subjectName)", action: "use the key \(key.promptName)")
    }

    /// Registering `entry`: remembered for exactly that program and those groups (an *always* for one registration
    /// allows no other).
    static func register(_ entry: AppRegistration) -> Approval {
        let program =
            switch entry.program {
            case let .executable(path, sha256): "\(path) (sha256 \(sha256.prefix(12)))"
            case let .flatpak(id): "flatpak \(id)"
            case let .snap(name): "snap \(name)"
            }
        let groups = entry.accessGroups.joined(separator: ", ")
        return Approval(subject: "register \(program): \(groups)", action: "register \(program) for the access groups \(groups)")
    }

    /// Changing the settings from `current` to `new`: remembered for exactly these new values.
    static func settings(_ new: KeychainSettings, replacing current: KeychainSettings?) -> Approval {
        let old = current ?? KeychainSettings()
        var changes: [String] = []
        if new.pinentryProgram != old.pinentryProgram { changes.append("pinentry program \(new.pinentryProgram ?? "(default)")") }
        if new.secretServiceUnregistered != old.secretServiceUnregistered {
            changes.append("Secret Service policy for unregistered programs \(new.secretServiceUnregistered ?? "ask")")
        }
        if new.idleTimeout != old.idleTimeout { changes.append("idle lock \(new.idleTimeout.map { "\($0) s" } ?? "never")") }
        if new.lockOnSleep != old.lockOnSleep { changes.append("lock on sleep \(new.lockOnSleep ? "on" : "off")") }
        if new.syncNewItems != old.syncNewItems { changes.append("new items sync \(new.syncNewItems ? "on" : "off")") }
        if new.promptTimeout != old.promptTimeout { changes.append("prompt timeout \(new.promptTimeout.map { "\($0) s" } ?? "default")") }
        let list = changes.joined(separator: ", ")
        return Approval(subject: "settings: \(list)", action: "change the keychain's settings: \(list)")
    }

    /// Adding an item to `group`, another program's access group.
    static func add(to group: String) -> Approval {
        Approval(subject: "add \(group)", action: "add an item to the access group \(group)")
    }
}

extension FoundItem {
    /// The item's stable name in remembered decisions: its class and UUID in hex.
    var subjectName: String {
        itemClass.rawValue + ":" + uuid.map { String(format: "%02x", $0) }.joined()
    }

    /// The item as the prompt names it: its label (or service, server, account), and whose it is.
    var promptName: String {
        let label = KeychainEngine.promptName(attributes)
        let group = attributes["agrp"]?.stringValue.map { ", an item of \($0)" } ?? ""
        return "\"\(label)\" in your keychain\(group)"
    }
}

extension RequestDispatcher {
    /// Asks the person whether the session's program may do `approval`, unless an answer is remembered; returns when
    /// it may, throws otherwise.
    ///
    /// | remembered / answer | result |
    /// |---|---|
    /// | `always` remembered | allowed, no prompt |
    /// | `deny` remembered | `errSecAuthFailed`, no prompt |
    /// | Allow once (then the passcode, when one is set) | allowed for the rest of this connection (one command); nothing remembered |
    /// | Always allow (then the passcode, when one is set) | allowed; `always` remembered |
    /// | Deny | `errSecAuthFailed`, remembered |
    /// | a wrong passcode | `errSecAuthFailed`, nothing remembered (counted by the passcode throttle) |
    /// | cancelled, timed out | `errSecUserCanceled`, nothing remembered |
    /// | no prompt can be shown, a passcode set | waits for `security approve` from a terminal (the prompt timeout) |
    /// | no prompt can be shown, no passcode | `errSecInteractionNotAllowed` saying how to approve |
    /// | an untrusted process | `errSecMissingEntitlement`: nobody is asked |
    func approve(_ approval: Approval, session: Session, engine: KeychainEngine) throws(KeychainError) {
        let identity = session.identity
        guard let program = identity.consentProgram else {
            throw KeychainError(
                code: .missingEntitlement,
                message:
                    "\(identity) may not \(approval.action): keychaind cannot tell which program it is, so nobody can approve it.\nRun the program as itself (no LD_PRELOAD, no tracer, no namespace of its own)."
            )
        }
        // Nothing can be decided or remembered while the keychain is locked: unlocking comes first.
        guard engine.lockState == .noPasscode || engine.lockState == .unlocked else {
            throw KeychainError(
                code: .interactionNotAllowed, message: "\(identity) needs your approval to \(approval.action), and the keychain is locked.\nUnlock it first with `security unlock-keychain`.")
        }
        if let remembered = try engine.rememberedConsent(for: program, subject: approval.subject) {
            switch remembered.verdict {
            case .always: return
            case .deny: throw Self.refused(identity, approval)
            }
        }
        // Allowed "only this time" earlier on this connection: the same command goes on.
        if session.approvedOnce.withLock({ $0.contains(approval.subject) }) { return }
        let prompter = prompters.prompter(for: engine.location, terminal: PeerTerminal.path(of: identity.pid))
        let text = PromptText(
            title: "Allow access to the keychain?",
            description: """
                \(identity) wants to \(approval.action).

                Allow it once, always (remembered for this program until revoked with `security app revoke`), or deny \
                (remembered as well)?
                """)
        let answer: ConsentAnswer
        switch prompter.askConsent(text) {
        case .answered(let given):
            answer = given
            if answer != .deny, engine.lockState != .noPasscode {
                let passcode = PromptText(
                    title: "Keychain passcode", description: "To allow \(identity) to \(approval.action), enter the keychain's passcode.",
                    prompt: "Passcode:")
                switch prompter.askSecret(passcode) {
                case .answered(let secret): try engine.verifyPasscode(String(decoding: secret, as: UTF8.self))
                case .cancelled, .timedOut:
                    throw KeychainError(code: .userCanceled, message: "The passcode to allow \(identity) to \(approval.action) was not given. Nothing was remembered.")
                case .unavailable(let reason):
                    throw unapproved(approval, identity: identity, reason: reason)
                }
            }
        case .cancelled, .timedOut:
            throw KeychainError(
                code: .userCanceled, message: "Nobody allowed \(identity) to \(approval.action): the prompt was cancelled or not answered in time. Nothing was remembered; try again to be asked again."
            )
        case .unavailable(let reason):
            answer = try waitForTerminalApproval(approval, identity: identity, engine: engine, reason: reason)
        }
        let verdict: ConsentDecision.Verdict? =
            switch answer {
            case .once: nil
            case .always: .always
            case .deny: .deny
            }
        if let verdict {
            do {
                try engine.rememberConsent(
                    ConsentDecision(
                        program: program, subject: approval.subject, subjectDescription: approval.action,
                        verdict: verdict, date: Date()))
            } catch {
                logger.warning("an answer could not be remembered", metadata: ["reason": "\(error.message)"])
            }
        }
        logger.notice("approval answered", metadata: ["pid": "\(identity.pid)", "subject": "\(approval.subject)", "answer": "\(answer.rawValue)"])
        if answer == .deny { throw Self.refused(identity, approval) }
        if answer == .once { session.approvedOnce.withLock { _ = $0.insert(approval.subject) } }
    }

    /// No prompt could ask where the request came from: with a passcode set, the request waits (for the prompt
    /// timeout) for the person to answer it with `security approve` from a terminal of theirs, where keychaind asks
    /// for the passcode; without one, nothing could prove the person, so it is refused at once.
    func waitForTerminalApproval(_ approval: Approval, identity: PeerIdentity, engine: KeychainEngine, reason: String) throws(KeychainError) -> ConsentAnswer {
        guard engine.lockState != .noPasscode else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message: """
                    \(identity) needs your approval to \(approval.action), and keychaind has no way to ask: \(reason)
                    Run the command from a terminal or a desktop session, where keychaind's pinentry can ask you. (Approving \
                    it later from another terminal with `security approve` needs a passcode, which is not set: set one with \
                    `security set-keychain-password`. Any program of yours can type into a terminal it opened, so only the \
                    passcode proves it is you.)
                    """)
        }
        let seconds = ((try? KeychainSettings.load(engine.location)) ?? nil)?.promptTimeout ?? 60
        let timeout = Duration.seconds(min(max(seconds, 1), 600))
        let answer = try approvals.wait(uid: identity.uid, program: identity.description, action: approval.action, timeout: timeout) { id in
            logger.notice(
                "a request waits for approval: answer it with `security approve` from a terminal",
                metadata: ["id": "\(id)", "pid": "\(identity.pid)", "subject": "\(approval.subject)"])
        }
        guard let answer else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message: """
                    \(identity) needs your approval to \(approval.action), and keychaind has no way to ask here (\(reason)); \
                    nobody approved it from a terminal within \(seconds) seconds.
                    Run the command from a terminal or a desktop session, or, while it waits, run `security approve` in a terminal of yours to list and approve it.
                    """)
        }
        return answer
    }

    /// `security approve ID`: the person answers a waiting request after giving the passcode to keychaind's own
    /// prompt on the approving tool's terminal (never on its standard input or command line); a locked keychain is
    /// unlocked with it.
    func answerPending(id: UInt64, answer: ConsentAnswer, session: Session, engine: KeychainEngine) throws(KeychainError) {
        let uid = session.identity.uid
        guard engine.lockState != .noPasscode else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message:
                    "Requests can be approved from a terminal only with the keychain's passcode, and none is set: any program of yours can type into a terminal it opened, so only the passcode proves it is you.\nSet one with `security set-keychain-password`, or run the waiting command from a desktop session."
            )
        }
        guard let pending = approvals.pending(id: id, uid: uid) else {
            throw KeychainError(code: .itemNotFound, message: "No request \(id) waits for approval. `security approve` lists the ones that do.")
        }
        guard let terminal = PeerTerminal.path(of: session.identity.pid) else {
            throw KeychainError(code: .interactionNotAllowed, message: "`security approve` must run in a terminal: keychaind asks for the keychain's passcode there, never on standard input.")
        }
        let prompter = prompters.prompter(for: engine.location, terminal: terminal)
        let verb = answer == .deny ? "refuse" : "allow"
        let text = PromptText(
            title: "Keychain passcode", description: "To \(verb) request \(id): \(pending.program) wants to \(pending.action), enter the keychain's passcode.",
            prompt: "Passcode:")
        switch prompter.askSecret(text) {
        case .answered(let secret):
            // A request that waits while the keychain is locked (a Secret Service client's Unlock, with no prompt
            // where it runs) needs it open: the passcode just given opens it.
            let passcode = String(decoding: secret, as: UTF8.self)
            if engine.lockState == .locked || engine.lockState == .beforeFirstUnlock {
                try engine.unlock(passcode: passcode)
            } else {
                try engine.verifyPasscode(passcode)
            }
        case .cancelled, .timedOut:
            throw KeychainError(code: .userCanceled, message: "The passcode was not given: request \(id) still waits.")
        case .unavailable(let reason):
            throw KeychainError(code: .interactionNotAllowed, message: "keychaind cannot ask for the passcode on this terminal: \(reason)")
        }
        guard approvals.answer(id: id, uid: uid, answer) else {
            throw KeychainError(code: .itemNotFound, message: "Request \(id) stopped waiting before it was answered (it timed out, or its program went away).")
        }
        logger.notice("a waiting request was answered from a terminal", metadata: ["id": "\(id)", "answer": "\(answer.rawValue)"])
    }

    /// The refusal of `approval` (`errSecAuthFailed`), the same whether it was remembered before or just now.
    static func refused(_ identity: PeerIdentity, _ approval: Approval) -> KeychainError {
        KeychainError(
            code: .authenticationFailed,
            message:
                "The person refused to let \(identity) \(approval.action), and the refusal is remembered.\nTo be asked again, revoke it with `security app revoke PROGRAM` (`security app consents` lists them)."
        )
    }

    /// The error when no prompt can ask: what would have been asked, why nobody could be, and how to approve it.
    func unapproved(_ approval: Approval, identity: PeerIdentity, reason: String) -> KeychainError {
        KeychainError(
            code: .interactionNotAllowed,
            message: """
                \(identity) needs your approval to \(approval.action), and keychaind has no way to ask: \(reason)
                Run the command from a terminal or a desktop session, where keychaind's pinentry can ask you.
                """)
    }

    /// The items of `found` that are not the admin tool's own (its private group's), whose secrets it may read only
    /// with the person's approval: each is approved in turn; a refused one is left out, and when every foreign one
    /// was refused the refusal is thrown. A cancelled prompt or no way to ask ends the whole call.
    func approvedReads(_ found: [FoundItem], session: Session, engine: KeychainEngine) throws(KeychainError) -> [FoundItem] {
        guard session.isAdminTool else { return found }
        let own = session.identity.privateGroup
        var kept: [FoundItem] = []
        var refusal: KeychainError?
        for item in found {
            let foreign = item.attributes["agrp"]?.stringValue != own
            let secret = item.data != nil || item.identityKey?.data != nil
            guard foreign, secret else { kept.append(item); continue }
            do {
                try approve(.read(item), session: session, engine: engine)
                kept.append(item)
            } catch  where error.code == .authenticationFailed {
                refusal = error
            }
        }
        if kept.isEmpty, let refusal { throw refusal }
        return kept
    }

    /// Before the admin tool changes or deletes what `query` matches: every matching item of another program must be
    /// approved (all of them, or nothing changes).
    func approveChanges(_ query: ItemQuery, session: Session, engine: KeychainEngine, policy: AccessPolicy) throws(KeychainError) {
        guard session.isAdminTool else { return }
        var all = query
        all.limit = .all
        all.returns = ReturnOptions(attributes: true)
        let matches: [FoundItem]
        do {
            matches = try engine.findRouted(all, caller: policy)
        } catch  where error.code == .itemNotFound {
            return
        }
        let own = session.identity.privateGroup
        for item in matches where item.attributes["agrp"]?.stringValue != own {
            try approve(.change(item), session: session, engine: engine)
        }
    }

    /// Before the admin tool makes a key in another program's group, or uses one of another program's keys.
    func approveTokenKey(
        _ request: TokenKeyRequest, keychains: [KeychainName]?, session: Session, engine: KeychainEngine,
        policy: AccessPolicy
    ) throws(KeychainError) {
        guard session.isAdminTool else { return }
        let own = session.identity.privateGroup
        let reference: PersistentReference
        switch request {
        case .create(let query):
            if let group = query.accessGroup ?? policy.groups.first, group != own {
                try approve(.add(to: group), session: session, engine: engine)
            }
            return
        case .sign(let ref, _, _), .decrypt(let ref, _, _), .exchange(let ref, _, _, _, _):
            reference = ref
        }
        var query = ItemQuery(itemClass: reference.itemClass)
        query.persistentRef = reference
        query.returns = ReturnOptions(attributes: true)
        query.keychains = keychains
        let found: [FoundItem]
        do {
            found = try engine.findRouted(query, caller: policy)
        } catch  where error.code == .itemNotFound {
            return
        }
        for key in found where key.attributes["agrp"]?.stringValue != own {
            try approve(.use(key), session: session, engine: engine)
        }
    }
}
