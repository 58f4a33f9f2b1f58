import Foundation
import KeychainCore
import KeychainPrompt

extension KeychainConnection {
    /// Runs an item call, obtaining the proofs of presence it turns out to need (Apple's `SecItemAuthDo`): when the
    /// call fails with `errSecAuthNeeded`, each requirement is proven through ``authenticate(_:options:)`` under the
    /// request's context and the call is made again, at most 20 times. A request without a context of its own gets
    /// a fresh random one on its first `errSecAuthNeeded`, so its proofs serve only its own retries.
    ///
    /// With `kSecUseAuthenticationUIFail` or a context that forbids interaction, `errSecAuthNeeded` becomes
    /// `errSecInteractionNotAllowed` and no prompt is started. (`kSecUseAuthenticationUISkip` never gets here:
    /// the engine leaves protected items out.)
    package func withPresence<Result>(
        _ options: AuthenticationOptions,
        _ body: (AuthenticationOptions) throws(KeychainError) -> Result
    ) throws(KeychainError) -> Result {
        var options = options
        var attempts = 0
        while true {
            do {
                return try body(options)
            } catch  where error.code == .authenticationNeeded {
                attempts += 1
                guard attempts <= Self.maximumPresenceAttempts else {
                    throw KeychainError(code: .authenticationFailed, message: "The item still needs the user's presence after \(Self.maximumPresenceAttempts) proofs; giving up.")
                }
                guard options.interactionAllowed else {
                    throw KeychainError(
                        code: .interactionNotAllowed,
                        message: "The item needs the user's presence, and the request does not allow a prompt (kSecUseAuthenticationUIFail, or the context's interactionNotAllowed).")
                }
                guard !error.presenceNeeded.isEmpty else { throw error }
                if options.context == nil { options.context = .random() }
                for requirement in error.presenceNeeded {
                    try authenticate(requirement, options: options)
                }
            }
        }
    }

    /// Apple's client gives up after 20 rounds.
    static var maximumPresenceAttempts: Int { 20 }
}

/// What asks the person at this machine for calls made with the keychain opened in this process (pinentry,
/// chosen by the keychain's settings and `KEYCHAIN_PINENTRY`), and where a fingerprint reader is.
package enum PresenceServices {
    private static let prompters = PrompterCache()
    private static let state = BiometricsState()

    /// The prompter for the keychain at `location`.
    package static func prompter(for location: KeychainLocation) -> any PresencePrompter {
        prompters.prompter(for: location)
    }

    /// The fingerprint reader in-process calls use: none by default, so that no program links libsystemd to find
    /// an item; fingerprints are checked by keychaind (fprintd), and an in-process `.userPresence` falls back to
    /// the passcode as on a Mac without Touch ID.
    package static var biometrics: any BiometricVerifier {
        get { state.get() }
        set { state.set(newValue) }
    }
}

private final class BiometricsState: @unchecked Sendable {
    private let lock = NSLock()
    private var biometrics: any BiometricVerifier = NoBiometrics()

    func get() -> any BiometricVerifier { lock.withLock { biometrics } }
    func set(_ newValue: any BiometricVerifier) { lock.withLock { biometrics = newValue } }
}
