import Foundation
import Crypto

/// Whether the keychain's protected classes are available to this process.
package enum LockState: Sendable, Hashable {
    /// No passcode is set: every class is available, as on an iPhone without a passcode.
    case noPasscode
    /// A passcode is set and this process has not unlocked since it opened the keychain ("boot"):
    /// only Always items (`dk`, `dku`) are available.
    case beforeFirstUnlock
    /// Unlocked: every class is available.
    case unlocked
    /// Locked after an unlock: Always and AfterFirstUnlock items stay available.
    case locked

    /// The state's stable name on keychaind's socket: `noPasscode`, `beforeFirstUnlock`, `unlocked`, `locked`.
    package var wireName: String {
        switch self {
        case .noPasscode: "noPasscode"
        case .beforeFirstUnlock: "beforeFirstUnlock"
        case .unlocked: "unlocked"
        case .locked: "locked"
        }
    }
}

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
    static let noPasscodeForPasscodeOnlyItem = KeychainError(code: .authenticationFailed, message: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly needs a keychain passcode, and none is set. Set one with `security set-keychain-password`.")
}

/// Wrong-passcode throttling, kept in `keychain.throttle` beside the keybag so it survives restarts.
///
/// Format: `u8 version = 1 | u32 consecutive failures | u64 IEEE-754 bits of the earliest next attempt
/// (seconds since 1970)`. Delays follow iOS: none for the first four failures, then 1, 5, 15, 15 minutes,
/// then an hour for every further failure.
package struct PasscodeThrottle: Sendable, Hashable {
    package var failures: UInt32 = 0
    package var notBefore: Double = 0

    package static func delay(afterFailures failures: UInt32) -> Double {
        switch failures {
        case 0 ..< 5: 0
        case 5: 60
        case 6: 300
        case 7, 8: 900
        default: 3600
        }
    }

    static func load(_ location: KeychainLocation) throws(KeychainError) -> PasscodeThrottle {
        guard let bytes = try FileSystem.read(location.throttlePath) else { return PasscodeThrottle() }
        var r = BinaryReader(bytes)
        guard let version = try? r.u8(), version == 1, let failures = try? r.u32(), let bits = try? r.u64(), r.isAtEnd else {
            // A damaged throttle file must not let an attacker reset the count: treat it as the maximum.
            return PasscodeThrottle(failures: 9, notBefore: Date().timeIntervalSince1970 + delay(afterFailures: 9))
        }
        return PasscodeThrottle(failures: failures, notBefore: Double(bitPattern: bits))
    }

    func save(_ location: KeychainLocation) throws(KeychainError) {
        var w = BinaryWriter(capacity: 13)
        w.u8(1)
        w.u32(failures)
        w.u64(notBefore.bitPattern)
        try FileSystem.writeAtomically(w.bytes, to: location.throttlePath, exclusive: false)
    }
}

extension KeychainEngine {
    /// This process's lock state.
    package var lockState: LockState { keys.lockState }

