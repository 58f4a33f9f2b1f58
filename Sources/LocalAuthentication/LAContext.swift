#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainClient
import KeychainCore

// The part of Apple's LocalAuthentication framework (LAContext.h, LAPublicDefines.h) that the keychain uses: an
// authentication context to pass as `kSecUseAuthenticationContext`, so that one proof of the user's presence
// serves several keychain calls, and an application password given in advance. On Apple's platforms the system's
// framework is used instead of this module.

/// The longest time a proof of presence may be reused (`LATouchIDAuthenticationMaximumAllowableReuseDuration`):
/// 300 seconds.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: TimeInterval = AuthenticationOptions.maximumReuseDuration

/// The kind of credential `LAContext.setCredential(_:type:)` sets.
public enum LACredentialType: Int, Sendable {
    /// An item's application password (`kSecAccessControlApplicationPassword`).
    case applicationPassword = 0
    /// A smart card's PIN, for the private keys of PKCS#11 tokens (smart cards, YubiKeys, SoftHSM) that
    /// SecItemCopyMatching finds in `kSecAttrAccessGroupToken`: the token is logged in with it for each operation.
    case smartCardPIN = -3
}

/// An authentication context: the keychain calls given it as `kSecUseAuthenticationContext` share the proofs of
/// the user's presence obtained under it.
///
/// ```swift
/// let context = LAContext()
/// context.localizedReason = "Show the saved password"
/// context.touchIDAuthenticationAllowableReuseDuration = 60
/// let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice",
///                             kSecReturnData as String: true, kSecUseAuthenticationContext as String: context]
/// ```
///
/// A proof is kept where the keys are (keychaind, or the keychain opened in this process), bound to this program
/// and this context's identifier, for the context's reuse duration (never longer than
/// ``LATouchIDAuthenticationMaximumAllowableReuseDuration``), and forgotten when the keychain locks.
///
/// Prompts are shown by pinentry, which has no fallback or cancel button of its own to name:
/// ``localizedFallbackTitle`` and ``localizedCancelTitle`` are kept for source compatibility and not shown.
/// `evaluatePolicy` and `canEvaluatePolicy` are not provided: presence is asked for by the keychain call that
/// needs it.
///
/// Safe to use from any thread.
open class LAContext: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private let identifier = AuthenticationContextID.random()
    private var reason = ""
    private var noInteraction = false
    private var reuseDuration: TimeInterval = 0
    private var fallbackTitle: String?
    private var cancelTitle: String?
    private var applicationPassword: Data?
    private var smartCardPIN: Data?
    private var invalidated = false

    /// A new context, with no proof yet.
    public override init() {
        super.init()
    }

    /// The reason shown in a prompt for a call made with this context when the call gives no
    /// `kSecUseOperationPrompt`.
    open var localizedReason: String {
        get { lock.withLock { reason } }
        set { lock.withLock { reason = newValue } }
    }

    /// Whether calls made with this context must not prompt: a call that needs a proof the context does not hold
    /// fails with `errSecInteractionNotAllowed`, as with `kSecUseAuthenticationUIFail`.
    open var interactionNotAllowed: Bool {
        get { lock.withLock { noInteraction } }
        set { lock.withLock { noInteraction = newValue } }
    }

    /// How long, in seconds, a proof obtained under this context serves later calls made with it. 0 (the default)
    /// means only the call that asked; values above ``LATouchIDAuthenticationMaximumAllowableReuseDuration`` are
    /// stored as that maximum, and negative ones as 0.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { lock.withLock { reuseDuration } }
        set {
            let clamped = newValue.isNaN ? 0 : min(max(newValue, 0), LATouchIDAuthenticationMaximumAllowableReuseDuration)
            lock.withLock { reuseDuration = clamped }
        }
    }

    /// The title of the fallback button of Apple's biometric prompt. Kept, not shown: pinentry has no such
    /// button.
    open var localizedFallbackTitle: String? {
        get { lock.withLock { fallbackTitle } }
        set { lock.withLock { fallbackTitle = newValue } }
    }

    /// The title of the cancel button of Apple's prompt. Kept, not shown: pinentry names its own button.
    open var localizedCancelTitle: String? {
        get { lock.withLock { cancelTitle } }
        set { lock.withLock { cancelTitle = newValue } }
    }

    /// Sets (or, with `nil`, removes) a credential the keychain uses instead of asking: an item's application
    /// password for ``LACredentialType/applicationPassword``, a token's PIN (UTF-8) for
    /// ``LACredentialType/smartCardPIN``.
    ///
    /// - Returns: Whether the credential was set; `false` once the context is invalidated.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        lock.withLock {
            guard !invalidated else { return false }
            switch type {
            case .applicationPassword: applicationPassword = credential
            case .smartCardPIN: smartCardPIN = credential
            }
            return true
        }
    }

    /// Whether a credential of `type` is set.
    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        lock.withLock {
            switch type {
            case .applicationPassword: applicationPassword != nil
            case .smartCardPIN: smartCardPIN != nil
            }
        }
    }

    /// Ends the context: the keychain forgets the proofs this program obtained under it, its credential is
    /// dropped, and it cannot be used again. Keychain calls made with it afterwards never prompt: one that needs
    /// the user's presence fails with `errSecInteractionNotAllowed` (Apple's fail with `LAError.invalidContext`,
    /// which keychain calls report as a failed authentication).
    open func invalidate() {
        let first = lock.withLock {
            defer { invalidated = true; applicationPassword = nil; smartCardPIN = nil }
            return !invalidated
        }
        guard first else { return }
        // Best effort, as Apple's: a keychain that cannot be reached holds no proof that could be used anyway.
        try? KeychainConnector.environment().invalidate(context: identifier)
    }

    /// Whether ``invalidate()`` was called.
    package var isInvalidated: Bool { lock.withLock { invalidated } }

    /// What a keychain call made with this context carries: its identifier and settings, as they are now.
    package var value: AuthenticationContextValue {
        lock.withLock {
            AuthenticationContextValue(
                id: identifier, localizedReason: reason.isEmpty ? nil : reason,
                interactionNotAllowed: noInteraction || invalidated,
                reuseDuration: invalidated ? 0 : reuseDuration,
                applicationPassword: invalidated ? nil : applicationPassword, smartCardPIN: invalidated ? nil : smartCardPIN)
        }
    }
}
#endif
