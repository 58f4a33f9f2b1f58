import Foundation
import Crypto
import GRDB
import Logging

/// Opening a keychain folder: the device key, the keybag and the database, created on first use.
extension KeychainEngine {
    // MARK: Files

    static func open(
        _ location: KeychainLocation, tpm: TPMDevice?, logger: Logger,
        random: any RandomSource
    ) throws(KeychainError) -> (SymmetricKey, Keybag, Bool, DatabasePool) {
        // None of the files may be a link (each is also opened O_NOFOLLOW); checked first, so a link is reported
        // as one rather than as a missing keybag or device key. SQLite opens the database, -wal, -shm and
        // -journal following links, so this check is their only guard.
        let database = location.databasePath
        try FileSystem.refuseSymbolicLinks([
            location.deviceKeyPath, location.sealedDeviceKeyPath, location.keybagPath,
            database, database + "-wal", database + "-shm", database + "-journal",
        ])
        let deviceKey = try KeychainEngine.loadOrCreateDeviceKey(location, tpm: tpm, logger: logger, random: random)
        let (keybag, passcodeSet) = try KeychainEngine.loadOrCreateKeybag(location, deviceKey: deviceKey, random: random)
        try FileSystem.createPrivateFile(database)
        var config = Configuration()
        config.busyMode = .timeout(120)
        config.label = "keychain"
        config.maximumReaderCount = 4
        do {
            let pool = try DatabasePool(path: location.databasePath, configuration: config)
            try pool.writeWithoutTransaction { db in
                // Every acknowledged write is fsynced before the call returns. Set here, on the pool's one writer
                // connection, after the pool is open: GRDB switches a new pool's writer to WAL with
                // `synchronous = NORMAL` after running `prepareDatabase`, and NORMAL syncs the WAL only at
                // checkpoints, so a power loss could take back writes already acknowledged.
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try KeychainEngine.migrate(db)
                    return .commit
                }
            }
            return (deviceKey, keybag, passcodeSet, pool)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(
                code: .notAvailable, message: "Cannot open the keychain database \(location.databasePath). If it is damaged, move it away (a new, empty keychain is created).",
                cause: DescribedError(error))
        }
    }

    /// The device key: unsealed by the TPM when `device.key.tpm` exists; else read from the plain `device.key`
    /// (sealed to `tpm` on the way, when one answers: the migration of a keychain made without a TPM); else, for a
    /// new keychain, a fresh random key, sealed to `tpm` when there is one and written as `device.key` otherwise.
    static func loadOrCreateDeviceKey(
        _ location: KeychainLocation, tpm: TPMDevice?, logger: Logger,
        random: any RandomSource
    ) throws(KeychainError) -> SymmetricKey {
        for _ in 0..<2 {
            if let sealedBytes = try FileSystem.read(location.sealedDeviceKeyPath) {
                let key = try unsealDeviceKey(
                    SealedDeviceKey(decoding: sealedBytes, path: location.sealedDeviceKeyPath),
                    location: location, tpm: tpm)
                // A plain copy left by a migration that stopped half-way goes once the sealed one is proven.
                if let plain = try FileSystem.read(location.deviceKeyPath), Array(plain) == key {
                    try? FileManager.default.removeItem(atPath: location.deviceKeyPath)
                }
                return SymmetricKey(data: key)
            }
            if let bytes = try FileSystem.read(location.deviceKeyPath) {
                guard bytes.count == 32 else {
                    throw KeychainError(code: .corruptData, message: "\(location.deviceKeyPath) is not a device key (expected 32 bytes). Restore it from a backup.")
                }
                if let tpm { sealExisting(Array(bytes), location: location, tpm: tpm, logger: logger) }
                return SymmetricKey(data: bytes)
            }
            // A keybag without its device key can never be opened again: say so rather than start over.
            if FileManager.default.fileExists(atPath: location.keybagPath) {
                throw KeychainError(
                    code: .notAvailable,
                    message:
                        "\(location.deviceKeyPath) is missing, and the keybag beside it cannot be opened without it. Restore device.key (or device.key.tpm) from a backup; to start an empty keychain instead, move the whole folder away."
                )
            }
            let key = random.bytes(32)
            if let tpm {
                var sealed: TPMDevice.Sealed?
                do throws(TPMDevice.Failure) {
                    sealed = try tpm.seal(key)
                } catch {
                    if tpm.required {
                        throw KeychainError(
                            code: .notAvailable,
                            message:
                                "The TPM named by KEYCHAIN_TPM_TCTI (\(tpm.tcti)) could not seal the new keychain's device key: \(error). Start that TPM, or unset KEYCHAIN_TPM_TCTI (or set it to none) to keep the device key in a plain file.",
                            cause: DescribedError(error))
                    }
                    logger.warning("the TPM could not seal the device key; it is kept in a plain file", metadata: ["tcti": "\(tpm.tcti)", "error": "\(error)"])
                }
                if let sealed {
                    try FileSystem.writeAtomically(SealedDeviceKey(sealed: sealed).encoded, to: location.sealedDeviceKeyPath, exclusive: true)
                    logger.notice("device key sealed to the TPM", metadata: ["tcti": "\(tpm.tcti)"])
                    continue
                }
            }
            try FileSystem.writeAtomically(key, to: location.deviceKeyPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create the device key in \(location.home).")
    }

    /// Unseals the device key of a keychain sealed to a TPM; a keychain of another machine fails with
    /// `errSecInvalidKeychain` (``KeychainError/Code/sealedToAnotherMachine``).
    static func unsealDeviceKey(_ file: SealedDeviceKey, location: KeychainLocation, tpm: TPMDevice?) throws(KeychainError) -> [UInt8] {
        guard let tpm else {
            throw KeychainError(
                code: .sealedToAnotherMachine,
                message:
                    "The keychain in \(location.home) is sealed to a TPM, and no TPM is available here (no /dev/tpmrm0, or KEYCHAIN_TPM_TCTI=none). Open it on the machine whose TPM sealed it, with access to that TPM, or set KEYCHAIN_TPM_TCTI to that TPM."
            )
        }
        let key: [UInt8]
        do throws(TPMDevice.Failure) {
            key = try tpm.unseal(file.sealed)
        } catch {
            switch error {
            case .unreachable(let why):
                throw KeychainError(
                    code: .sealedToAnotherMachine,
                    message:
                        "The keychain in \(location.home) is sealed to a TPM, and the TPM at \(tpm.tcti) does not answer (\(why)). Check that this user may open the TPM (group tss for /dev/tpmrm0) or that KEYCHAIN_TPM_TCTI names the right one.",
                    cause: DescribedError(error))
            case .refused(let why):
                throw KeychainError(
                    code: .sealedToAnotherMachine,
                    message:
                        "The keychain in \(location.home) was sealed to another machine's TPM (or its TPM was cleared): this TPM cannot unseal its device key (\(why)). A keychain sealed to a TPM opens only on that machine; restore items there from a backup made with `security backup-keychain`.",
                    cause: DescribedError(error))
            case .failed(let why):
                throw KeychainError(
                    code: .notAvailable, message: "The TPM at \(tpm.tcti) failed to unseal the keychain's device key (\(why)). If the owner hierarchy has a password, remove it; else try again.",
                    cause: DescribedError(error))
            }
        }
        guard key.count == 32 else {
            throw KeychainError(
                code: .corruptData, message: "\(location.sealedDeviceKeyPath) unsealed to something that is not a device key. Restore it from a backup of this machine's keychain folder.")
        }
        return key
    }

    /// Seals a plain `device.key` to the TPM and removes the plain file once the TPM has given the key back.
    /// A TPM that does not answer leaves everything as it was (the keychain still opens from the plain file).
    static func sealExisting(_ key: [UInt8], location: KeychainLocation, tpm: TPMDevice, logger: Logger) {
        do {
            let sealed = try tpm.seal(key)
            guard try tpm.unseal(sealed) == key else { return }
            try FileSystem.writeAtomically(SealedDeviceKey(sealed: sealed).encoded, to: location.sealedDeviceKeyPath, exclusive: true)
            try FileManager.default.removeItem(atPath: location.deviceKeyPath)
            logger.notice("existing device key sealed to the TPM; the plain device.key is removed", metadata: ["tcti": "\(tpm.tcti)"])
        } catch {
            logger.warning("the existing device key could not be sealed to the TPM; it stays a plain file", metadata: ["tcti": "\(tpm.tcti)", "error": "\(error)"])
        }
    }

    /// The keybag as this process first sees it ("boot"): with a passcode set, only `dk`/`dku` are unwrapped.
    static func loadOrCreateKeybag(_ location: KeychainLocation, deviceKey: SymmetricKey, random: any RandomSource) throws(KeychainError) -> (Keybag, Bool) {
        for _ in 0..<2 {
            if let bytes = try FileSystem.read(location.keybagPath) {
                return (try Keybag.decode(bytes, deviceKey: deviceKey), try Keybag.header(bytes).passcode != nil)
            }
            // Items sealed under a lost keybag would silently vanish from every query: refuse instead.
            if let size = (try? FileManager.default.attributesOfItem(atPath: location.databasePath))?[.size] as? Int, size > 0 {
                throw KeychainError(
                    code: .notAvailable,
                    message:
                        "\(location.keybagPath) is missing, and the items in keychain-2.db cannot be read without it. Restore the keybag from a backup; to start an empty keychain instead, move the whole folder away."
                )
            }
            let bag = Keybag.generate(random: random)
            try FileSystem.writeAtomically(bag.encode(deviceKey: deviceKey, random: random), to: location.keybagPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create \(location.keybagPath).")
    }
}
