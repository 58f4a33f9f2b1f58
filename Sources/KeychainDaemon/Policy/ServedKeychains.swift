import Foundation
import KeychainCore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One user's keychain as keychaind serves it: the engine (with its own lock state, passcode and settings), the
/// user it belongs to, and its program registry, read again whenever the file changes. Its sync engine is the process's
/// (``SyncEngineRegistry``), when keychaind was built with the sync client.
package final class ServedKeychain: Sendable {
    /// The user whose keychain this is (the kernel's uid of the processes it serves).
    package let uid: UInt32
    package let engine: KeychainEngine
    private let registryCache = Mutex<(stamp: FileStamp, registry: AppRegistry, generation: Int)?>(nil)

    package init(uid: UInt32, engine: KeychainEngine) {
        self.uid = uid
        self.engine = engine
    }

    /// The keychain's program registry, read again whenever the file changes.
    package func registry() throws(KeychainError) -> AppRegistry {
        try registryAndGeneration().registry
    }

    /// The registry, and a number that changes whenever it was read again (0 while there is no registry file): what
    /// a session's cached access policy is checked against (``Session/cachedPolicy``).
    func registryAndGeneration() throws(KeychainError) -> (registry: AppRegistry, generation: Int) {
        guard let stamp = FileStamp(path: engine.location.registryPath) else {
            if errno == ENOENT { return (AppRegistry(), 0) }
            throw KeychainError(code: .io, message: "Cannot read \(engine.location.registryPath). Check its permissions.")
        }
        let cached = registryCache.withLock { $0 }
        if let cached, cached.stamp == stamp { return (cached.registry, cached.generation) }
        let registry = try engine.appRegistry()
        let generation = (cached?.generation ?? 0) + 1
        registryCache.withLock { $0 = (stamp, registry, generation) }
        return (registry, generation)
    }
}

