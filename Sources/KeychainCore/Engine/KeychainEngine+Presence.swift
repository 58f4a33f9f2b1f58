import Foundation
import Crypto

/// User presence: where an item's access control is enforced (here, where the keys are), and how a proof is
/// obtained (``authenticate(_:options:caller:prompter:biometrics:)``), following Apple's shape: an operation on a
/// protected item without a proof fails with `errSecAuthNeeded` and what it needs; the client asks for the proof
/// (a separate request, so that no prompt is ever shown inside a read or a write transaction) and retries.
extension KeychainEngine {
    /// What one request may use of the proofs this engine holds.
    struct PresenceGate {
        var ledger: PresenceLedger
        /// The program as identified (keychaind: by the kernel), which proofs are bound to.
        var program: String
        var options: AuthenticationOptions
        /// The engine's clock, read only when a proof is looked up (a find of unprotected items never reads it).
        var clock: @Sendable () -> Date

        /// The request's context: its own, or one made up for it (whose proofs nobody else can name).
        var context: AuthenticationContextID? { options.context }

        /// Whether `constraint`'s factors are proven for this request.
        func factorsProven(_ constraint: PresenceConstraint) -> Bool {
            guard !constraint.factors.isEmpty else { return true }
            guard let context else { return false }
            return constraint.isSatisfied(by: ledger.factors(program: program, context: context, now: clock()))
        }

        /// The application password for `item` given with the request or proven under its context.
        func applicationPassword(for item: Data?) -> Data? {
            if let given = options.applicationPassword { return given }
            guard let context else { return nil }
            let now = clock()
            return ledger.applicationPassword(program: program, context: context, for: item, now: now)
                ?? (item == nil ? nil : ledger.applicationPassword(program: program, context: context, for: nil, now: now))
        }
    }

    /// The gate for a request by `caller` with `options`.
    func presenceGate(_ options: AuthenticationOptions, caller: AccessPolicy) -> PresenceGate {
        PresenceGate(ledger: presence, program: caller.program, options: options, clock: now)
    }

    /// The access control stored with an item, if any.
    package static func accessControl(_ attributes: [String: AttributeValue]) -> AccessControl? {
        guard case .data(let bytes)? = attributes["accc"] else { return nil }
        return AccessControl(encoded: bytes)
    }

    /// What to call an item in a prompt: its label, else its service or server, else its account, else its class.
    package static func promptName(_ attributes: [String: AttributeValue]) -> String {
        for code in ["labl", "svce", "srvr", "acct"] {
            if let text = attributes[code]?.stringValue, !text.isEmpty { return String(text.prefix(200)) }
        }
        return "a keychain item"
    }

    /// The requirement an item puts on `operation`, or nil when the operation is open to it.
    static func requirement(_ item: FoundItem, _ operation: ProtectedOperation) -> PresenceRequirement? {
        guard let control = accessControl(item.attributes), !control.constraint(for: operation).isOpen else { return nil }
        return PresenceRequirement(
            item: item.persistentRef, itemDescription: promptName(item.attributes), operation: operation,
            accessControl: control)
    }

    /// The error that asks the client for proofs.
    static func presenceNeeded(_ requirements: [PresenceRequirement]) -> KeychainError {
        var error = KeychainError(code: .authenticationNeeded, message: "The item needs the user's presence: authenticate and try again.")
        error.presenceNeeded = requirements
        return error
    }

    // MARK: Obtaining a proof

