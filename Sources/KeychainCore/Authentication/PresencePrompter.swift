import Foundation

/// The text of one prompt. Every string is plain text: the prompter escapes it for its transport (pinentry's
/// Assuan percent-escaping), so `%`, CR and LF in an item's label or a program's path cannot end a command early.
package struct PromptText: Sendable, Hashable {
    /// The window title (pinentry `SETTITLE`).
    package var title: String
    /// What is asked and why: the requesting program as keychaind identified it, the item, the reason
    /// (pinentry `SETDESC`).
    package var description: String
    /// The label beside the entry field, for a passcode (pinentry `SETPROMPT`).
    package var prompt: String?
    /// An error shown above the entry, for a retry after a wrong passcode (pinentry `SETERROR`).
    package var error: String?

    package init(title: String, description: String, prompt: String? = nil, error: String? = nil) {
        self.title = title
        self.description = description
        self.prompt = prompt
        self.error = error
    }
}

/// How a prompt ended.
package enum PromptOutcome<Value: Sendable>: Sendable {
    /// The person answered.
    case answered(Value)
    /// The person cancelled, or closed the prompt (`errSecUserCanceled`).
    case cancelled
    /// The prompt did not answer in time and was stopped (`errSecUserCanceled`).
    case timedOut
    /// No prompt could be shown (no pinentry, no display and no terminal); the string says why and what to do.
    case unavailable(String)
}

/// The answer to "allow PROGRAM to …?" with three buttons.
package enum ConsentAnswer: String, Sendable, Hashable {
    /// Allow this time only.
    case once
    /// Allow now and remember it for this program.
    case always
    /// Refuse (and remember the refusal).
    case deny
}

/// What can ask the person at this machine: pinentry in practice (`KeychainPrompt`). keychaind owns one, as does
/// an engine opened in the calling process. Every call blocks until the person answers, cancels, or the prompter's
/// timeout stops the prompt; implementations are safe to call from any thread and show one prompt at a time.
package protocol PresencePrompter: Sendable {
    /// Asks for a secret (the keychain passcode, an application password): pinentry's `GETPIN`.
    func askSecret(_ text: PromptText) -> PromptOutcome<Data>
    /// Asks for a yes/no confirmation: pinentry's `CONFIRM`.
    func confirm(_ text: PromptText) -> PromptOutcome<Bool>
    /// Asks "once / always / deny": pinentry's `CONFIRM` with three buttons.
    func askConsent(_ text: PromptText) -> PromptOutcome<ConsentAnswer>
}

/// A fingerprint reader (fprintd on the system bus in practice).
package protocol BiometricVerifier: Sendable {
    /// Whether a reader with at least one enrolled finger of this user is there now.
    func isAvailable() -> Bool
    /// A digest of the enrolled fingers (changes when a finger is added or removed), for `.biometryCurrentSet`;
    /// nil when unavailable.
    func enrolledSetDigest() -> Data?
    /// Asks for a finger, naming the reason; blocks until matched, not matched, cancelled or timed out.
    func verify(reason: String) -> PromptOutcome<Bool>
}

/// No reader: every biometric constraint falls back as on a Mac without Touch ID.
package struct NoBiometrics: BiometricVerifier {
    package init() {}
    package func isAvailable() -> Bool { false }
    package func enrolledSetDigest() -> Data? { nil }
    package func verify(reason: String) -> PromptOutcome<Bool> { .unavailable("No fingerprint reader with an enrolled finger.") }
}

/// No way to ask: every prompt is unavailable (a process or daemon with no prompter configured).
package struct UnavailablePrompter: PresencePrompter {
    package init() {}
    static let why = "no prompter is configured (install pinentry, or set KEYCHAIN_PINENTRY)"
    package func askSecret(_ text: PromptText) -> PromptOutcome<Data> { .unavailable(Self.why) }
    package func confirm(_ text: PromptText) -> PromptOutcome<Bool> { .unavailable(Self.why) }
    package func askConsent(_ text: PromptText) -> PromptOutcome<ConsentAnswer> { .unavailable(Self.why) }
}
