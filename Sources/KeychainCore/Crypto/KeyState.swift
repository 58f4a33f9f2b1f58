import Foundation
import Crypto

/// The class keys a process holds, and the lock state they reflect. Keys of locked classes are dropped
/// from memory, not merely hidden.
package final class KeyState: @unchecked Sendable {
    private let lock = NSLock()
    private let random: any RandomSource
    private var metadataKey: SymmetricKey
    private var current: ItemCrypto
    private var held: [ProtectionClass: SymmetricKey]
    private var state: LockState

    init(keybag: Keybag, passcodeSet: Bool, random: any RandomSource) {
        self.random = random
        metadataKey = keybag.metadataKey
        held = keybag.classKeys
        current = ItemCrypto(keybag: keybag, random: random)
        state = passcodeSet ? .beforeFirstUnlock : .noPasscode
    }

    package var crypto: ItemCrypto { lock.withLock { current } }
    package var lockState: LockState { lock.withLock { state } }
    package var passcodeSet: Bool { lockState != .noPasscode }
    /// A class key, when it is held now.
    func classKey(_ cls: ProtectionClass) -> SymmetricKey? { lock.withLock { held[cls] } }

    /// Replaces the held keys and state together.
    func set(_ keys: [ProtectionClass: SymmetricKey], metadataKey newMetadataKey: SymmetricKey? = nil, state newState: LockState) {
        lock.withLock {
            if let newMetadataKey { metadataKey = newMetadataKey }
            held = keys
            current = ItemCrypto(keybag: Keybag(uuid: [], classKeys: keys, metadataKey: metadataKey), random: random)
            state = newState
        }
    }

    /// A passcode now protects the keybag these keys came from: they stay, and the state becomes unlocked.
    func markPasscodeSet() {
        lock.withLock {
            if state == .noPasscode { state = .unlocked }
        }
    }

    /// Drops the WhenUnlocked keys (`ak`, `aku`, `akpu`); AfterFirstUnlock and Always keys stay.
    func dropWhenUnlockedKeys() {
        lock.withLock {
            guard state == .unlocked else { return }
            for cls in [ProtectionClass.whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly] {
                held[cls] = nil
            }
            current = ItemCrypto(keybag: Keybag(uuid: [], classKeys: held, metadataKey: metadataKey), random: random)
            state = .locked
        }
    }
}

extension KeychainError {
    static let noPasscodeForPasscodeOnlyItem = KeychainError(
        code: .authenticationFailed, message: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly needs a keychain passcode, and none is set. Set one with `security set-keychain-password`.")
}