    /// Proves what `requirement` needs for the program `caller` names, under `options.context`: asks the person
    /// through `prompter` (naming `caller.programName`, never what the client says about itself) and, for a
    /// passcode, checks it against the keybag with the wrong-passcode throttle. The proof is kept for the context's
    /// reuse duration (at least long enough for the request's retry, at most 300 s) and dropped by any lock.
    ///
    /// Fails with `errSecInteractionNotAllowed` when the options forbid a prompt, `errSecUserCanceled` when the
    /// person cancels or the prompt times out, and `errSecAuthFailed` for a wrong passcode or a factor this machine
    /// cannot provide (a fingerprint without an enrolled reader, a watch).
    package func authenticate(
        _ requirement: PresenceRequirement, options: AuthenticationOptions, caller: AccessPolicy,
        prompter: any PresencePrompter, biometrics: any BiometricVerifier
    ) throws(KeychainError) {
        guard options.interactionAllowed else {
            throw KeychainError(
                code: .interactionNotAllowed, message: "The item needs the user's presence, and the request does not allow a prompt (kSecUseAuthenticationUIFail or interactionNotAllowed).")
        }
        guard let context = options.context else {
            throw .param("Authenticating needs an authentication context.")
        }
        let constraint = requirement.constraint
        let window = max(Self.retryWindow, min(options.reuseDuration, AuthenticationOptions.maximumReuseDuration))
        let expires = now().addingTimeInterval(window)
        let reason = options.reason.map { "\n\n" + String($0.prefix(500)) } ?? ""
        let what = requirement.operation == .sign ? "use the key" : "use"
        let description = "\(caller.programName) wants to \(what) “\(requirement.itemDescription)” in your keychain.\(reason)"

        let proven = presence.factors(program: caller.program, context: context, now: now())
        if !constraint.isSatisfied(by: proven) {
            var newlyProven: Set<PresenceFactor> = []
            let chosen = constraint.required >= constraint.factors.count ? constraint.factors : [preferredFactor(constraint.factors, biometrics)]
            for factor in chosen where !constraint.isSatisfied(by: proven.union(newlyProven)) {
                try prove(factor, description: description, prompter: prompter, biometrics: biometrics)
                newlyProven.insert(factor)
            }
            presence.record(program: caller.program, context: context, factors: newlyProven, expires: expires)
            logger.info("presence proven", metadata: ["context": "\(context)", "factors": "\(newlyProven.map(\.rawValue).sorted())"])
        }
        if constraint.applicationPassword || (requirement.operation == .decrypt && requirement.accessControl.flags.contains(.applicationPassword)) {
            let itemKey: Data? = requirement.item.map { $0.data }
            if presence.applicationPassword(program: caller.program, context: context, for: itemKey, now: now()) == nil {
                let password: Data
                if let given = options.applicationPassword {
                    password = given
                } else {
                    let text = PromptText(
                        title: "Keychain", description: description + "\n\nIt is protected by an application password.",
                        prompt: "Application password:")
                    password = try Self.answer(prompter.askSecret(text))
                }
                guard !password.isEmpty else { throw KeychainError(code: .authenticationFailed, message: "The application password is empty.") }
                presence.record(program: caller.program, context: context, applicationPassword: password, for: itemKey, expires: expires)
            }
        }
    }

    /// How long a proof lasts at least: the request's own retry.
    static let retryWindow: TimeInterval = 10

    /// With `.or`: a fingerprint when a reader with an enrolled finger is here, else the passcode (or confirmation).
    private func preferredFactor(_ factors: [PresenceFactor], _ biometrics: any BiometricVerifier) -> PresenceFactor {
        let hasReader = biometrics.isAvailable()
        if hasReader, let bio = factors.first(where: { $0 == .biometryAny || $0 == .biometryCurrentSet }) { return bio }
        if let other = factors.first(where: { $0 == .userPresence || $0 == .devicePasscode }) { return other }
        return factors.first ?? .devicePasscode
    }

