import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real `keychain-sync-server` from the build products on a new database of the PostgreSQL the environment gives
/// the tests (`KEYCHAIN_TEST_POSTGRES_SOCKET`, a folder holding its socket, and `KEYCHAIN_TEST_POSTGRES_USER`, a
/// superuser, default `postgres`), listening on 127.0.0.1 at a port the system chose. The database is made with
/// PostgreSQL's `createdb` and dropped with `dropdb` when the server stops (``stop()`` or deinit).
public final class SyncServerProcess: @unchecked Sendable {
    /// The server's address, `http://127.0.0.1:PORT`.
    public let url: String
    /// The database it serves.
    public let database: String
    private let process = Process()
    private let errors = Pipe()
    private let lock = NSLock()
    private var stopped = false

    /// Its standard error as read so far.
    private let log = StandardErrorLog()

    /// The PostgreSQL socket folder the environment names, when it holds a socket.
    public static var postgresSocket: String? {
        guard let folder = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_POSTGRES_SOCKET"], !folder.isEmpty,
            FileManager.default.fileExists(atPath: "\(folder)/.s.PGSQL.5432")
        else { return nil }
        return folder
    }

    /// The superuser the tests log in as.
    public static var postgresUser: String { ProcessInfo.processInfo.environment["KEYCHAIN_TEST_POSTGRES_USER"] ?? "postgres" }

    /// PostgreSQL's client program `name` (`createdb`, `dropdb`): on the `PATH`, else in Debian's versioned folders.
    static func postgresProgram(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        var folders = path.split(separator: ":").map(String.init)
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        folders += versions.sorted().reversed().map { "/usr/lib/postgresql/\($0)/bin" }
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether a server can be started: a build with the Network trait (the sync server and client), a PostgreSQL
    /// socket, and `createdb` and `dropdb` to make its database.
    public static var isAvailable: Bool {
        #if Network
        postgresSocket != nil && postgresProgram("createdb") != nil && postgresProgram("dropdb") != nil
        #else
        false
        #endif
    }

    /// The server's process ID.
    public var pid: Int32 { process.processIdentifier }
    /// The port it listens on.
    public let port: Int

    /// Makes a new database and starts the server on it with `arguments` added to its command line; returns once
    /// it listens.
    public init(arguments: [String] = []) throws {
        guard let socket = Self.postgresSocket, let createdb = Self.postgresProgram("createdb") else {
            throw TestProcessError("No PostgreSQL: set KEYCHAIN_TEST_POSTGRES_SOCKET to the folder of its socket.")
        }
        database = "sync_tool_test_\(UInt64.random(in: 0 ... UInt64.max))"
        let made = try ProgramRun.run(createdb, ["-h", socket, "-U", Self.postgresUser, database], environment: ["PATH": "/usr/bin:/bin"])
        guard made.status == 0 else { throw TestProcessError("createdb \(database) failed: \(made.stderr)") }

        let command =
            [
                try BuiltProducts.path(of: "keychain-sync-server"), "--host", "127.0.0.1", "--port", "0",
                "--postgres-socket", socket, "--postgres-user", Self.postgresUser, "--postgres-database", database,
                "--log-level", "info", "--no-metrics",
            ] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        log.follow(errors, isReady: { Self.port(in: $0) != nil })
        let started = log.waitUntilReady()
        let text = log.text
        guard started, let port = Self.port(in: text) else {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Self.drop(database)
            throw TestProcessError("keychain-sync-server did not start:\n\(text)")
        }
        url = "http://127.0.0.1:\(port)"
        self.port = port
    }

    /// The server's resident memory now, in bytes (`VmRSS` of /proc/PID/status).
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// The port in Hummingbird's "Server started and listening on HOST:PORT" line.
    static func port(in log: String) -> Int? {
        let marker = "listening on 127.0.0.1:"
        guard let range = log.range(of: marker) else { return nil }
        let digits = log[range.upperBound...].prefix { $0.isNumber }
        return Int(digits)
    }

    /// What the server wrote to stderr so far.
    public var output: String { log.text }

    /// Runs `body`; when it throws, the error is rethrown with the end of the server's log attached, so that a
    /// failed call shows what the server saw of it.
    public func showingLogOnFailure<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw TestProcessError("\(error)\nThe sync server's log ends:\n\(output.suffix(6000))")
        }
    }

    /// Sends SIGTERM and waits up to `limit` for the exit; returns how long it took, or nil when it did not exit
    /// (then it is left running: ``stop()`` kills it).
    public func terminate(within limit: Duration) -> Duration? {
        let start = ContinuousClock.now
        if process.isRunning { process.terminate() }
        while process.isRunning && ContinuousClock.now - start < limit { usleep(10_000) }
        return process.isRunning ? nil : ContinuousClock.now - start
    }

    /// SIGTERM, waits for the exit (SIGKILL after 10 s: a graceful shutdown can wait on a client's open push socket,
    /// and this call blocks its thread), and drops the database.
    public func stop() {
        guard
            lock.withLock({ () -> Bool in
                defer { stopped = true }; return !stopped
            })
        else { return }
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        Self.drop(database)
    }

    private static func drop(_ database: String) {
        guard let socket = postgresSocket, let dropdb = postgresProgram("dropdb") else { return }
        _ = try? ProgramRun.run(dropdb, ["-h", socket, "-U", postgresUser, "--force", "--if-exists", database], environment: ["PATH": "/usr/bin:/bin"])
    }

    deinit { stop() }
}
