import Crypto
import Foundation

/// The remembered answers to "allow PROGRAM to use SUBJECT?", kept sealed in the keychain folder beside the
/// program registry (see ``ConsentRegistry`` for the file and what protects it).
extension KeychainEngine {
    /// The consent file's key, available once the AfterFirstUnlock classes are.
    func consentKey() throws(KeychainError) -> SymmetricKey {
        guard let classKey = keys.classKey(.afterFirstUnlockThisDeviceOnly) else {
            throw KeychainError(
                code: .interactionNotAllowed, message: "The programs' remembered permissions are locked until the keychain is first unlocked. Unlock it with `security unlock-keychain`.")
        }
        return ConsentRegistry.key(classKey: classKey)
    }

    /// Every remembered decision (empty when none was written). A file this keychain did not write, or that was
    /// changed since, is `errSecDecode` with ``ConsentRegistry/damaged``'s message.
    package func consentRegistry() throws(KeychainError) -> ConsentRegistry {
        guard let bytes = try FileSystem.read(location.consentsPath) else { return ConsentRegistry() }
        return try ConsentRegistry.decode(bytes, key: consentKey())
    }

    /// The remembered decisions, in the order they were made.
    package func consents() throws(KeychainError) -> [ConsentDecision] {
        try consentRegistry().decisions
    }

    /// The decision remembered for exactly `program` and `subject`, or nil.
    ///
    /// A damaged or foreign `apps.consents` counts as *no decisions* here (logged as a warning): whoever can write
    /// the file can also delete it, which has the same effect, so refusing every request instead would hand such a
    /// program a way to block every consent-gated access without giving any protection in return; and "nothing
    /// remembered" always ends in asking the person (or `errSecInteractionNotAllowed`), never in a grant. Listing
    /// and revoking report the damage (``consents()``).
    package func rememberedConsent(for program: AppRegistration.Program, subject: String) throws(KeychainError) -> ConsentDecision? {
        do {
            return try consentRegistry().decision(for: program, subject: subject)
        } catch  where error.code == .corruptData {
            logger.warning("apps.consents is damaged or foreign; its decisions are ignored", metadata: ["path": "\(location.consentsPath)"])
            return nil
        }
    }

    /// Remembers `decision` (replacing the one for the same program and subject) under the keychain's file lock,
    /// writing the file atomically. A damaged or foreign file is replaced (its decisions were already ignored).
    /// Throws `errSecParam` past ``ConsentRegistry/maximumDecisions``.
    package func rememberConsent(_ decision: ConsentDecision) throws(KeychainError) {
        try updateConsentRegistry(replacingDamaged: true) { (registry) throws(KeychainError) in try registry.remember(decision) }
    }

    /// Forgets the decisions for the program `name` names (an executable's path whatever its SHA-256, a Flatpak app
    /// ID or a snap name), only those about `subject` when given; returns how many were forgotten.
    @discardableResult
    package func revokeConsents(named name: String, subject: String? = nil) throws(KeychainError) -> Int {
        try updateConsentRegistry(replacingDamaged: false) { $0.revoke(named: name, subject: subject) }
    }

    /// Changes the decisions under the keychain's file lock and writes them atomically (only when `change` changed
    /// them). With `replacingDamaged`, a file that does not open is started afresh (and the replacement logged);
    /// otherwise its error is thrown.
    @discardableResult
    func updateConsentRegistry<T>(replacingDamaged: Bool, _ change: (inout ConsentRegistry) throws(KeychainError) -> T) throws(KeychainError) -> T {
        let key = try consentKey()
        return try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            var registry: ConsentRegistry
            do throws(KeychainError) {
                registry = try consentRegistry()
            } catch  where replacingDamaged && error.code == .corruptData {
                logger.warning("apps.consents is damaged or foreign; replacing it", metadata: ["path": "\(location.consentsPath)"])
                registry = ConsentRegistry()
            }
            let before = registry
            let result = try change(&registry)
            if registry != before {
                try FileSystem.writeAtomically(registry.encode(key: key, random: random), to: location.consentsPath, exclusive: false)
                logger.notice("programs' remembered permissions changed", metadata: ["decisions": "\(registry.decisions.count)"])
            }
            return result
        }
    }
}
