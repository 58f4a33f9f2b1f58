// Runs one keychain operation in a loop on a benchmark store, for profilers:
//   keychain-probe find|list|add|update|daemon-find|daemon-status [iterations] [store size]
// e.g. `valgrind --tool=callgrind .build/release/keychain-probe find 2000` (see the README's "Performance").
import BenchmarkSupport
import Foundation
import KeychainKit
import KeychainServices

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
    } else if operation.hasPrefix("daemon-") {
        daemon = try DaemonProcess(home: home)
        if let daemon { try BenchEnvironment.useDaemon(socket: daemon.socket) }
    }
    // One call first, so opening the store is not in the loop.
    _ = SecItemOps.findData(account: BenchItems.account(0), service: BenchItems.service)
    let run = UInt32.random(in: 0 ... .max)
    let started = ContinuousClock.now
    var failures = 0
    for i in 0 ..< iterations {
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
        case "update":
            if SecItemOps.update(account: BenchItems.account(i % points), service: BenchItems.service, data: BenchItems.secret(i % points)) != errSecSuccess { failures += 1 }
        default:
            say("unknown operation \(operation): use find, list, add, update, daemon-find, daemon-add or daemon-status")
            exit(2)
        }
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    say("\(operation): \(iterations) calls in \(elapsed), \(Int(Double(iterations) / seconds))/s, \(failures) failures")
    if operation.hasSuffix("add") { _ = SecItemOps.delete(account: nil, service: "bench-added") }
    daemon?.stop()
    exit(failures == 0 ? 0 : 1)
} catch {
    say("\(error)")
    exit(1)
}
