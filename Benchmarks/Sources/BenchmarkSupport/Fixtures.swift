import Foundation
import KeychainServices
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A failure of the benchmark harness itself (a store that cannot be built, a daemon that does not start).
public struct BenchmarkFailure: Error, CustomStringConvertible {
    /// What went wrong and what to do about it.
    public var description: String
    /// Makes a failure with its description.
    public init(_ description: String) { self.description = description }
}

/// The terminal the benchmarks were started from, when there is one (else -1).
private let terminal: Int32 = open("/dev/tty", O_WRONLY | O_CLOEXEC)

/// Writes a progress line (building a store) where the person running the suite sees it at once: the terminal
/// when there is one, else standard error. `swift package benchmark` collects what the benchmarks write, and
/// through a pipe (`| tee`) shows it only when the run ends, minutes after a 1,000,000-item store began to build.
@Sendable public func progress(_ message: String) {
    let line = Array((message + "\n").utf8)
    let fd = terminal >= 0 ? terminal : STDERR_FILENO
    _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

/// Where the benchmarks keep their stores and who they are to the keychain.
///
/// Every store lives under `.stores/` beside the benchmark package (or `$KEYCHAIN_BENCH_STORES`); the large
/// one takes minutes to build, so each is built once and reused by later runs. The benchmarks use one access
/// group, the private group keychaind gives this unregistered program, so the same items are visible embedded and
/// through the daemon: its executable's path, after `untrusted:` when it runs with `LD_PRELOAD` (package-benchmark
/// preloads its malloc counter, and keychaind keeps a preloaded program apart from the program itself).
public enum BenchEnvironment {
    /// Bumped whenever the items a store holds change, so older stores are rebuilt.
    static let storeFormat = "1"

    /// The folder holding every store.
    public static var storesRoot: String {
        if let root = ProcessInfo.processInfo.environment["KEYCHAIN_BENCH_STORES"], !root.isEmpty { return root }
        return FileManager.default.currentDirectoryPath + "/.stores"
    }

    /// This executable's resolved path.
    public static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The access group every benchmark item is in.
    public static var group: String {
        let preloaded = ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"].contains { !(ProcessInfo.processInfo.environment[$0] ?? "").isEmpty }
        return preloaded ? "untrusted:" + executablePath : executablePath
    }

    /// The store sizes to run: `$KEYCHAIN_BENCH_SIZES` (comma-separated), else 1,000, 10,000 and 1,000,000.
    public static var sizes: [Int] {
        let given =
            ProcessInfo.processInfo.environment["KEYCHAIN_BENCH_SIZES"]?
            .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? []
        return given.isEmpty ? [1_000, 10_000, 1_000_000] : given
    }

    /// Directs SecItem calls to the store at `home`, opened in this process.
    public static func useEmbedded(home: String) throws {
        try writeEntitlements()
        setenv("KEYCHAIN_HOME", home, 1)
        setenv("KEYCHAIN_DAEMON_SOCKET", "off", 1)
    }

    /// Directs SecItem calls to the keychaind listening at `socket`.
    public static func useDaemon(socket: String) throws {
        try writeEntitlements()
        setenv("KEYCHAIN_DAEMON_SOCKET", socket, 1)
    }

    static func writeEntitlements() throws {
        let path = storesRoot + "/entitlements.plist"
        try FileManager.default.createDirectory(atPath: storesRoot, withIntermediateDirectories: true)
        let plist = try PropertyListSerialization.data(fromPropertyList: ["keychain-access-groups": [group]], format: .xml, options: 0)
        try plist.write(to: URL(fileURLWithPath: path))
        setenv("KEYCHAIN_ENTITLEMENTS", path, 1)
    }
}

/// The items of a benchmark store: `count - 100` generic passwords (`acct-<i>` in service `bench`) and 100
/// more in service `bench-list`, the set a "return attributes, limit all" query returns. Secrets are 24 bytes.
public enum BenchItems {
    /// The service of the point-lookup items.
    public static let service = "bench"
    /// The service of the 100 items a list query returns.
    public static let listService = "bench-list"
    /// How many items the list query returns.
    public static let listCount = 100

    /// The secret stored for `index`.
    public static func secret(_ index: Int) -> Data {
        Data("secret-\(index)-".utf8 + Array(repeating: UInt8(ascii: "x"), count: 24)).prefix(24)
    }

    /// The account of point-lookup item `index`.
    public static func account(_ index: Int) -> String { "acct-\(index)" }

    /// How many point-lookup items a store of `count` holds.
    public static func pointCount(_ count: Int) -> Int { count - listCount }

    /// The home folder of the store with `count` items, built first when it is missing or stale.
    public static func store(count: Int, log: @escaping @Sendable (String) -> Void = { _ in }) throws -> String {
        let home = BenchEnvironment.storesRoot + "/\(count)"
        let marker = home + "/bench-complete"
        let expected = "\(BenchEnvironment.storeFormat) \(count) \(BenchEnvironment.group)"
        if let found = try? String(contentsOfFile: marker, encoding: .utf8), found == expected {
            DaemonProcess.forgetStopped(home: home)
            return home
        }
        try? FileManager.default.removeItem(atPath: home)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try BenchEnvironment.useEmbedded(home: home)
        log("building the \(count)-item store in \(home) (once; later runs reuse it)")
        let started = ContinuousClock.now
        // Many writers at once: group commit puts their adds in shared transactions.
        let writers = 16
        let failures = Atomic<Int>(0)
        let points = pointCount(count)
        let progress = Atomic<Int>(0)
        ClientThreads.runOnce(writers) { writer in
            var index = writer
            while index < count {
                let status: OSStatus
                if index < points {
                    status = SecItemOps.add(account: account(index), service: service, data: secret(index))
                } else {
                    status = SecItemOps.add(account: "list-\(index - points)", service: listService, data: secret(index))
                }
                if status != errSecSuccess && status != errSecDuplicateItem { failures.add(1, ordering: .relaxed) }
                let done = progress.add(1, ordering: .relaxed).newValue
                if done % 100_000 == 0 { log("  \(done) items (\(ContinuousClock.now - started))") }
                index += writers
            }
        }
        guard failures.load(ordering: .relaxed) == 0 else {
            throw BenchmarkFailure("\(failures.load(ordering: .relaxed)) adds failed while building \(home); remove it and run again.")
        }
        try expected.write(toFile: marker, atomically: true, encoding: .utf8)
        log("built \(count) items in \(ContinuousClock.now - started)")
        return home
    }
}

/// The SecItem calls the benchmarks make, with Apple's dictionaries, as an app would write them.
public enum SecItemOps {
    /// `SecItemAdd` of one generic password.
    public static func add(account: String, service: String, data: Data) -> OSStatus {
        SecItemAdd(
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrAccount as String: account,
                kSecAttrService as String: service,
                kSecValueData as String: data,
            ] as CFDictionary, nil)
    }

    /// `SecItemCopyMatching` of one item's secret by account and service.
    public static func findData(account: String, service: String) -> Data? {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrAccount as String: account,
                kSecAttrService as String: service,
                kSecReturnData as String: true,
            ] as CFDictionary, &result)
        guard status == errSecSuccess else { return nil }
        return result as? Data
    }

    /// `SecItemCopyMatching` of every item of a service, returning attributes: how many came back.
    public static func findAllAttributes(service: String) -> Int {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecMatchLimit as String: kSecMatchLimitAll,
                kSecReturnAttributes as String: true,
            ] as CFDictionary, &result)
        guard status == errSecSuccess else { return 0 }
        return (result as? [Any])?.count ?? 0
    }

    /// `SecItemUpdate` of one item's secret.
    public static func update(account: String, service: String, data: Data) -> OSStatus {
        SecItemUpdate(
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrAccount as String: account,
                kSecAttrService as String: service,
            ] as CFDictionary,
            [kSecValueData as String: data] as CFDictionary)
    }

    /// `SecItemDelete` of every item matching account (when given) and service.
    public static func delete(account: String?, service: String) -> OSStatus {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        if let account { query[kSecAttrAccount as String] = account }
        return SecItemDelete(query as CFDictionary)
    }
}

