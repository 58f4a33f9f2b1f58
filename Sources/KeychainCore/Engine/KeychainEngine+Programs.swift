import Crypto
import Foundation

/// The program registry keychaind decides access groups from, kept sealed in the keychain folder.
extension KeychainEngine {
    /// The registry key, available once the AfterFirstUnlock classes are.
    func registryKey() throws(KeychainError) -> SymmetricKey {
        guard let classKey = keys.classKey(.afterFirstUnlockThisDeviceOnly) else {
            throw KeychainError(code: .interactionNotAllowed, message: "The program registry is locked until the keychain is first unlocked. Unlock it with `security unlock-keychain`.")
        }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: classKey, salt: Array("swift-keychain app registry".utf8),
            info: Array("apps.registry v1".utf8), outputByteCount: 32)
    }

    /// The program registry (empty when none was written).
    package func appRegistry() throws(KeychainError) -> AppRegistry {
        guard let bytes = try FileSystem.read(location.registryPath) else { return AppRegistry() }
        return try AppRegistry.decode(bytes, key: registryKey())
    }

    /// Changes the program registry under the keychain's file lock and writes it atomically.
    @discardableResult
    package func updateAppRegistry<T>(_ change: (inout AppRegistry) throws(KeychainError) -> T) throws(KeychainError) -> T {
        let key = try registryKey()
        return try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            var registry = try appRegistry()
            let result = try change(&registry)
            try FileSystem.writeAtomically(registry.encode(key: key, random: random), to: location.registryPath, exclusive: false)
            logger.notice("program registry changed", metadata: ["programs": "\(registry.entries.count)"])
            return result
        }
    }
}
