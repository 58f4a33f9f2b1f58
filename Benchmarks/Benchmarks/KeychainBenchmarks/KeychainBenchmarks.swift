import Benchmark
import BenchmarkSupport
import Foundation
import KeychainKit
import KeychainServices
import Synchronization

// The keychain against the physical floor under it, in one run:
// - raw: a durable SQLite insert, a point lookup with an AES-GCM open (at each store size), a bare Unix-socket
//   round trip (and the same to a SwiftNIO server);
// - SecItem calls embedded (the store opened in this process) at each store size;
// - the Swift-native API;
// - SecItem calls through keychaind with 1, 8 and 32 client threads (one iteration = one call per client), and
//   the one-client find at every store size.
// Every store holds generic passwords (see `BenchItems`); a 1,000,000-item store is built once and reused.

/// State a benchmark's setup makes and its closure uses.
final class Fixture: @unchecked Sendable {
    var home = ""
    var daemon: DaemonProcess?
    var clients: ClientThreads?
    var raw: RawStore?
    var echo: SocketEcho?
    var nioEcho: NIOEcho?
    var keychain: Keychain?
    let counter = Atomic<Int>(0)
    /// Distinguishes this run's added items from earlier runs'.
    let run = UInt32.random(in: 0 ... .max)

    func nextIndex() -> Int { counter.add(1, ordering: .relaxed).oldValue }

    func tearDown() {
        clients?.stop()
        clients = nil
        daemon?.stop()
        daemon = nil
        raw?.remove()
        raw = nil
        echo?.stop()
        echo = nil
        nioEcho?.stop()
        nioEcho = nil
    }
}

/// Items added by the add benchmarks go here, and are removed again when the benchmark ends.
let addedService = "bench-added"

func label(_ count: Int) -> String {
    switch count {
    case 1_000_000...: "\(count / 1_000_000)M"
    case 1_000...: "\(count / 1_000)k"
    default: "\(count)"
    }
}

func check(_ status: OSStatus, _ what: String) throws {
    guard status == errSecSuccess else { throw BenchmarkFailure("\(what) failed with OSStatus \(status)") }
}

/// Replaces the secret of the next point-lookup item in turn (the update benchmarks' call).
func updateOne(_ f: Fixture, points: Int) throws {
    let index = f.nextIndex()
    try check(
        SecItemOps.update(
            account: BenchItems.account(index % points), service: BenchItems.service,
            data: BenchItems.secret(index % points)), "SecItemUpdate")
}

/// Adds an item unmeasured, then measures deleting it (the delete benchmarks' call).
func deleteOne(_ f: Fixture, _ benchmark: Benchmark) throws {
    let account = "delete-\(f.run)-\(f.nextIndex())"
    try check(SecItemOps.add(account: account, service: addedService, data: BenchItems.secret(0)), "SecItemAdd")
    benchmark.startMeasurement()
    try check(SecItemOps.delete(account: account, service: addedService), "SecItemDelete")
    benchmark.stopMeasurement()
}

/// The commits keychaind has made and the writes they held, from its status.
/// keychaind's counts of commits and writes, its writer's serial time, and the CPU time of its threads.
func commitCounts(_ f: Fixture) throws -> (commits: Int, writes: Int, writerTime: Duration, cpuNanoseconds: Int) {
    guard let process = f.daemon, let daemon = try KeychainStore.daemonStatus(socket: process.socket).daemon else {
        throw BenchmarkFailure("keychaind reported no status")
    }
    return (daemon.commits, daemon.writes, daemon.writerTime, process.cpuNanoseconds)
}

@Sendable func log(_ message: String) { progress(message) }

var reads: Benchmark.Configuration {
    .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        timeUnits: .microseconds, warmupIterations: 50,
        maxDuration: .seconds(2), maxIterations: 50_000)
}
var writes: Benchmark.Configuration {
    .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        timeUnits: .microseconds, warmupIterations: 5,
        maxDuration: .seconds(3), maxIterations: 3_000)
}

