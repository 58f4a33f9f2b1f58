import ArgumentParser
import CKeychainLinux
import Foundation
import KeychainCore
import Logging
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// keychaind: the one process that opens the keychain in `KEYCHAIN_HOME`, holds its unlocked class keys in
/// memory, and serves SecItem calls over a Unix-domain socket, deciding each caller's access groups from
/// the kernel's peer credentials.
@main
struct Keychaind: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychaind",
        abstract: "The keychain daemon: serves the keychain in KEYCHAIN_HOME to the programs of this user.",
        discussion: """
        Listens on $XDG_RUNTIME_DIR/keychain/keychaind.sock (or --socket, or the socket systemd passes), \
        and serves SecItem calls, lock/unlock and backups. Programs get the access groups registered for \
        them with `security app add`; others get a private group of their own. SIGTERM finishes the \
        requests in progress and closes the database.
        """
    )

    @Flag(name: .long, help: "Run in the terminal, logging to standard error (the default under systemd too; kept for clarity in scripts).")
    var foreground = false

    @Option(name: .long, help: "The socket to listen on (default: $XDG_RUNTIME_DIR/keychain/keychaind.sock).")
    var socket: String?

    @Option(name: .customLong("idle-lock"), help: "Lock the keychain after this many seconds without a request (0: never), unless `security set-keychain-settings` set another time.")
    var idleLock: Double = Double(KeychainSettings.defaultIdleTimeout)

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "notice"

    mutating func run() async throws {
        // No core dumps, no ptrace or /proc/PID/mem by other processes of this user: the class keys live here.
        if ckeychain_set_nondumpable() != 0 {
            throw StartFailure("keychaind could not make itself non-dumpable (prctl failed); refusing to hold keys.")
        }
        let level = Logger.Level(rawValue: logLevel) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "keychaind")
        let environment = KeychainLocation.processEnvironment()
        let listener = try resolveListener(environment)
        let location = KeychainLocation.fromEnvironment(environment)

        // One daemon per keychain: a second one waits for nothing and says why.
        let guardFD = try Self.claimKeychain(location)
        defer { close(guardFD) }

        let engine: KeychainEngine
        do {
            engine = try KeychainEngine(location: location, logger: logger)
        } catch {
            throw StartFailure("keychaind cannot open the keychain in \(location.home): \(error.message)")
        }
        let threads = NIOThreadPool(numberOfThreads: 64)
        threads.start()
        let activity = ActivityClock()
        let handler = RequestHandler(authority: Authority(engine: engine, logger: logger), logger: logger)
        let server = DaemonServer(listener: listener, handler: handler, threads: threads, activity: activity, logger: logger) {
            // Tests and scripts wait for this line on stderr before connecting.
            FileHandle.standardError.write(Data("keychaind: ready\n".utf8))
        }
        let idle = IdleLock(engine: engine, activity: activity, timeout: idleLock, logger: logger)
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

    /// The socket systemd passed (`LISTEN_FDS`), else `--socket`, else the default path (its folder made 0700).
    func resolveListener(_ environment: [String: String]) throws -> Listener {
        if let pid = ProcessInfo.processInfo.environment["LISTEN_PID"], Int32(pid) == getpid(),
           let count = ProcessInfo.processInfo.environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 {
            unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES")
            return .inherited(3, path: socket ?? DaemonEndpoint.defaultPath(environment))
        }
        guard let path = socket ?? DaemonEndpoint.defaultPath(environment) else {
            throw StartFailure("XDG_RUNTIME_DIR is not set, so there is no default socket. Pass --socket PATH.")
        }
        let folder = NSString(string: path).deletingLastPathComponent
        do {
            try FileSystem.ensurePrivateDirectory(folder)
        } catch {
            throw StartFailure(error.message)
        }
        if DaemonClient(socketPath: path).isReachable() {
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
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
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
struct StartFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
