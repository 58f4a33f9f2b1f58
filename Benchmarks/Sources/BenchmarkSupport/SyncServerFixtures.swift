import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL of the benchmark's own: Debian's `initdb` into a temporary folder, listening on a Unix socket
/// only, `fsync` on (the sync benchmarks measure what an operator would see, so the database is not made faster
/// than a real one), stopped and removed by ``stop()``. As root it runs as the `postgres` user, as PostgreSQL
/// requires.
public final class ThrowawayPostgres: @unchecked Sendable {
    /// The folder holding the server's socket.
    public let socketFolder: String
    /// The database user (and database) the sync server uses.
    public let user = "postgres"
    private let folder: String
    private let binaries: String

    /// Starts a new cluster; `fsync: false` only for a floor that must not measure the disk.
    public init(fsync: Bool = true) throws {
        guard
            let binaries = ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"]
                .first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") })
        else {
            throw BenchmarkFailure("PostgreSQL's initdb was not found under /usr/lib/postgresql; install Debian's `postgresql` package.")
        }
        self.binaries = binaries
        folder = NSTemporaryDirectory() + "skb-pg-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        socketFolder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            try Self.run("/usr/bin/chown", ["postgres:", folder])
        }
        chmod(folder, 0o700)
        try asPostgres(binaries + "/initdb", ["-D", folder + "/data", "--auth=trust", "--username=postgres", "-E", "UTF8", "--no-sync"])
        var options = "-k \(folder) -c listen_addresses='' -c max_connections=300 -c shared_buffers=256MB"
        if !fsync { options += " -c fsync=off" }
        try asPostgres(binaries + "/pg_ctl", ["-D", folder + "/data", "-l", folder + "/log", "-w", "-o", options, "start"])
    }

    /// The first column of the first row `sql` gives, through `psql` (for what the benchmarks report beside their
    /// timings, such as the bytes a record takes).
    public func value(_ sql: String) throws -> String {
        let output = folder + "/value.txt"
        let psql = binaries + "/psql"
        let arguments = ["-h", socketFolder, "-U", user, "-d", user, "-At", "-o", output, "-c", sql]
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", psql] + arguments)
        } else {
            try Self.run(psql, arguments)
        }
        return try String(contentsOfFile: output, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the cluster at once and removes its files.
    public func stop() {
        try? asPostgres(binaries + "/pg_ctl", ["-D", folder + "/data", "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(atPath: folder)
    }

    func asPostgres(_ program: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
        } else {
            try Self.run(program, arguments)
        }
    }

    static func run(_ program: String, _ arguments: [String]) throws {
        let pid = try ChildProcess.spawn(program, arguments, quiet: true)
        let status = ChildProcess.wait(pid)
        guard status == 0 else {
            throw BenchmarkFailure("\(program) \(arguments.first ?? "") failed (exit \(status)).")
        }
    }
}

/// A child started with `posix_spawn` and reaped with `waitpid`: Foundation's `Process` leaves a child that exits
/// while the benchmark's setup awaits unreaped, and `waitUntilExit()` never returns.
enum ChildProcess {
    /// Starts `program` with `arguments`; `quiet` sends its standard output to /dev/null.
    static func spawn(_ program: String, _ arguments: [String], quiet: Bool) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if quiet { posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard result == 0 else { throw BenchmarkFailure("Could not start \(program) (error \(result)).") }
        return pid
    }

    /// Waits for `pid` to end; its exit status (128 + the signal when killed).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Whether `pid` has not ended yet (reaping it when it has).
    static func isRunning(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }
}

/// `keychain-sync-server`, built beside this executable, serving one PostgreSQL on a free port of 127.0.0.1.
public final class SyncServerProcess: @unchecked Sendable {
    /// The server's base URL.
    public let url: URL
    /// The port of its monitoring listener (`/health`, `/metrics`).
    public let monitoringPort: Int
    /// The server's process ID.
    public let pid: pid_t

    /// Starts the server on `database` and waits until `/health` answers. With `internetLimits` the server keeps
    /// the rate limits it ships with (for the flood); without, they are raised so far that a hundred devices on one
    /// address, creating accounts and writing at once, are never refused.
    public init(database: ThrowawayPostgres, internetLimits: Bool = false) throws {
        let binary = URL(fileURLWithPath: BenchEnvironment.executablePath).deletingLastPathComponent()
            .appendingPathComponent("keychain-sync-server").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchmarkFailure("keychain-sync-server is not at \(binary); build the benchmark package (it builds the server too).")
        }
        let port = try Self.freePort()
        let monitoringPort = try Self.freePort()
        guard let base = URL(string: "http://127.0.0.1:\(port)") else { throw BenchmarkFailure("No URL for port \(port).") }
        url = base
        self.monitoringPort = monitoringPort
        var arguments = [
            "--port", String(port), "--postgres-socket", database.socketFolder,
            "--postgres-user", database.user, "--log-level", "error", "--metrics-port", String(monitoringPort),
        ]
        if !internetLimits {
            arguments += [
                "--account-creations-per-hour", "100000", "--joins-per-address-per-hour", "100000",
                "--writes-per-address-per-minute", "1000000", "--writes-per-account-per-minute", "1000000",
            ]
        }
        pid = try ChildProcess.spawn(binary, arguments, quiet: false)
        let deadline = ContinuousClock.now + .seconds(60)
        while !Self.healthy(port: monitoringPort) {
            guard ChildProcess.isRunning(pid), ContinuousClock.now < deadline else {
                throw BenchmarkFailure("keychain-sync-server did not answer on port \(port).")
            }
            usleep(50_000)
        }
    }

    /// Stops the server (SIGTERM: it shuts down gracefully) and waits for it.
    public func stop() {
        kill(pid, SIGTERM)
        _ = ChildProcess.wait(pid)
    }

    /// A port nobody listens on now (bound to 0, read back, closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkFailure("socket(): errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BenchmarkFailure("bind(): errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether the server's `GET /health` (on its monitoring listener) answers 200 now.
    public func healthy() -> Bool {
        Self.healthy(port: monitoringPort)
    }

    /// Whether `GET /health` answers 200 (a plain HTTP/1.1 request over a socket; no client library needed).
    static func healthy(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return false }
        let request = Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 12 else { return false }
        return String(decoding: buffer[0..<count], as: UTF8.self).hasPrefix("HTTP/1.1 200")
    }
}
