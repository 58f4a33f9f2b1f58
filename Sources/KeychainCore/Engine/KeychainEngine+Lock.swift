import Foundation
import Crypto

/// Lock, unlock and the passcode: the class keys this process holds, and the keybag on disk.
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
            markUsed()
            logger.debug("unlocked")
        }
    }

    /// Brings this process's lock state in line with a keybag another process changed: a passcode set
    /// elsewhere makes the keys held here "unlocked" (no longer "no passcode"), so the next lock or
    /// admin check needs the passcode; a passcode removed elsewhere reloads the keys without one. Cheap when
    /// nothing changed (one `stat`). keychaind calls it before every request.
    package func followKeybagChanges() throws(KeychainError) {
        guard let stamp = FileStamp(path: location.keybagPath) else { return }
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
                markUsed() // the idle time starts now, not when the keychain was last used without a passcode
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
            markUsed()
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
