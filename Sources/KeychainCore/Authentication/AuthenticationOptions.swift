import Foundation

/// `kSecUseAuthenticationUI`: what a request may do when an item needs the user's presence.
package enum AuthenticationUI: String, Sendable, Hashable {
    /// Ask the user (`kSecUseAuthenticationUIAllow`, the default).
    case allow = "u_AuthUIA"
    /// Never ask: fail with `errSecInteractionNotAllowed` (`kSecUseAuthenticationUIFail`).
    case fail = "u_AuthUIF"
    /// Never ask: leave protected items out of the results (`kSecUseAuthenticationUISkip`).
    case skip = "u_AuthUIS"
}

/// The identifier of an authentication context (`LAContext`): 16 random bytes chosen by the client. A proof
/// obtained under a context is kept by whoever holds the keys (keychaind, or the engine in this process), bound to
/// the program that obtained it, so knowing the identifier alone gives another program nothing.
package struct AuthenticationContextID: Sendable, Hashable, CustomStringConvertible {
    /// The identifier's bytes (16).
    package let bytes: Data

    /// An identifier from its bytes; nil unless there are exactly 16.
    package init?(bytes: Data) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A fresh random identifier.
    package static func random() -> AuthenticationContextID {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return AuthenticationContextID(unchecked: Data(bytes))
    }

    private init(unchecked bytes: Data) { self.bytes = bytes }

    /// The first four bytes in hex: enough to tell contexts apart in a log.
    package var description: String { bytes.prefix(4).map { String(format: "%02x", $0) }.joined() }
}

/// The authentication part of a request: `kSecUseAuthenticationUI`, `kSecUseOperationPrompt` and
/// `kSecUseAuthenticationContext`, parsed.
package struct AuthenticationOptions: Sendable, Hashable {
    /// What to do when an item needs presence.
    package var ui: AuthenticationUI = .allow
    /// The reason shown in the prompt (`kSecUseOperationPrompt`, or the context's `localizedReason`).
    package var operationPrompt: String?
    /// The context whose proofs the request may use; nil gives the request a context of its own.
    package var context: AuthenticationContextID?
    /// How long a proof obtained for this request stays usable by the same program under the same context
    /// (the context's reuse duration, capped at ``maximumReuseDuration``); 0 means only this request's retry.
    package var reuseDuration: TimeInterval = 0
    /// An application password the caller already holds (`LAContext.setCredential(_:type: .applicationPassword)`).
    package var applicationPassword: Data?
    /// The context's own reason (`LAContext.localizedReason`), used when the request gives no operation prompt.
    package var localizedReason: String?
    /// The context forbids prompts (`LAContext.interactionNotAllowed`): as `kSecUseAuthenticationUIFail`.
    package var interactionNotAllowed = false
    /// A smart card's PIN the caller already holds (`LAContext.setCredential(_:type: .smartCardPIN)`), for the
    /// private keys of PKCS#11 tokens; passed to the token only.
    package var smartCardPIN: Data?

    package init() {}

    /// Takes what an authentication context carries.
    package mutating func apply(_ context: AuthenticationContextValue) {
        self.context = context.id
        reuseDuration = context.reuseDuration
        applicationPassword = context.applicationPassword
        localizedReason = context.localizedReason
        interactionNotAllowed = context.interactionNotAllowed
        smartCardPIN = context.smartCardPIN
    }

    /// Apple's `LATouchIDAuthenticationMaximumAllowableReuseDuration`: a proof is never reused for longer.
    package static let maximumReuseDuration: TimeInterval = 300

    /// Whether this request may show a prompt.
    package var interactionAllowed: Bool { ui == .allow && !interactionNotAllowed }

    /// The reason a prompt shows.
    package var reason: String? { operationPrompt ?? localizedReason }
}

/// What an authentication context (`LAContext`) puts into a request: its identifier and settings, as
/// `kSecUseAuthenticationContext`'s value travels from the API into the engine.
package struct AuthenticationContextValue: Sendable, Hashable {
    /// The context's identifier.
    package var id: AuthenticationContextID
    /// `localizedReason`.
    package var localizedReason: String?
    /// `interactionNotAllowed`.
    package var interactionNotAllowed: Bool
    /// `touchIDAuthenticationAllowableReuseDuration`, capped by the engine.
    package var reuseDuration: TimeInterval
    /// A credential set with `setCredential(_:type: .applicationPassword)`.
    package var applicationPassword: Data?
    /// A credential set with `setCredential(_:type: .smartCardPIN)`.
    package var smartCardPIN: Data?

    package init(
        id: AuthenticationContextID, localizedReason: String? = nil, interactionNotAllowed: Bool = false,
        reuseDuration: TimeInterval = 0, applicationPassword: Data? = nil, smartCardPIN: Data? = nil
    ) {
        self.id = id
        self.smartCardPIN = smartCardPIN
        self.localizedReason = localizedReason
        self.interactionNotAllowed = interactionNotAllowed
        self.reuseDuration = reuseDuration
        self.applicationPassword = applicationPassword
    }
}

/// What one protected item needs before an operation on it may proceed: keychaind's answer
/// `errSecAuthNeeded` (-25330) carries a list of these, and the client obtains each proof and retries
/// (Apple's `SecItemAuthDo`).
package struct PresenceRequirement: Sendable, Hashable {
    /// The item, as a persistent reference; nil for an item being added (its application password).
    package var item: PersistentReference?
    /// A short description of the item for the prompt: its label, else its service or server, else its class.
    package var itemDescription: String
    /// The operation that needs the proof.
    package var operation: ProtectedOperation
    /// The item's access control.
    package var accessControl: AccessControl

    package init(item: PersistentReference?, itemDescription: String, operation: ProtectedOperation, accessControl: AccessControl) {
        self.item = item
        self.itemDescription = itemDescription
        self.operation = operation
        self.accessControl = accessControl
    }

    /// What must be proven.
    package var constraint: PresenceConstraint { accessControl.constraint(for: operation) }
}