/// `n` threads that each run one call per round: the benchmarks' concurrent clients. Each thread makes its
/// own calls (and, through keychaind, holds its own connection), as separate client processes would.
///
/// A single client runs on the caller's thread, as the embedded and raw benchmarks do: handing each call to
/// another thread and waiting for it would add two thread wake-ups (about a bare socket round trip's worth) to
/// every call, a cost of the benchmark and not of the keychain.
public final class ClientThreads: @unchecked Sendable {
    private let count: Int
    private var starts: [DispatchSemaphore] = []
    private let done = DispatchSemaphore(value: 0)
    private let work = Mutex<(@Sendable (Int) -> Void)?>(nil)
    private let stopping = Atomic<Bool>(false)

    /// Starts `count` client threads, idle until ``round(_:)``.
    public init(_ count: Int) {
        self.count = count
        guard count > 1 else { return }
        for index in 0..<count {
            let start = DispatchSemaphore(value: 0)
            starts.append(start)
            let thread = Thread { [self] in
                while true {
                    start.wait()
                    if stopping.load(ordering: .acquiring) { break }
                    if let body = work.withLock({ $0 }) { body(index) }
                    done.signal()
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Runs `body(clientIndex)` once on every client thread, returning when all are done.
    public func round(_ body: @escaping @Sendable (Int) -> Void) {
        guard count > 1 else {
            body(0)
            return
        }
        work.withLock { $0 = body }
        for start in starts { start.signal() }
        for _ in 0..<count { done.wait() }
    }

    /// Ends the threads.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        for start in starts { start.signal() }
    }

    /// Runs `body` on `count` new threads and waits for them.
    public static func runOnce(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let clients = ClientThreads(count)
        clients.round(body)
        clients.stop()
    }
}

/// keychaind, started as a separate process on a store, with its socket in a private temporary folder.
public final class DaemonProcess: @unchecked Sendable {
    /// The socket clients connect to.
    public let socket: String
    private let process: Process
    private let folder: String
    private let home: String

    /// Starts the keychaind built beside this executable on the store at `home`, with `arguments` added and
    /// `environment` set, and waits until it answers.
    public init(home: String, arguments: [String] = [], environment extra: [String: String] = [:]) throws {
        let binary = URL(fileURLWithPath: BenchEnvironment.executablePath).deletingLastPathComponent().appendingPathComponent("keychaind").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchmarkFailure("keychaind is not at \(binary); build the benchmark package (it builds keychaind too).")
        }
        self.home = home
        folder = NSTemporaryDirectory() + "skb-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        socket = folder + "/kd.sock"
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--socket", socket, "--idle-lock", "0", "--log-level", "error"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["KEYCHAIN_HOME"] = home
        environment.removeValue(forKey: "KEYCHAIN_DAEMON_SOCKET")
        environment.removeValue(forKey: "KEYCHAIN_ENTITLEMENTS")
        environment.merge(extra) { $1 }
        process.environment = environment
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while !DaemonProcess.accepts(socket) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw BenchmarkFailure("keychaind did not start on \(socket) (exit \(process.isRunning ? -1 : process.terminationStatus)).")
            }
            usleep(20_000)
        }
    }