/// The keychains one keychaind serves, by the uid the kernel gives for each connection. This is the one seam
/// between keychaind's two modes; everything after it (sessions, policy, requests) is the same code:
/// - the **per-user** keychaind serves one keychain, to the processes of the user it runs as, and refuses others
///   (``single(_:uid:)``);
/// - the **system** keychaind (`keychaind --system`, as Apple's securityd) runs as a system user and serves every
///   local user their own keychain, in `STATE/UID/`, opened at that user's first connection and kept open while
///   keychaind runs (``perUser(stateDirectory:maximum:idleLock:logger:)``). A user's processes can neither open
///   those files (the folders belong to the system user, 0700) nor reach another user's keychain: which keychain
///   a connection uses is decided by the kernel's uid of the peer, never by anything the client says.
package final class ServedKeychains: Sendable {
    private enum Source: Sendable {
        case single(ServedKeychain)
        case perUser(stateDirectory: String, maximum: Int, idleLock: Double, logger: Logger)
    }
    private let source: Source
    /// The system mode's open keychains, by uid.
    private let opened = Mutex<[UInt32: ServedKeychain]>([:])

    private init(_ source: Source) {
        self.source = source
    }

    /// A per-user keychaind's one keychain, served to the processes of `uid` only.
    package static func single(_ engine: KeychainEngine, uid: UInt32) -> ServedKeychains {
        ServedKeychains(.single(ServedKeychain(uid: uid, engine: engine)))
    }

    /// The system keychaind's keychains: user `UID`'s in `stateDirectory/UID`, a folder of keychaind's own user
    /// (0700), created and opened at the user's first connection. At most `maximum` users' keychains are open at
    /// once; a further user is refused with `errSecNotAvailable` until keychaind restarts.
    package static func perUser(stateDirectory: String, maximum: Int, idleLock: Double, logger: Logger) -> ServedKeychains {
        ServedKeychains(.perUser(stateDirectory: stateDirectory, maximum: max(1, maximum), idleLock: idleLock, logger: logger))
    }

    /// Whether this is the system keychaind's set (one keychain per user).
    package var servesEveryUser: Bool {
        if case .perUser = source { return true }
        return false
    }

    /// The keychain the processes of `uid` use: the one keychain when `uid` is its user, or (system mode) that
    /// user's own, opened now if it is not yet. Throws `errSecMissingEntitlement` for another user of a per-user
    /// keychaind, and the reason when a user's keychain cannot be opened.
    package func keychain(for uid: UInt32) throws(KeychainError) -> ServedKeychain {
        switch source {
        case .single(let keychain):
            guard uid == keychain.uid else {
                throw KeychainError(code: .missingEntitlement, message: "keychaind serves user \(keychain.uid) only; a process of user \(uid) connected.")
            }
            return keychain
        case .perUser(let state, let maximum, let idleLock, let logger):
            // Opened under the lock, so two first connections of one user never open its keychain twice. Sessions
            // keep their keychain, so only first connections (and the idle lock's look) wait here.
            return try opened.withLock { (open: inout [UInt32: ServedKeychain]) throws(KeychainError) -> ServedKeychain in
                if let keychain = open[uid] { return keychain }
                guard open.count < maximum else {
                    throw KeychainError(code: .notAvailable, message: "keychaind already serves the keychains of \(maximum) users; ask the administrator to raise --max-users.")
                }
                let keychain = try Self.open(uid: uid, stateDirectory: state, idleLock: idleLock, logger: logger)
                open[uid] = keychain
                return keychain
            }
        }
    }

    /// The keychains open now.
    package var open: [ServedKeychain] {
        switch source {
        case .single(let keychain): [keychain]
        case .perUser: opened.withLock { Array($0.values) }
        }
    }

    /// Closes every open keychain's database (at shutdown, after the last request).
    package func closeAll(logger: Logger) {
        for keychain in open {
            for other in keychain.engine.openKeychains { try? other.close() }
            do {
                try keychain.engine.close()
            } catch {
                logger.error("closing a database failed", metadata: ["uid": "\(keychain.uid)", "reason": "\(error.message)"])
            }
        }
    }

    /// User `uid`'s keychain in `stateDirectory/UID`: the folder is made (0700) when missing, and must be a folder
    /// of keychaind's own user, not a link.
    static func open(uid: UInt32, stateDirectory: String, idleLock: Double, logger: Logger) throws(KeychainError) -> ServedKeychain {
        let home = stateDirectory + "/\(uid)"
        if mkdir(home, 0o700) != 0, errno != EEXIST {
            throw KeychainError(code: .io, message: "keychaind cannot create \(home) for user \(uid) (\(String(cString: strerror(errno)))). Check that \(stateDirectory) belongs to keychaind's user.")
        }
        try checkOwnFolder(home)
        var userLogger = logger
        userLogger[metadataKey: "uid"] = "\(uid)"
        do throws(KeychainError) {
            let engine = try KeychainEngine(location: KeychainLocation(home: home), logger: userLogger, defaultIdleTimeout: idleLock > 0 ? idleLock : nil)
            if uid == 0 {
                // The machine's System keychain (`/Library/Keychains/System.keychain` on macOS), for root only.
                let systemHome = stateDirectory + "/system"
                if mkdir(systemHome, 0o700) != 0, errno != EEXIST {
                    throw KeychainError(code: .io, message: "keychaind cannot create \(systemHome) (\(String(cString: strerror(errno)))).")
                }
                try checkOwnFolder(systemHome)
                engine.attachSystemKeychain(try KeychainEngine(location: KeychainLocation(home: systemHome), logger: logger, defaultIdleTimeout: idleLock > 0 ? idleLock : nil))
            }
            logger.info("opened a user's keychain", metadata: ["uid": "\(uid)"])
            return ServedKeychain(uid: uid, engine: engine)
        } catch {
            throw KeychainError(code: error.code, message: "keychaind cannot open the keychain of user \(uid) in \(home): \(error.message)", cause: error)
        }
    }

    /// Refuses `path` unless it is a folder (not a link) of this process's user; makes it exactly 0700.
    package static func checkOwnFolder(_ path: String) throws(KeychainError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw KeychainError(code: .io, message: "keychaind cannot look at \(path) (\(String(cString: strerror(errno)))).")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(code: .io, message: "\(path) is not a folder (a link or a file); remove it and restart keychaind.")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(code: .io, message: "\(path) belongs to user \(info.st_uid), not to keychaind's user \(geteuid()); fix its owner (chown) or remove it.")
        }
        if info.st_mode & 0o7777 != 0o700, chmod(path, 0o700) != 0 {
            throw KeychainError(code: .io, message: "keychaind cannot make \(path) private (chmod 0700: \(String(cString: strerror(errno)))).")
        }
    }
}
