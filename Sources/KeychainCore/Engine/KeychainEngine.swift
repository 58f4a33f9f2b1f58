import Foundation
import Synchronization
import Logging
import Crypto
import GRDB

/// The keychain engine shared by Keychain Services, KeychainKit and the `security` tool: it owns the
/// encrypted SQLite store and applies Apple's SecItem semantics to typed requests.
///
/// Thread-safe: one engine serves every thread of a process; several processes may open the same
/// keychain at once (SQLite WAL with full sync, immediate write transactions, a busy timeout).
package final class KeychainEngine: Sendable {
    package let location: KeychainLocation
    let pool: DatabasePool
    /// The connections reads use first (see ``ReadConnections``).
    let readers: ReadConnections
    /// Every write goes through here, so concurrent writes share a commit.
    let writer: GroupCommitWriter
    /// The keybag file's identity when last looked at (see ``followKeybagChanges()``).
    let keybagStamp = Mutex<FileStamp?>(nil)
    /// The class keys this process holds now (they change with lock, unlock and passcode changes).
    let keys: KeyState
    /// Where the engine logs (the program's choice: keychaind's log, or only errors for the `security` tool).
    package let logger: Logger
    let random: any RandomSource
    /// The TPM the device key is sealed to or would be (nil: none).
    let tpm: TPMDevice?
    /// What a new passcode's (and a backup password's) scrypt parameters are calibrated to.
    let passcodePolicy: PasscodeKDF.Policy
    /// The device key, read (or unsealed) once when the keychain opens.
    let deviceKeyMaterial: SymmetricKey
    /// The time, injectable so passcode throttling can be tested without waiting.
    let now: @Sendable () -> Date
    /// The clocks idle time and suspends are measured with (see ``applyLockSettings(countingAsUse:)``).
    let clocks: LockClocks
    /// Seconds without use after which the keychain locks when `keychain.settings` sets nothing (nil: never).
    let defaultIdleTimeout: Double?
    /// Last use, last suspend reading and the settings, for ``applyLockSettings(countingAsUse:)``.
    let autoLock: Mutex<AutoLockState>
    /// The SQL text of each form of SELECT the engine has made (see ``selectSQL(_:groups:columns:)``).
    let selectStatements = Mutex<[SelectShape: String]>([:])
    /// The proofs of presence this engine holds (emptied by every lock).
    let presence = PresenceLedger()
    /// Who hears of committed item changes (see ``observeChanges(_:)``).
    let changeObservers = ChangeObservers()
    /// The Secret Service's collections and aliases as last read, shared by every ``SecretStore`` over this engine
    /// (keychaind's provider and an import through its socket), so that a change made by one is seen by the others.
    let secretServiceMetadata = SecretStore.MetadataCache()
    /// The Secret Service's searches as last answered, shared by every ``SecretStore`` over this engine.
    let secretServiceSearches = SecretStore.SearchCache()
    /// The Secret Service's in-memory `session` collection, shared by every ``SecretStore`` over this engine.
    let secretServiceSession = SessionCollection()
    /// The Secret Service's locked collections, and its item metadata kept across a lock (see ``SecretServiceLocks``).
    let secretServiceLocks = SecretServiceLocks()
    /// The user's other keychains, when this is a login keychain (see ``keychain(named:)``).
    let otherKeychains = OtherKeychains()
    /// The old private groups (executable names) already looked at for items to move to the program's full path
    /// (see ``adoptLegacyPrivateGroup(_:as:)``).
    let legacyGroupsChecked = Mutex<Set<String>>([])
    /// The PKCS#11 tokens whose keys and certificates searches show in `com.apple.token` (nil: none; see
    /// `KeychainEngine+PKCS11.swift`).
    let pkcs11: PKCS11Registry?

    /// The keys usable right now.
    var crypto: ItemCrypto { keys.crypto }

    /// Schema version of `keychain-2.db` (`PRAGMA user_version`).
    package static let schemaVersion = 3

    /// Opens the keychain at `location`, creating it when missing unless `createIfMissing` is false (read-only
    /// work): then a folder without a keychain database is left as it is (not even created) and the open fails
    /// with ``KeychainStatus/noSuchKeychain`` (`errSecNoSuchKeychain`).
    ///
    /// `defaultIdleTimeout` is how long the keychain may go unused before it locks when `keychain.settings` sets
    /// nothing (nil or 0: never); `clocks` measure that time and the machine's suspends.
    ///
    /// `tpm` is the TPM 2.0 a new keychain's device key is sealed to, and an existing plain one migrated to (see
    /// ``TPMDevice/fromEnvironment(_:defaultDevice:)``); a keychain sealed to another machine's TPM fails to open
    /// with `errSecInvalidKeychain`. `passcodePolicy` is what passcodes are calibrated to: production's 64 MiB
    /// and 250 ms unless a test asks for less. `pkcs11` is the registry whose tokens' items searches show (the
    /// programs pass ``PKCS11Registry/shared``; nil, the default: no token items).
    package init(
        location: KeychainLocation, createIfMissing: Bool = true, logger: Logger = Logger(label: "swift-keychain"),
        random: any RandomSource = SystemRandom(), now: @escaping @Sendable () -> Date = { Date() },
        defaultIdleTimeout: Double? = Double(KeychainSettings.defaultIdleTimeout),
        clocks: LockClocks = .system, tpm: TPMDevice? = TPMDevice.fromEnvironment(),
        passcodePolicy: PasscodeKDF.Policy = .production, pkcs11: PKCS11Registry? = nil
    ) throws(KeychainError) {
        self.location = location
        self.pkcs11 = pkcs11
        self.tpm = tpm
        self.passcodePolicy = passcodePolicy
        self.logger = logger
        self.random = random
        self.now = now
        self.clocks = clocks
        self.defaultIdleTimeout = defaultIdleTimeout
        autoLock = Mutex(AutoLockState(lastUse: clocks.sinceBoot(), suspended: clocks.suspended()))
        if !createIfMissing, !FileManager.default.fileExists(atPath: location.databasePath) {
            // A folder on the way that is a file, or that this user may not enter, is the cause, not a missing keychain.
            if let obstacle = FileSystem.obstacle(to: location.home) { throw obstacle.error(location.home) }
            throw .noSuchKeychain(location)
        }
        try FileSystem.ensurePrivateDirectory(location.home)
        // Opening is serialized across processes: two first opens must not race to create the keybag or to
        // switch a new database to WAL.
        let (deviceKey, keybag, passcodeSet, pool) = try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            try KeychainEngine.open(location, tpm: tpm, logger: logger, random: random)
        }
        deviceKeyMaterial = deviceKey
        self.pool = pool
        readers = ReadConnections(path: location.databasePath, configuration: pool.configuration, limit: 8)
        writer = GroupCommitWriter(pool: pool)
        keys = KeyState(keybag: keybag, passcodeSet: passcodeSet, random: random)
        logger.debug("opened keychain", metadata: ["home": "\(location.home)"])
    }

    // MARK: Database access with error mapping

    /// Runs `body` on a reader connection outside any transaction: every read the engine makes is one SELECT
    /// (an identity's certificate and key are two, each checked on its own), which SQLite runs on one WAL
    /// snapshot, so an explicit `BEGIN`/`COMMIT` pair around it would only add two statements to each call.
    func read<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try readers.read(fallback: pool, body)
        } catch {
            throw mapError(error)
        }
    }

    /// Changes whenever a write transaction of this engine ends (see ``GroupCommitWriter/generation``).
    package var writeGeneration: UInt64 { writer.generation }

    func write<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try writer.perform(body)
        } catch {
            throw mapError(error)
        }
    }

    func mapError(_ error: any Error) -> KeychainError {
        if let error = error as? KeychainError { return error }
        if let error = error as? DatabaseError {
            logger.error("database error", metadata: ["code": "\(error.resultCode.rawValue)"])
            switch error.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return KeychainError(code: .io, message: "The keychain database stayed busy too long; another process holds a long write. Try again.", cause: DescribedError(error))
            case .SQLITE_FULL:
                return KeychainError(code: .io, status: .diskFull, message: "The disk is full. Free some space and try again.", cause: DescribedError(error))
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return KeychainError(code: .notAvailable, message: "keychain-2.db is damaged. Restore it from a backup, or move it away to start a new keychain.", cause: DescribedError(error))
            default:
                return KeychainError(
                    code: .io, message: "The keychain database failed (SQLite code \(error.resultCode.rawValue)). Check KEYCHAIN_HOME's disk and permissions.", cause: DescribedError(error))
            }
        }
        return KeychainError(code: .internal, message: "Unexpected failure.", cause: DescribedError(error))
    }
}

