import Foundation
import KeychainCore
import KeychainProtocol
import Logging
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Starts keychaind's services on a keychain and runs them until SIGTERM or SIGINT: the one keychaind per
/// keychain folder, its socket, the request server, and the idle lock.
package struct DaemonLauncher: Sendable {
    /// The socket to listen on; nil: the one systemd passed, else `$XDG_RUNTIME_DIR/keychain/keychaind.sock`.
    package var socket: String?
    /// Seconds without a request before the keychain locks (0: never), unless `keychain.settings` says otherwise.
    /// The engine applies it (``KeychainEngine/applyLockSettings(countingAsUse:)``).
    package var idleLock: Double
    package var logger: Logger

    package init(socket: String?, idleLock: Double, logger: Logger) {
        self.socket = socket
        self.idleLock = idleLock
        self.logger = logger
    }

    /// Opens the keychain the environment names and serves it until asked to stop; then finishes the requests in
    /// progress and closes the database. `ready` runs once the socket accepts connections.
    package func run(ready: @escaping @Sendable () -> Void) async throws {
        let environment = KeychainLocation.processEnvironment()
        let listener = try resolveListener(environment)
        let location = KeychainLocation.fromEnvironment(environment)

        // One daemon per keychain: a second one waits for nothing and says why.
        let guardFD = try Self.claimKeychain(location)
        defer { close(guardFD) }

        let engine: KeychainEngine
        do {
            engine = try KeychainEngine(location: location, logger: logger, defaultIdleTimeout: idleLock > 0 ? idleLock : nil)
        } catch {
            throw StartFailure("keychaind cannot open the keychain in \(location.home): \(error.message)")
        }
        let threads = NIOThreadPool(numberOfThreads: 64)
        threads.start()
        let dispatcher = RequestDispatcher(authority: Authority(engine: engine, logger: logger), logger: logger)
        let server = DaemonServer(listener: listener, dispatcher: dispatcher, threads: threads, logger: logger, ready: ready)
        let idle = IdleLock(engine: engine)
        let group = ServiceGroup(configuration: .init(
            services: [
                .init(service: server, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: idle, successTerminationBehavior: .ignore),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
        try await threads.shutdownGracefully()
        do {
            try engine.close()
        } catch {
            logger.error("closing the database failed", metadata: ["reason": "\(error.message)"])
        }
        logger.notice("stopped")
    }

    /// The socket systemd passed (`LISTEN_FDS`), else `socket`, else the default path (its folder made 0700).
    func resolveListener(_ environment: [String: String]) throws -> Listener {
        if let pid = ProcessInfo.processInfo.environment["LISTEN_PID"], Int32(pid) == getpid(),
           let count = ProcessInfo.processInfo.environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 {
            unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES")
            return .inherited(3, path: socket ?? DaemonSocket.defaultPath(environment))
        }
        guard let path = socket ?? DaemonSocket.defaultPath(environment) else {
            throw StartFailure("XDG_RUNTIME_DIR is not set, so there is no default socket. Pass --socket PATH.")
        }
        let folder = NSString(string: path).deletingLastPathComponent
        do {
            try FileSystem.ensurePrivateDirectory(folder)
        } catch {
            throw StartFailure(error.message)
        }
        if DaemonSocket.accepts(path) {
            throw StartFailure("Another keychaind already serves \(path). Stop it first (systemctl --user stop keychaind).")
        }
        return .path(path)
    }

    /// Holds `keychaind.pid` locked for the daemon's life, so two daemons never serve one keychain.
    static func claimKeychain(_ location: KeychainLocation) throws -> Int32 {
        do {
            try FileSystem.ensurePrivateDirectory(location.home)
        } catch {
            throw StartFailure(error.message)
        }
        let path = location.home + "/keychaind.pid"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StartFailure("Cannot open \(path): \(String(cString: strerror(errno))).") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StartFailure("Another keychaind already serves \(location.home).")
        }
        _ = ftruncate(fd, 0)
        let text = Array("\(getpid())\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }
}

/// Why keychaind cannot start, printed as `Error: …` (without the usage text a flag mistake gets).
package struct StartFailure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