    /// Unlocks the protected classes with the passcode. The unlock lasts for this engine (this process, or
    /// the daemon). Wrong passcodes are throttled with escalating delays that survive restarts.
    package func unlock(passcode: String) throws(KeychainError) {
        try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            guard let bytes = try FileSystem.read(location.keybagPath) else {
                throw KeychainError(code: .notAvailable, message: "The keybag is missing from \(location.home).")
            }
            guard try Keybag.header(bytes).passcode != nil else {
                // No passcode: nothing to unlock, everything is available.
                try reloadWithoutPasscode(bytes)
                return
            }
            let bag = try openThrottled(bytes, deviceKey: deviceKey(), passcode: passcode)
            keys.set(bag.classKeys, metadataKey: bag.metadataKey, state: .unlocked)
            logger.debug("unlocked")
        }
    }

    /// Brings this process's lock state in line with a keybag another process changed: a passcode set
    /// elsewhere makes the keys held here "unlocked" (no longer "no passcode"), so the next lock or
    /// admin check needs the passcode; a passcode removed elsewhere reloads the keys without one. Cheap when
    /// nothing changed (one `stat`). keychaind calls it before every request.
    package func followKeybagChanges() throws(KeychainError) {
        var st = stat()
        guard stat(location.keybagPath, &st) == 0 else { return }
        let stamp = [Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec)]
        guard keybagStamp.withLock({ old in
            defer { old = stamp }
            return old != stamp
        }) else { return }
        try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            guard let bytes = try FileSystem.read(location.keybagPath) else { return }
            let hasPasscode = try Keybag.header(bytes).passcode != nil
            switch (lockState, hasPasscode) {
            case (.noPasscode, true):
                keys.markPasscodeSet()
                logger.notice("a passcode was set by another process")
            case (.beforeFirstUnlock, false), (.unlocked, false), (.locked, false):
                try reloadWithoutPasscode(bytes)
                logger.notice("the passcode was removed by another process")
            default:
                break
            }
        }
    }

    /// Locks: drops the WhenUnlocked class keys from memory. AfterFirstUnlock and Always items stay available.
    package func lock() {
        keys.dropWhenUnlockedKeys()
        logger.debug("locked")
    }

    /// Sets (`old` nil), changes, or removes (`new` nil) the passcode. Class keys are re-wrapped, never items
    /// re-encrypted. Removing the passcode destroys the WhenPasscodeSetThisDeviceOnly key and deletes its items.
    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        if let new, new.isEmpty { throw .param("The new passcode is empty. To remove the passcode, pass none.") }
        let parameters = new.map { _ in PasscodeKDF.tuned(random: random) }
        try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            guard let bytes = try FileSystem.read(location.keybagPath) else {
                throw KeychainError(code: .notAvailable, message: "The keybag is missing from \(location.home).")
            }
            let device = try deviceKey()
            var bag: Keybag
            let hadPasscode = try Keybag.header(bytes).passcode != nil
            if hadPasscode {
                guard let old else {
                    throw KeychainError(code: .authenticationFailed, message: "A passcode is set: give the current passcode to change or remove it.")
                }
                bag = try openThrottled(bytes, deviceKey: device, passcode: old)
            } else {
                bag = try Keybag.decode(bytes, deviceKey: device)
            }
            var classKeys = bag.classKeys
            if new == nil, hadPasscode {
                // The WhenPasscodeSetThisDeviceOnly key is destroyed with the passcode; its items go with it.
                let removed = try deletePasscodeOnlyItems()
                classKeys[.whenPasscodeSetThisDeviceOnly] = SymmetricKey(data: random.bytes(32))
                logger.notice("passcode removed", metadata: ["deleted": "\(removed)"])
            }
            bag = Keybag(uuid: bag.uuid, classKeys: classKeys, metadataKey: bag.metadataKey)
            var passcode: (secret: String, parameters: PasscodeKDF)?
            if let new, let parameters { passcode = (new, parameters) }
            try FileSystem.writeAtomically(bag.encode(deviceKey: device, passcode: passcode, random: random),
                                           to: location.keybagPath, exclusive: false)
            keys.set(classKeys, metadataKey: bag.metadataKey, state: new == nil ? .noPasscode : .unlocked)
        }
    }

    /// Opens a passcode-protected keybag, honouring and recording the wrong-passcode throttle.
    /// Called with the keychain's file lock held.
    private func openThrottled(_ bytes: Data, deviceKey: SymmetricKey, passcode: String) throws(KeychainError) -> Keybag {
        var throttle = try PasscodeThrottle.load(location)
        let wait = throttle.notBefore - now().timeIntervalSince1970
        if wait > 0 {
            throw KeychainError(code: .authenticationFailed, message: "Too many wrong passcodes. Try again in \(Int(wait.rounded(.up))) seconds.")
        }
        do throws(KeychainError) {
            let bag = try Keybag.decode(bytes, deviceKey: deviceKey, passcode: passcode)
            if throttle.failures > 0 { try PasscodeThrottle().save(location) }
            return bag
        } catch where error.code == .authenticationFailed {
            throttle.failures += 1
            throttle.notBefore = now().timeIntervalSince1970 + PasscodeThrottle.delay(afterFailures: throttle.failures)
            try throttle.save(location)
            logger.notice("wrong passcode", metadata: ["failures": "\(throttle.failures)"])
            throw error
        }
    }

    private func reloadWithoutPasscode(_ bytes: Data) throws(KeychainError) {
        let bag = try Keybag.decode(bytes, deviceKey: deviceKey())
        keys.set(bag.classKeys, metadataKey: bag.metadataKey, state: .noPasscode)
    }

    func deviceKey() throws(KeychainError) -> SymmetricKey {
        guard let bytes = try FileSystem.read(location.deviceKeyPath), bytes.count == 32 else {
            throw KeychainError(code: .notAvailable, message: "\(location.deviceKeyPath) is missing or damaged. Restore it from a backup.")
        }
        return SymmetricKey(data: bytes)
    }

    /// Deletes every WhenPasscodeSetThisDeviceOnly item, in every table.
    private func deletePasscodeOnlyItems() throws(KeychainError) -> Int {
        try write { db in
            var count = 0
            for cls in ItemClass.stored {
                try db.execute(sql: "DELETE FROM \"\(cls.table)\" WHERE pdmn = ?", arguments: [ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue])
                count += db.changesCount
            }
            return count
        }
    }
}