extension KeychainError {
    /// There is no keychain database at `location` and none was to be created.
    static func noSuchKeychain(_ location: KeychainLocation) -> KeychainError {
        KeychainError(
            code: .notAvailable, status: .noSuchKeychain,
            message: "There is no keychain in \(location.home) (no keychain-2.db). Add an item, or start keychaind, to create one; or set KEYCHAIN_HOME to the folder of an existing keychain.")
    }
}

/// A sendable description of an underlying error. Database errors may quote SQL and its arguments, which
/// can contain hashes but never values; only the result code and message are kept.
package struct DescribedError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ error: any Error) {
        if let db = error as? DatabaseError {
            description = "SQLite error \(db.resultCode.rawValue): \(db.message ?? "")"
        } else {
            description = String(describing: type(of: error))
        }
    }
}

extension KeychainEngine {
    /// Write transactions committed by this engine, the writes they held (group commit puts several concurrent
    /// writes in one transaction), and the writer's serial time.
    package var commitStatistics: CommitStatistics { writer.statistics }

    /// Closes the database after the writes in progress: the WAL is checkpointed and the files released.
    /// The engine must not be used afterwards.
    package func close() throws(KeychainError) {
        readers.close()
        do {
            try pool.close()
        } catch {
            throw mapError(error)
        }
    }
}