    /// The daemon's process ID.
    public var pid: Int32 { process.processIdentifier }

    /// Where its SSH agent listens when it was started with `--ssh-agent`: beside its socket.
    public var sshAgentSocket: String { folder + "/ssh-agent.sock" }

    /// The CPU time the daemon's live threads have used, in nanoseconds: the sum of each thread's
    /// `/proc/PID/task/TID/schedstat` (time on a CPU, kept by the scheduler to the nanosecond, unlike `/proc/PID/stat`'s
    /// clock ticks). Threads that ended are not counted, so compare two readings between which none ends (keychaind
    /// keeps a connection's thread as long as the connection).
    public var cpuNanoseconds: Int {
        let tasks = "/proc/\(pid)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return 0 }
        var total = 0
        for thread in threads {
            guard let text = try? String(contentsOfFile: "\(tasks)/\(thread)/schedstat", encoding: .utf8),
                let first = text.split(separator: " ").first, let nanoseconds = Int(first)
            else { continue }
            total += nanoseconds
        }
        return total
    }

    /// The daemon's resident memory in bytes (`VmRSS`).
    public var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024
    }

    /// Stops the daemon (SIGTERM: it drains and checkpoints) and waits for it, then lets the store be opened
    /// in-process again (see ``forgetStopped(home:)``).
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
        DaemonProcess.forgetStopped(home: home)
    }

    /// keychaind marks a keychain it serves (`keychaind.serves`, naming its socket), and from then on clients
    /// reach that keychain only through it and fail closed (`errSecNotAvailable`) while it is not running. The
    /// benchmarks use each store both ways, so once the daemon they started has stopped (or an interrupted run
    /// left its marker), the marker goes, as the README says to do when going back to the embedded mode. A
    /// marker whose socket still answers (a keychaind started by hand for the probe) stays.
    public static func forgetStopped(home: String) {
        let marker = home + "/keychaind.serves"
        guard let named = try? String(contentsOfFile: marker, encoding: .utf8) else { return }
        let socket = named.trimmingCharacters(in: .whitespacesAndNewlines)
        if !socket.isEmpty && accepts(socket) { return }
        try? FileManager.default.removeItem(atPath: marker)
    }

    static func accepts(_ path: String) -> Bool {
        guard let fd = UnixSocket.connect(path) else { return false }
        close(fd)
        return true
    }

    /// One new connection, as far as keychaind's greeting: it admits the connection, identifies the process from
    /// the kernel (`SO_PEERCRED`, pidfd, `/proc`: executable, hash, loader variables, tracer, namespaces) and speaks
    /// first. What every new client pays before its first request.
    public func greeting() -> Bool {
        guard let fd = UnixSocket.connect(socket) else { return false }
        defer { close(fd) }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 1
    }
}

/// Unix-domain stream sockets for the harness.
enum UnixSocket {
    static func connect(_ path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { close(fd); return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { close(fd); return nil }
        return fd
    }
}

/// Bytes on disk of a store: its database with WAL and shared memory.
public func storeBytes(home: String) -> Int {
    ["keychain-2.db", "keychain-2.db-wal", "keychain-2.db-shm"].reduce(0) { total, name in
        let size = (try? FileManager.default.attributesOfItem(atPath: home + "/" + name))?[.size] as? Int ?? 0
        return total + size
    }
}