let benchmarks: @Sendable () -> Void = {
    // MARK: The physical floor

    let rawFixture = Fixture()
    Benchmark(
        "raw · SQLite insert, full sync", configuration: writes,
        closure: { _ in
            try rawFixture.raw?.insert()
        },
        setup: {
            rawFixture.raw = try RawStore(count: 1_000)
        }, teardown: { rawFixture.tearDown() })

    // At every store size, with as many rows as the item store (kept under `.stores/raw-<count>`): the floor
    // under a find, to draw beside the embedded and keychaind finds against store size.
    for size in BenchEnvironment.sizes {
        let f = Fixture()
        Benchmark(
            "raw · SQLite point lookup + AES-GCM open · \(label(size))", configuration: reads,
            closure: { _ in
                blackHole(try f.raw?.lookup(Int.random(in: 0..<size)))
            },
            setup: {
                f.raw = try RawStore.kept(count: size, log: log)
            }, teardown: { f.tearDown() })
    }

    Benchmark(
        "raw · Unix socket round trip", configuration: reads,
        closure: { _ in
            guard rawFixture.echo?.roundTrip() == true else { throw BenchmarkFailure("the echo round trip failed") }
        },
        setup: {
            rawFixture.echo = try SocketEcho()
        }, teardown: { rawFixture.tearDown() })

    // What an event-loop server adds to the round trip before any keychain work: keychaind's I/O floor.
    Benchmark(
        "raw · Unix socket round trip, SwiftNIO server", configuration: reads,
        closure: { _ in
            guard rawFixture.nioEcho?.roundTrip() == true else { throw BenchmarkFailure("the NIO echo round trip failed") }
        },
        setup: {
            rawFixture.nioEcho = try NIOEcho()
        }, teardown: { rawFixture.tearDown() })

    // MARK: SecItem, embedded

    for size in BenchEnvironment.sizes {
        let f = Fixture()
        let name = label(size)
        let points = BenchItems.pointCount(size)
        let embedded: Benchmark.BenchmarkSetupHook = {
            f.home = try BenchItems.store(count: size, log: log)
            try BenchEnvironment.useEmbedded(home: f.home)
        }
        let removeAdded: Benchmark.BenchmarkTeardownHook = {
            _ = SecItemOps.delete(account: nil, service: addedService)
            f.tearDown()
        }

        Benchmark(
            "SecItemAdd · embedded · \(name)", configuration: writes,
            closure: { _ in
                let index = f.nextIndex()
                try check(SecItemOps.add(account: "add-\(f.run)-\(index)", service: addedService, data: BenchItems.secret(index)), "SecItemAdd")
            }, setup: embedded, teardown: removeAdded)

        Benchmark(
            "SecItemCopyMatching data · embedded · \(name)", configuration: reads,
            closure: { _ in
                let index = Int.random(in: 0..<points)
                guard SecItemOps.findData(account: BenchItems.account(index), service: BenchItems.service) != nil else {
                    throw BenchmarkFailure("item \(index) was not found")
                }
            }, setup: embedded)

        Benchmark(
            "SecItemCopyMatching attributes, all 100 · embedded · \(name)", configuration: reads,
            closure: { _ in
                guard SecItemOps.findAllAttributes(service: BenchItems.listService) == BenchItems.listCount else {
                    throw BenchmarkFailure("the list query did not return \(BenchItems.listCount) items")
                }
            }, setup: embedded)

        Benchmark(
            "SecItemUpdate · embedded · \(name)", configuration: writes,
            closure: { _ in
                try updateOne(f, points: points)
            }, setup: embedded)

        Benchmark(
            "SecItemDelete · embedded · \(name)", configuration: writes,
            closure: { benchmark in
                try deleteOne(f, benchmark)
            }, setup: embedded, teardown: removeAdded)
    }

    // MARK: The Swift-native API

    let small = BenchEnvironment.sizes.min() ?? 1_000
    let native = Fixture()
    let nativeSetup: Benchmark.BenchmarkSetupHook = {
        native.home = try BenchItems.store(count: small, log: log)
        try BenchEnvironment.useEmbedded(home: native.home)
        native.keychain = Keychain(service: BenchItems.service)
    }
    Benchmark(
        "Keychain.string(for:) · \(label(small))", configuration: reads,
        closure: { _ in
            let index = Int.random(in: 0..<BenchItems.pointCount(small))
            guard try native.keychain?.data(for: BenchItems.account(index)) != nil else { throw BenchmarkFailure("item \(index) was not found") }
        }, setup: nativeSetup)

    Benchmark(
        "Keychain.set (replace) · \(label(small))", configuration: writes,
        closure: { _ in
            let index = native.nextIndex() % BenchItems.pointCount(small)
            try native.keychain?.set(BenchItems.secret(index), for: BenchItems.account(index))
        }, setup: nativeSetup)

    Benchmark(
        "Keychain.remove · \(label(small))", configuration: writes,
        closure: { benchmark in
            let key = "remove-\(native.run)-\(native.nextIndex())"
            try native.keychain?.set("x", for: key)
            benchmark.startMeasurement()
            try native.keychain?.remove(key)
            benchmark.stopMeasurement()
        }, setup: nativeSetup)

    // MARK: Through keychaind

    // Every call at the smallest and the largest size; at the sizes between, the one-client find alone (for find
    // latency against store size).
    let largest = BenchEnvironment.sizes.max() ?? small
    for size in BenchEnvironment.sizes.sorted() {
        let name = label(size)
        let points = BenchItems.pointCount(size)
        let findOnly = size != small && size != largest
        for clients in size == small ? [1, 8, 32] : [1] {
            let f = Fixture()
            let setup: Benchmark.BenchmarkSetupHook = {
                f.home = try BenchItems.store(count: size, log: log)
                let daemon = try DaemonProcess(home: f.home)
                f.daemon = daemon
                try BenchEnvironment.useDaemon(socket: daemon.socket)
                f.clients = ClientThreads(clients)
            }
            let teardown: Benchmark.BenchmarkTeardownHook = {
                _ = SecItemOps.delete(account: nil, service: addedService)
                f.tearDown()
                try BenchEnvironment.useEmbedded(home: f.home)
            }
            let suffix = clients == 1 ? "1 client" : "\(clients) clients (\(clients) calls per iteration)"

            if size == small, clients == 1 {
                // A new client's cost before its first request: connect, admission, identification, greeting.
                Benchmark(
                    "new connection to its greeting · keychaind", configuration: reads,
                    closure: { _ in
                        guard f.daemon?.greeting() == true else { throw BenchmarkFailure("keychaind sent no greeting") }
                    }, setup: setup, teardown: teardown)
            }

            Benchmark(
                "SecItemCopyMatching data · keychaind · \(name) · \(suffix)", configuration: reads,
                closure: { _ in
                    let missing = Atomic<Int>(0)
                    f.clients?.round { _ in
                        let index = Int.random(in: 0..<points)
                        if SecItemOps.findData(account: BenchItems.account(index), service: BenchItems.service) == nil {
                            missing.add(1, ordering: .relaxed)
                        }
                    }
                    guard missing.load(ordering: .relaxed) == 0 else { throw BenchmarkFailure("items were not found through keychaind") }
                }, setup: setup, teardown: teardown)

            guard !findOnly else { continue }

            // keychaind's own count of the commits (fsyncs) the round's adds took, from its status: how many writes
            // group commit put in each.
            // Also from keychaind: how long each write held the writer (its serial time: SQL and the shared fsync),
            // and the CPU time keychaind spent per add (its threads' scheduler time, read outside the measurement).
            let perCommit = BenchmarkMetric.custom("writes per commit", polarity: .prefersLarger, useScalingFactor: false)
            let serial = BenchmarkMetric.custom("writer serial µs per write", polarity: .prefersSmaller, useScalingFactor: false)
            let cpu = BenchmarkMetric.custom("keychaind CPU µs per add", polarity: .prefersSmaller, useScalingFactor: false)
            var addWrites = writes
            addWrites.metrics += [perCommit, serial, cpu]
            Benchmark(
                "SecItemAdd · keychaind · \(name) · \(suffix)", configuration: addWrites,
                closure: { benchmark in
                    let failed = Atomic<Int>(0)
                    let before = try commitCounts(f)
                    benchmark.startMeasurement()
                    f.clients?.round { _ in
                        let index = f.nextIndex()
                        if SecItemOps.add(account: "add-\(f.run)-\(index)", service: addedService, data: BenchItems.secret(index)) != errSecSuccess {
                            failed.add(1, ordering: .relaxed)
                        }
                    }
                    benchmark.stopMeasurement()
                    guard failed.load(ordering: .relaxed) == 0 else { throw BenchmarkFailure("adds failed through keychaind") }
                    let after = try commitCounts(f)
                    let commits = after.commits - before.commits
                    let written = after.writes - before.writes
                    benchmark.measurement(perCommit, commits > 0 ? Int((Double(written) / Double(commits)).rounded()) : 0)
                    let busy = after.writerTime - before.writerTime
                    let busyMicroseconds = Double(busy.components.seconds) * 1e6 + Double(busy.components.attoseconds) / 1e12
                    benchmark.measurement(serial, written > 0 ? Int((busyMicroseconds / Double(written)).rounded()) : 0)
                    benchmark.measurement(cpu, Int((Double(after.cpuNanoseconds - before.cpuNanoseconds) / 1e3 / Double(clients)).rounded()))
                }, setup: setup, teardown: teardown)

            guard clients == 1 else { continue }

            Benchmark(
                "SecItemCopyMatching attributes, all 100 · keychaind · \(name) · 1 client", configuration: reads,
                closure: { _ in
                    guard SecItemOps.findAllAttributes(service: BenchItems.listService) == BenchItems.listCount else {
                        throw BenchmarkFailure("the list query did not return \(BenchItems.listCount) items")
                    }
                }, setup: setup, teardown: teardown)

            Benchmark(
                "SecItemUpdate · keychaind · \(name) · 1 client", configuration: writes,
                closure: { _ in
                    try updateOne(f, points: points)
                }, setup: setup, teardown: teardown)

            Benchmark(
                "SecItemDelete · keychaind · \(name) · 1 client", configuration: writes,
                closure: { benchmark in
                    try deleteOne(f, benchmark)
                }, setup: setup, teardown: teardown)

            // What the daemon holds in memory and the store on disk, after finds over the whole store.
            let rss = BenchmarkMetric.custom("keychaind RSS (MiB)", polarity: .prefersSmaller, useScalingFactor: false)
            let disk = BenchmarkMetric.custom("disk bytes per item", polarity: .prefersSmaller, useScalingFactor: false)
            Benchmark(
                "footprint · keychaind · \(name)", configuration: .init(metrics: [rss, disk], warmupIterations: 0, maxDuration: .seconds(10), maxIterations: 5),
                closure: { benchmark in
                    for _ in 0..<2_000 {
                        let index = Int.random(in: 0..<points)
                        guard SecItemOps.findData(account: BenchItems.account(index), service: BenchItems.service) != nil else {
                            throw BenchmarkFailure("item \(index) was not found through keychaind")
                        }
                    }
                    benchmark.measurement(rss, (f.daemon?.residentBytes ?? 0) / (1024 * 1024))
                    benchmark.measurement(disk, storeBytes(home: f.home) / size)
                }, setup: setup, teardown: teardown)
        }
    }
}
