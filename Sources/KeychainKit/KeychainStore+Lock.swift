import Foundation
import KeychainCore

extension KeychainStore {
    /// Whether the keychain's protected classes are available to this process.
    public enum LockStatus: Sendable, Hashable {
        /// No passcode is set: every item is available.
        case noPasscode
        /// A passcode is set and this process has not unlocked yet: only `.always` items are available.
        case beforeFirstUnlock
        /// Unlocked: every item is available.
        case unlocked
        /// Locked after an unlock: `.always` and `.afterFirstUnlock` items stay available.
        case locked
    }

    /// The keychain's lock status: keychaind's when it serves the keychain, else this process's.
    ///
    /// - Throws: `KeychainError` when keychaind cannot be reached.
    public var lockStatus: LockStatus {
        get throws(KeychainError) {
            switch try connection.status().lockState {
            case .noPasscode: .noPasscode
            case .beforeFirstUnlock: .beforeFirstUnlock
            case .unlocked: .unlocked
            case .locked: .locked
            }
        }
    }

    /// Unlocks the keychain with its passcode, for this process (or, with keychaind, for the session).
    ///
    /// - Throws: `KeychainError` with status `KeychainStatus/authFailed` for a wrong passcode, or while
    ///   wrong passcodes are throttled (the message says how long to wait).
    public func unlock(passcode: String) throws(KeychainError) {
        try connection.unlock(passcode: passcode)
    }

    /// Locks the keychain: the keys of the `whenUnlocked` classes are dropped from memory, and their items
    /// fail with `KeychainStatus/interactionNotAllowed` until the next ``unlock(passcode:)``.
    ///
    /// - Throws: `KeychainError` when keychaind cannot be reached.
    public func lock() throws(KeychainError) {
        try connection.lock()
    }

    /// Sets, changes or removes the keychain's passcode. Class keys are re-wrapped; items are not re-encrypted.
    ///
    /// - Parameters:
    ///   - newPasscode: The new passcode, or `nil` to remove it. Removing it destroys every item whose
    ///     accessibility is ``KeychainAccessibility/whenPasscodeSetThisDeviceOnly``.
    ///   - currentPasscode: The current passcode, required when one is set.
    /// - Throws: `KeychainError` with status `KeychainStatus/authFailed` when `currentPasscode` is wrong or
    ///   missing.
    public func setPasscode(_ newPasscode: String?, currentPasscode: String? = nil) throws(KeychainError) {
        try connection.changePasscode(from: currentPasscode, to: newPasscode)
    }
}
