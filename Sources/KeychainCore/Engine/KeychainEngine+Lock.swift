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
            let header = try Keybag.header(bytes)
            guard header.passcode != nil else {
                // No passcode: nothing to unlock, everything is available (collections a Secret Service client
                // locked open again).
                try reloadWithoutPasscode(bytes)
                secretServiceLocks.keychainUnlocked()
                return
            }
            let bag = try openThrottled(bytes, deviceKey: deviceKey(), passcode: passcode)
            if header.version == Keybag.legacyPasscodeVersion {
                try upgradeLegacyKeybag(bag, passcode: passcode)
            }
            keys.set(bag.classKeys, metadataKey: bag.metadataKey, state: .unlocked)
            secretServiceLocks.keychainUnlocked()
            markUsed()
            logger.debug("unlocked")
        }
    }

    /// Checks the passcode without changing the lock state, for a proof of presence (`.devicePasscode`,
    /// `.userPresence`): a wrong one fails with `errSecAuthFailed` and counts in the same throttle as unlocking.
    package func verifyPasscode(_ passcode: String) throws(KeychainError) {
        try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            guard let bytes = try FileSystem.read(location.keybagPath) else {
                throw KeychainError(code: .notAvailable, message: "The keybag is missing from \(location.home).")
            }
            guard try Keybag.header(bytes).passcode != nil else { return }
            _ = try openThrottled(bytes, deviceKey: deviceKey(), passcode: passcode)
        }
    }

    /// Brings this process's lock state in line with a keybag another process changed: a passcode set
    /// elsewhere makes the keys held here "unlocked" (no longer "no passcode"), so the next lock or
    /// admin check needs the passcode; a passcode removed elsewhere reloads the keys without one. Cheap when
    /// nothing changed (one `stat`). keychaind calls it before every request.
    package func followKeybagChanges() throws(KeychainError) {
        guard let stamp = FileStamp(path: location.keybagPath) else { return }
        guard
            keybagStamp.withLock({ old in
                defer { old = stamp }
                return old != stamp
            })
        else { return }
        try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            guard let bytes = try FileSystem.read(location.keybagPath) else { return }
            let hasPasscode = try Keybag.header(bytes).passcode != nil
            switch (lockState, hasPasscode) {
            case (.noPasscode, true):
                keys.markPasscodeSet()
                markUsed()  // the idle time starts now, not when the keychain was last used without a passcode
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
    /// keychaind's Secret Service first takes what it needs to answer searches while locked (``SecretServiceLocks``).
    package func lock() {
        SecretStore(engine: self).snapshotBeforeLock()
        keys.dropWhenUnlockedKeys()
        presence.removeAll()  // no proof of presence outlives a lock
        logger.debug("locked")
    }

    /// Sets (`old` nil), changes, or removes (`new` nil) the passcode. Class keys are re-wrapped, never items
    /// re-encrypted. Removing the passcode destroys the WhenPasscodeSetThisDeviceOnly key and deletes its items.
    /// A new passcode's scrypt parameters are calibrated here, on this machine, to the engine's `passcodePolicy`
    /// (at least 64 MiB and 250 ms), and recorded in the keybag (version 3) with the measured time.
    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        if let new, new.isEmpty { throw .param("The new passcode is empty. To remove the passcode, pass none.") }
        let parameters = new.map { _ in PasscodeKDF.tuned(policy: passcodePolicy, random: random) }
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
            try FileSystem.writeAtomically(
                bag.encode(deviceKey: device, passcode: passcode, random: random),
                to: location.keybagPath, exclusive: false)
            // A version-2 keybag's count file is left over once the keybag is version 3 (or has no passcode).
            try? FileManager.default.removeItem(atPath: location.throttlePath)
            keys.set(classKeys, metadataKey: bag.metadataKey, state: new == nil ? .noPasscode : .unlocked)
            secretServiceLocks.drop()  // the keys are held: the engine answers again
            markUsed()
        }
    }

    /// Opens a passcode-protected keybag, honouring and recording the wrong-passcode throttle: in the keybag
    /// itself (version 3), or in `keychain.throttle` for a version-2 keybag not yet upgraded.
    /// Called with the keychain's file lock held.
    private func openThrottled(_ bytes: Data, deviceKey: SymmetricKey, passcode: String) throws(KeychainError) -> Keybag {
        let inKeybag = try Keybag.header(bytes).version == Keybag.passcodeVersion
        let save = { (throttle: PasscodeThrottle) throws(KeychainError) in
            if inKeybag {
                try FileSystem.writeAtomically(
                    Keybag.replacingThrottle(in: bytes, with: throttle, deviceKey: deviceKey, random: self.random),
                    to: self.location.keybagPath, exclusive: false)
            } else {
                try throttle.save(self.location)
            }
        }
        var throttle: PasscodeThrottle
        if inKeybag {
            if let stored = try Keybag.throttle(in: bytes, deviceKey: deviceKey) {
                throttle = stored
            } else {
                // An edited record: the worst case, recorded so that its hour runs from now and then ends.
                throttle = PasscodeThrottle(failures: 9, notBefore: now().timeIntervalSince1970 + PasscodeThrottle.delay(afterFailures: 9))
                try save(throttle)
                logger.warning("the keybag's wrong-passcode record failed authentication; counted as the worst case")
            }
        } else {
            throttle = try PasscodeThrottle.load(location)
        }
        let wait = throttle.notBefore - now().timeIntervalSince1970
        if wait > 0 {
            throw KeychainError(code: .authenticationFailed, message: "Too many wrong passcodes. Try again in \(Int(wait.rounded(.up))) seconds.")
        }
        do throws(KeychainError) {
            let bag = try Keybag.decode(bytes, deviceKey: deviceKey, passcode: passcode)
            if throttle.failures > 0 { try save(PasscodeThrottle()) }
            return bag
        } catch  where error.code == .authenticationFailed {
            throttle.failures += 1
            throttle.notBefore = now().timeIntervalSince1970 + PasscodeThrottle.delay(afterFailures: throttle.failures)
            try save(throttle)
            logger.notice("wrong passcode", metadata: ["failures": "\(throttle.failures)"])
            throw error
        }
    }

    /// Rewrites a version-2 keybag (scrypt from N = 2^14, the throttle in `keychain.throttle`) as version 3 with
    /// parameters calibrated now, once its passcode has opened it; `keychain.throttle` goes (its count was reset
    /// by this successful unlock). Called with the keychain's file lock held.
    private func upgradeLegacyKeybag(_ bag: Keybag, passcode: String) throws(KeychainError) {
        let parameters = PasscodeKDF.tuned(policy: passcodePolicy, random: random)
        try FileSystem.writeAtomically(
            bag.encode(deviceKey: deviceKey(), passcode: (passcode, parameters), random: random),
            to: location.keybagPath, exclusive: false)
        try? FileManager.default.removeItem(atPath: location.throttlePath)
        logger.notice(
            "keybag upgraded to version 3",
            metadata: [
                "log2N": "\(parameters.log2N)", "p": "\(parameters.parallelism)",
                "ms": "\(parameters.calibratedMilliseconds)",
            ])
    }

    private func reloadWithoutPasscode(_ bytes: Data) throws(KeychainError) {
        let bag = try Keybag.decode(bytes, deviceKey: deviceKey())
        keys.set(bag.classKeys, metadataKey: bag.metadataKey, state: .noPasscode)
        secretServiceLocks.drop()
    }

    /// The device key, as read or unsealed when the keychain opened.
    func deviceKey() throws(KeychainError) -> SymmetricKey { deviceKeyMaterial }

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
