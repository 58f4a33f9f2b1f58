// Runs one keychain operation in a loop on a benchmark store, for profilers:
//   keychain-probe find|list|add|update|raw|daemon-find|daemon-status|echo|compare [iterations] [store size]
//   keychain-probe daemon-adds|daemon-add-rounds [adds] [store size] [clients]
// e.g. `valgrind --tool=callgrind .build/release/keychain-probe find 2000` (see the README's "Performance").
// `compare` alternates blocks of bare socket round trips, embedded finds and finds through keychaind, and prints
// the median of each and the time keychaind adds to a find over the round trip: a quick check while working on
// the daemon's path, steadier on a noisy machine than separate runs.
// `daemon-adds` runs adds through keychaind from N client threads, each calling as fast as it can;
// `daemon-add-rounds` in rounds of one call per client, as the benchmark's "N clients" do. Both print the adds per
// second, the writes each commit held (group commit) and the CPU time per add on each side.
import BenchmarkSupport
import Foundation
import KeychainKit
import KeychainServices
import Synchronization

let arguments = CommandLine.arguments.dropFirst()
let operation = arguments.first ?? "find"
let iterations = arguments.dropFirst().first.flatMap { Int($0) } ?? 10_000
let size = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1_000
let points = BenchItems.pointCount(size)
@Sendable func say(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

do {
    let home = try BenchItems.store(count: size, log: say)
    try BenchEnvironment.useEmbedded(home: home)
    var daemon: DaemonProcess?
    if let socket = ProcessInfo.processInfo.environment["KEYCHAIN_PROBE_SOCKET"] {
        // A keychaind started by hand (under strace, say) on this store.
        try BenchEnvironment.useDaemon(socket: socket)
    } else if operation.hasPrefix("daemon-") || operation == "compare" {
        daemon = try DaemonProcess(home: home)
        if let daemon { try BenchEnvironment.useDaemon(socket: daemon.socket) }
    }
    // One call first, so opening the store is not in the loop.
    _ = SecItemOps.findData(account: BenchItems.account(0), service: BenchItems.service)
    // The floor under a daemon call: a bare socket round trip to an echo thread.
    let echo = operation == "echo" || operation == "compare" ? try SocketEcho() : nil
    if operation == "daemon-adds" || operation == "daemon-add-rounds", let daemon {
        let clients = arguments.dropFirst(3).first.flatMap { Int($0) } ?? 32
        try concurrentAdds(total: iterations, clients: clients, rounds: operation == "daemon-add-rounds", daemon: daemon)
        _ = SecItemOps.delete(account: nil, service: "bench-added")
        daemon.stop()
        exit(0)
    }
    if operation == "compare", let daemon, let echo {
        try compare(home: home, socket: daemon.socket, echo: echo, rounds: max(iterations / 2_000, 5), points: points)
        daemon.stop()
        echo.stop()
        exit(0)
    }
    // The floor under an embedded find: a point lookup and one AES-GCM open on a raw store of the same size.
    let raw = operation == "raw" ? try RawStore(count: size) : nil
    let run = UInt32.random(in: 0 ... .max)
    let started = ContinuousClock.now
    var failures = 0
    for i in 0..<iterations {
        switch operation {
        case "find", "daemon-find":
            if SecItemOps.findData(account: BenchItems.account(i % points), service: BenchItems.service) == nil { failures += 1 }
        case "list":
            if SecItemOps.findAllAttributes(service: BenchItems.listService) != BenchItems.listCount { failures += 1 }
        case "add", "daemon-add":
            if SecItemOps.add(account: "probe-\(run)-\(i)", service: "bench-added", data: BenchItems.secret(i)) != errSecSuccess { failures += 1 }
        case "daemon-status":
            // A round trip through keychaind's pipeline with no engine work: the protocol's own cost.
            if (try? KeychainStore.daemonStatus(socket: ProcessInfo.processInfo.environment["KEYCHAIN_DAEMON_SOCKET"] ?? "")) == nil { failures += 1 }
        case "raw":
            if (try? raw?.lookup(i % size)) == nil { failures += 1 }
        case "echo":
            if echo?.roundTrip() != true { failures += 1 }
        case "update":
            if SecItemOps.update(account: BenchItems.account(i % points), service: BenchItems.service, data: BenchItems.secret(i % points)) != errSecSuccess { failures += 1 }
        default:
            say("unknown operation \(operation): use find, list, add, update, raw, daemon-find, daemon-add, daemon-status or echo")
            exit(2)
        }
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    say("\(operation): \(iterations) calls in \(elapsed), \(Int(Double(iterations) / seconds))/s, \(failures) failures")
    if operation.hasSuffix("add") { _ = SecItemOps.delete(account: nil, service: "bench-added") }
    daemon?.stop()
    echo?.stop()
    raw?.remove()
    exit(failures == 0 ? 0 : 1)
} catch {
    say("\(error)")
    exit(1)
}

/// Median microseconds per call of blocks of 2,000 echo round trips, embedded finds and keychaind finds, in turn.
func compare(home: String, socket: String, echo: SocketEcho, rounds: Int, points: Int) throws {
    let block = 2_000
    var times: [String: [Double]] = [:]
    func measure(_ name: String, _ call: (Int) -> Bool) throws {
        let started = ContinuousClock.now
        for i in 0..<block where !call(i) { throw BenchmarkFailure("\(name) failed") }
        let elapsed = ContinuousClock.now - started
        times[name, default: []].append((Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(block))
    }
    let nio = try NIOEcho()
    defer { nio.stop() }
    for round in 0..<rounds {
        try measure("echo") { _ in echo.roundTrip() }
        try measure("nio echo") { _ in nio.roundTrip() }
        try BenchEnvironment.useEmbedded(home: home)
        try measure("embedded find") { i in SecItemOps.findData(account: BenchItems.account((i + round) % points), service: BenchItems.service) != nil }
        try BenchEnvironment.useDaemon(socket: socket)
        try measure("keychaind find") { i in SecItemOps.findData(account: BenchItems.account((i + round) % points), service: BenchItems.service) != nil }
    }
    func median(_ name: String) -> Double { let sorted = (times[name] ?? [0]).sorted(); return sorted[sorted.count / 2] }
    let (rt, nioRT, embedded, daemon) = (median("echo"), median("nio echo"), median("embedded find"), median("keychaind find"))
    print(
        String(
            format: "echo %.1f µs, NIO echo %.1f µs, embedded find %.1f µs, keychaind find %.1f µs: keychaind adds %.1f µs = %.2f× the round trip (medians of %d blocks of %d)",
            rt, nioRT, embedded, daemon, daemon - embedded, (daemon - embedded) / rt, rounds, block))
}

/// Adds `total` items through keychaind from `clients` threads (in rounds of one call per client when `rounds`),
/// and prints the rate, the writes per commit and the CPU time per add in this process and in keychaind.
func concurrentAdds(total: Int, clients: Int, rounds: Bool, daemon: DaemonProcess) throws {
    let run = UInt32.random(in: 0 ... .max)
    let perClient = max(1, total / clients)
    let failures = Atomic<Int>(0)
    let before = try KeychainStore.daemonStatus(socket: daemon.socket).daemon
    let (daemonCPU, ownCPU) = (cpuSeconds(pid: daemon.pid), ownCPUSeconds())
    let started = ContinuousClock.now
    if rounds {
        let threads = ClientThreads(clients)
        for round in 0..<perClient {
            threads.round { client in
                if SecItemOps.add(account: "probe-\(run)-\(client)-\(round)", service: "bench-added", data: BenchItems.secret(round)) != errSecSuccess {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        threads.stop()
    } else {
        ClientThreads.runOnce(clients) { client in
            for i in 0..<perClient where SecItemOps.add(account: "probe-\(run)-\(client)-\(i)", service: "bench-added", data: BenchItems.secret(i)) != errSecSuccess {
                failures.add(1, ordering: .relaxed)
            }
        }
    }
    let elapsed = ContinuousClock.now - started
    let (daemonUsed, ownUsed) = (cpuSeconds(pid: daemon.pid) - daemonCPU, ownCPUSeconds() - ownCPU)
    let after = try KeychainStore.daemonStatus(socket: daemon.socket).daemon
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let adds = perClient * clients
    let commits = (after?.commits ?? 0) - (before?.commits ?? 0)
    let writes = (after?.writes ?? 0) - (before?.writes ?? 0)
    let busy = (after?.writerTime ?? .zero) - (before?.writerTime ?? .zero)
    let busyMicroseconds = Double(busy.components.seconds) * 1e6 + Double(busy.components.attoseconds) / 1e12
    print(
        String(
            format:
                "%@ · %d clients: %d adds in %.2f s, %.0f/s; %d writes in %d commits, %.1f per commit, writer serial %.1f µs per write; CPU per add: keychaind %.0f µs, clients %.0f µs; %d failures",
            rounds ? "rounds" : "free-running", clients, adds, seconds, Double(adds) / seconds, writes, commits,
            commits > 0 ? Double(writes) / Double(commits) : 0, writes > 0 ? busyMicroseconds / Double(writes) : 0,
            daemonUsed / Double(adds) * 1e6, ownUsed / Double(adds) * 1e6, failures.load(ordering: .relaxed)))
}

/// User and system CPU seconds a process has used (all its threads, live and ended), from `/proc/PID/stat`.
func cpuSeconds(pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime and stime are fields 14 and 15.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// User and system CPU seconds this process has used.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
