import Foundation
import KeychainCore
import KeychainProtocol

/// Unlocking on first use: an item request that meets the login keychain locked (its class key is not in memory, so
/// the engine answers `errSecInteractionNotAllowed`) and allows a prompt (`kSecUseAuthenticationUI` allow, no
/// `interactionNotAllowed` context) makes keychaind ask the person for the keychain passcode through its prompter
/// (pinentry, as for user presence), unlock with the answer and serve the request once more — what macOS does when
/// a program reads an item of a locked login keychain. A wrong passcode is asked again, at most
/// ``attempts`` times in all, each one counted by the wrong-passcode throttle.
///
/// | how it ends | the request fails with |
/// |---|---|
/// | unlocked | nothing: it is served again |
/// | cancelled, or not answered in time | `errSecUserCanceled` (-128) |
/// | ``attempts`` wrong passcodes, or the throttle refuses | `errSecAuthFailed` (-25293) |
/// | no prompt can be shown (no pinentry, no display) | `errSecInteractionNotAllowed` (-25308), as without the prompt |
extension RequestDispatcher {
    /// How many passcodes one locked request may ask for.
    static let unlockAttempts = 3

    /// Runs `serve`; when it fails because the keychain is locked and `request` may prompt, asks for the passcode,
    /// unlocks, and runs `serve` once more.
    func unlockingWhenLocked(
        _ request: KeychainRequest, session: Session,
        _ serve: () throws(KeychainError) -> KeychainResponse
    ) throws(KeychainError) -> KeychainResponse {
        do {
            return try serve()
        } catch  where error.code == .interactionNotAllowed {
            guard let options = Self.itemAuthentication(request), options.interactionAllowed,
                Self.isLocked(session.engine.lockState)
            else { throw error }
            try promptAndUnlock(session: session, reason: options.reason, otherwise: error)
            return try serve()
        }
    }

    /// The authentication options of an item request; nil for every other request (they never prompt here).
    static func itemAuthentication(_ request: KeychainRequest) -> AuthenticationOptions? {
        switch request {
        case .add(let query, _), .find(let query, _), .update(let query, _, _), .delete(let query, _):
            return query.authentication
        case .tokenKey(_, _, let authentication):
            return authentication
        case .onKeychains(let names, let inner):
            // The prompt unlocks the login keychain: only a request that reaches it may ask for its passcode.
            return names.contains(.login) ? itemAuthentication(inner) : nil
        default:
            return nil
        }
    }

    /// Whether the class keys of the protected classes are out of memory.
    static func isLocked(_ state: LockState) -> Bool { state == .locked || state == .beforeFirstUnlock }

    /// Asks for the passcode until it unlocks the keychain, at most ``unlockAttempts`` times; throws `otherwise`
    /// when no prompt can be shown. Another request may unlock meanwhile: then nothing more is asked.
    private func promptAndUnlock(session: Session, reason: String?, otherwise: KeychainError) throws(KeychainError) {
        let engine = session.engine
        let program = (try? authority.policy(for: session, claim: nil))?.programName ?? session.identity.description
        let why = reason.map { "\n\n" + String($0.prefix(500)) } ?? ""
        var shownError: String?
        var lastFailure = KeychainError(code: .authenticationFailed, message: "The passcode did not unlock the keychain.")
        for _ in 0..<Self.unlockAttempts {
            guard Self.isLocked(engine.lockState) else { return }
            let text = PromptText(
                title: "Keychain",
                description: "\(program) wants to use your keychain, which is locked.\(why)\n\nEnter the keychain passcode to unlock it.",
                prompt: "Passcode:", error: shownError)
            let passcode: Data
            switch prompters.prompter(for: engine.location).askSecret(text) {
            case .answered(let answer): passcode = answer
            case .cancelled, .timedOut:
                throw KeychainError(code: .userCanceled, message: "The keychain is locked, and the prompt for its passcode was cancelled or not answered in time.")
            case .unavailable(let why):
                logger.debug("no prompt for the locked keychain", metadata: ["why": "\(why)"])
                throw otherwise
            }
            do {
                try engine.unlock(passcode: String(decoding: passcode, as: UTF8.self))
                logger.info("unlocked after a prompt", metadata: ["pid": "\(session.identity.pid)"])
                return
            } catch  where error.code == .authenticationFailed {
                lastFailure = error
                shownError = error.message
            }
        }
        throw lastFailure
    }
}
