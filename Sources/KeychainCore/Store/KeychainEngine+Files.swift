import Foundation
import Crypto
import GRDB
import Logging

/// Opening a keychain folder: the device key, the keybag and the database, created on first use.
extension KeychainEngine {
    // MARK: Files

    static func open(_ location: KeychainLocation, random: any RandomSource) throws(KeychainError) -> (Keybag, Bool, DatabasePool) {
        // None of the files may be a link (each is also opened O_NOFOLLOW); checked first, so a link is reported
        // as one rather than as a missing keybag or device key. SQLite opens the database, -wal, -shm and
        // -journal following links, so this check is their only guard.
        let database = location.databasePath
        try FileSystem.refuseSymbolicLinks([location.deviceKeyPath, location.keybagPath,
                                            database, database + "-wal", database + "-shm", database + "-journal"])
        let deviceKey = try KeychainEngine.loadOrCreateDeviceKey(location, random: random)
        let (keybag, passcodeSet) = try KeychainEngine.loadOrCreateKeybag(location, deviceKey: deviceKey, random: random)
        try FileSystem.createPrivateFile(database)
        var config = Configuration()
        config.busyMode = .timeout(120)
        config.label = "keychain"
        config.maximumReaderCount = 4
        config.prepareDatabase { db in
            // Every acknowledged write is fsynced before the call returns.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            let pool = try DatabasePool(path: location.databasePath, configuration: config)
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try KeychainEngine.migrate(db)
                    return .commit
                }
            }
            return (keybag, passcodeSet, pool)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .notAvailable, message: "Cannot open the keychain database \(location.databasePath). If it is damaged, move it away (a new, empty keychain is created).", cause: DescribedError(error))
        }
    }


    static func loadOrCreateDeviceKey(_ location: KeychainLocation, random: any RandomSource) throws(KeychainError) -> SymmetricKey {
        for _ in 0 ..< 2 {
            if let bytes = try FileSystem.read(location.deviceKeyPath) {
                guard bytes.count == 32 else {
                    throw KeychainError(code: .corruptData, message: "\(location.deviceKeyPath) is not a device key (expected 32 bytes). Restore it from a backup.")
                }
                return SymmetricKey(data: bytes)
            }
            // A keybag without its device key can never be opened again: say so rather than start over.
            if FileManager.default.fileExists(atPath: location.keybagPath) {
                throw KeychainError(code: .notAvailable, message: "\(location.deviceKeyPath) is missing, and the keybag beside it cannot be opened without it. Restore device.key from a backup; to start an empty keychain instead, move the whole folder away.")
            }
            try FileSystem.writeAtomically(random.bytes(32), to: location.deviceKeyPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create \(location.deviceKeyPath).")
    }

    /// The keybag as this process first sees it ("boot"): with a passcode set, only `dk`/`dku` are unwrapped.
    static func loadOrCreateKeybag(_ location: KeychainLocation, deviceKey: SymmetricKey, random: any RandomSource) throws(KeychainError) -> (Keybag, Bool) {
        for _ in 0 ..< 2 {
            if let bytes = try FileSystem.read(location.keybagPath) {
                return (try Keybag.decode(bytes, deviceKey: deviceKey), try Keybag.header(bytes).passcode != nil)
            }
            // Items sealed under a lost keybag would silently vanish from every query: refuse instead.
            if let size = (try? FileManager.default.attributesOfItem(atPath: location.databasePath))?[.size] as? Int, size > 0 {
                throw KeychainError(code: .notAvailable, message: "\(location.keybagPath) is missing, and the items in keychain-2.db cannot be read without it. Restore the keybag from a backup; to start an empty keychain instead, move the whole folder away.")
            }
            let bag = Keybag.generate(random: random)
            try FileSystem.writeAtomically(bag.encode(deviceKey: deviceKey, random: random), to: location.keybagPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create \(location.keybagPath).")
    }
}