    /// Proves one factor, or throws.
    private func prove(
        _ factor: PresenceFactor, description: String, prompter: any PresencePrompter,
        biometrics: any BiometricVerifier
    ) throws(KeychainError) {
        switch factor {
        case .userPresence:
            // Biometry when a reader has an enrolled finger, else the passcode: Apple's DeviceOwnerAuthentication.
            if biometrics.isAvailable(), case .answered(true) = biometrics.verify(reason: description) { return }
            try provePasscode(description: description, prompter: prompter)
        case .devicePasscode:
            try provePasscode(description: description, prompter: prompter)
        case .biometryAny, .biometryCurrentSet:
            // As on a Mac without Touch ID: a fingerprint constraint cannot be met without a reader and an enrolled
            // finger, and does not fall back to the passcode (only .userPresence, or .or with .devicePasscode, does).
            guard biometrics.isAvailable() else {
                throw KeychainError(
                    code: .authenticationFailed,
                    message: "The item needs a fingerprint, and no fingerprint reader with an enrolled finger is available (fprintd). Enroll a finger with `fprintd-enroll`.")
            }
            switch biometrics.verify(reason: description) {
            case .answered(true): return
            case .answered(false): throw KeychainError(code: .authenticationFailed, message: "The fingerprint did not match.")
            case .cancelled, .timedOut: throw Self.cancelled
            case .unavailable(let why): throw KeychainError(code: .authenticationFailed, message: "The fingerprint could not be checked: \(why)")
            }
        case .watch:
            throw KeychainError(code: .authenticationFailed, message: "The item needs a paired watch, which Linux does not have.")
        }
    }

    /// Asks for the keychain passcode and checks it (counted by the wrong-passcode throttle); with no passcode set,
    /// asks for a confirmation instead.
    private func provePasscode(description: String, prompter: any PresencePrompter) throws(KeychainError) {
        guard keys.passcodeSet else {
            let text = PromptText(title: "Keychain", description: description + "\n\nAllow?")
            guard try Self.answer(prompter.confirm(text)) else { throw Self.cancelled }
            return
        }
        let text = PromptText(
            title: "Keychain", description: description + "\n\nEnter the keychain passcode to allow this.",
            prompt: "Passcode:")
        let secret = try Self.answer(prompter.askSecret(text))
        try verifyPasscode(String(decoding: secret, as: UTF8.self))
    }

    static let cancelled = KeychainError(code: .userCanceled, message: "The prompt was cancelled, or not answered in time.")

    /// A prompt's answer, or the error its outcome means.
    static func answer<Value>(_ outcome: PromptOutcome<Value>) throws(KeychainError) -> Value {
        switch outcome {
        case .answered(let value): return value
        case .cancelled, .timedOut: throw cancelled
        case .unavailable(let why):
            throw KeychainError(code: .interactionNotAllowed, message: "No prompt can be shown: \(why)")
        }
    }

    /// The requirement as the store has it: a client names the item, and the prompt's description and the
    /// factors to prove come from the item itself (a client cannot make a prompt name another item). An item the
    /// caller cannot see is `errSecItemNotFound`. A requirement for an item being added is taken as given.
    package func storedRequirement(_ claimed: PresenceRequirement, caller: AccessPolicy) throws(KeychainError) -> PresenceRequirement {
        guard let reference = claimed.item else {
            guard claimed.accessControl.flags.contains(.applicationPassword) else {
                throw .param("Only an item's application password can be given before the item exists.")
            }
            var requirement = claimed
            requirement.itemDescription = String(claimed.itemDescription.prefix(200))
            return requirement
        }
        var query = ItemQuery(itemClass: reference.itemClass)
        query.persistentRef = reference
        query.sync = .any
        query.returns.attributes = true
        guard let item = try findStored(query, caller: caller).first,
            let requirement = Self.requirement(item, claimed.operation)
        else {
            throw .param("The item does not need the user's presence for this operation.")
        }
        return requirement
    }

    // MARK: Contexts

    /// Forgets the proofs `caller` holds under `context` (`LAContext.invalidate()`).
    package func invalidate(context: AuthenticationContextID, caller: AccessPolicy) {
        presence.invalidate(program: caller.program, context: context)
    }

    /// Forgets every proof held (`security authorize --reset`); returns how many contexts held one.
    @discardableResult
    package func resetAuthorizations() -> Int {
        let count = presence.removeAll()
        logger.info("authorizations reset", metadata: ["contexts": "\(count)"])
        return count
    }
}
