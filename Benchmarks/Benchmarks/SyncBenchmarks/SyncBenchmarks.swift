import Benchmark
import BenchmarkSupport
import Foundation
import KeychainKit
import Synchronization

// Sync between machines (issue 18) against the floor under it, in one run. Each benchmark starts its own
// PostgreSQL (Debian's, in a temporary folder, fsync on) and the keychain-sync-server built beside this executable;
// every device is a keychain of its own on disk, opened in this process, syncing through KeychainKit's public API
// exactly as an application would.
// - raw: the server's record upserts written straight to PostgreSQL by 100 writers at once, and a bare HTTP round
//   trip to the server;
// - initial sync of 10,000 items to a new device;
// - a change's latency from device A to device B, both running their sync engine (push over WebSocket);
// - the server's record writes per second with 100 devices uploading at once;
// - an honest device's sync rounds against a server with the limits it ships with, quiet and during a flood of
//   hostile requests from other addresses (issue 34).

/// State a benchmark's setup makes and its closure uses.
final class SyncFixture: @unchecked Sendable {
    var database: ThrowawayPostgres?
    var server: SyncServerProcess?
    var raw: RawRecordWrites?
    var folder = ""
    var devices: [KeychainStore] = []
    var engines: [Task<Void, Never>] = []
    var flood: SyncFlood?
    var residentBefore = 0
    let counter = Atomic<Int>(0)

    func nextIndex() -> Int { counter.add(1, ordering: .relaxed).oldValue }

    /// Starts PostgreSQL and the server (with the limits it ships with when `internetLimits`), and a folder for the
    /// devices' keychains.
    func start(internetLimits: Bool = false) throws {
        folder = NSTemporaryDirectory() + "skb-sync-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let database = try ThrowawayPostgres()
        self.database = database
        server = try SyncServerProcess(database: database, internetLimits: internetLimits)
    }

    /// A new device: a keychain of its own under the folder.
    func newDevice() throws -> KeychainStore {
        let home = folder + "/device-\(nextIndex())"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return try KeychainStore(directory: home, accessGroups: ["BENCH.sync"])
    }

    /// A device that joined `owner`'s account: invited by `owner`, asked, approved by `owner`, and asked again.
    func join(_ owner: KeychainStore, account: String) async throws -> KeychainStore {
        let device = try newDevice()
        guard let url = server?.url else { throw BenchmarkFailure("The sync server is not running.") }
        let invitation = try await owner.createSyncInvitation()
        guard case .pending(let code, _) = try await device.joinSyncAccount(account, server: url, invitation: invitation.code) else {
            throw BenchmarkFailure("A new device joined without approval.")
        }
        _ = try await owner.approveSyncDevice(code: code, name: "device \(devices.count)")
        guard case .joined = try await device.joinSyncAccount(account, server: url) else {
            throw BenchmarkFailure("An approved device could not finish joining.")
        }
        return device
    }

    func tearDown() {
        flood?.stop()
        flood = nil
        for engine in engines { engine.cancel() }
        engines = []
        devices = []
        raw?.stop()
        raw = nil
        server?.stop()
        server = nil
        database?.stop()
        database = nil
        if !folder.isEmpty { try? FileManager.default.removeItem(atPath: folder) }
    }
}

/// The synchronizable items the benchmarks write, in `store`'s group.
func items(_ store: KeychainStore) -> Keychain {
    Keychain(service: "bench-sync", in: store).synchronizable(true)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

@Sendable func log(_ message: String) { progress(message) }

let writesPerSecond = BenchmarkMetric.custom("record writes/s", polarity: .prefersLarger, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    // MARK: The floor

    /// 100 writers at once, 50 rows each: the same shape as the 100-device benchmark below.
    let writers = 100, perWriter = 50

    let rawWrites = SyncFixture()
    Benchmark(
        "raw · PostgreSQL record upserts · \(writers) writers at once",
        configuration: .init(metrics: [.wallClock, writesPerSecond], warmupIterations: 1, maxDuration: .seconds(30), maxIterations: 10),
        closure: { benchmark in
            guard let raw = rawWrites.raw else { return }
            let elapsed = try await raw.write(writers: writers, perWriter: perWriter, batch: 500, round: rawWrites.nextIndex())
            benchmark.measurement(writesPerSecond, Int((Double(writers * perWriter) / elapsed).rounded()))
        },
        setup: {
            try rawWrites.start()
            guard let database = rawWrites.database else { return }
            rawWrites.raw = try await RawRecordWrites(database: database)
        }, teardown: { rawWrites.tearDown() })

    let roundTrip = SyncFixture()
    Benchmark(
        "raw · HTTP round trip to the sync server (GET /health)",
        configuration: .init(metrics: [.wallClock, .throughput], maxDuration: .seconds(10), maxIterations: 2_000),
        closure: { _ in
            guard let server = roundTrip.server, server.healthy() else { throw BenchmarkFailure("/health did not answer 200.") }
        }, setup: { try roundTrip.start() }, teardown: { roundTrip.tearDown() })

    // MARK: Initial sync

    let initialCount = 10_000
    let initial = SyncFixture()
    Benchmark(
        "sync · initial sync of \(initialCount / 1000)k items to a new device",
        configuration: .init(metrics: [.wallClock], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 3),
        closure: { benchmark in
            guard let owner = initial.devices.first else { return }
            let account = try await owner.syncStatus().account ?? ""
            let device = try await initial.join(owner, account: account)
            benchmark.startMeasurement()
            let round = try await device.syncNow()
            benchmark.stopMeasurement()
            guard round.applied == initialCount else {
                throw BenchmarkFailure("The new device applied \(round.applied) items, not \(initialCount).")
            }
        },
        setup: {
            try initial.start()
            guard let url = initial.server?.url else { return }
            let owner = try initial.newDevice()
            initial.devices = [owner]
            let keychain = items(owner)
            for index in 0..<initialCount {
                try keychain.set("secret \(index) of the initial sync benchmark", for: "item-\(index)")
                if (index + 1) % 2_000 == 0 { log("initial sync: \(index + 1) of \(initialCount) items added on the first device") }
            }
            _ = try await owner.createSyncAccount(server: url, deviceName: "first")
            let upload = try await owner.syncNow()
            log("initial sync: the first device uploaded \(upload.uploaded) items")
            if let database = initial.database {
                let size = try database.value("SELECT pg_total_relation_size('records') / count(*) FROM records")
                log("initial sync: the server's database holds \(size) bytes per record (table and indexes)")
            }
        }, teardown: { initial.tearDown() })

    // MARK: A change's latency

    let latency = SyncFixture()
    Benchmark(
        "sync · change latency A → B · push",
        configuration: .init(metrics: [.wallClock], warmupIterations: 3, maxDuration: .seconds(120), maxIterations: 100),
        closure: { _ in
            guard latency.devices.count == 2 else { return }
            let a = items(latency.devices[0]), b = items(latency.devices[1])
            let key = "change-\(latency.nextIndex())"
            try a.set("a change", for: key)
            let deadline = ContinuousClock.now + .seconds(10)
            while try b.string(for: key) == nil {
                guard ContinuousClock.now < deadline else { throw BenchmarkFailure("\(key) did not reach device B within 10 s.") }
                try await Task.sleep(for: .milliseconds(2))
            }
        },
        setup: {
            try latency.start()
            guard let url = latency.server?.url else { return }
            let a = try latency.newDevice()
            let account = try await a.createSyncAccount(server: url, deviceName: "A")
            let b = try await latency.join(a, account: account)
            latency.devices = [a, b]
            latency.engines = [Task { await a.runSync() }, Task { await b.runSync() }]
            // Both engines hold their push socket before the first change.
            for device in latency.devices {
                let deadline = ContinuousClock.now + .seconds(20)
                while try await !device.syncStatus().isPushConnected {
                    guard ContinuousClock.now < deadline else { throw BenchmarkFailure("A device's push socket did not open within 20 s.") }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        }, teardown: { latency.tearDown() })

    // MARK: The server's writes with 100 devices

    let many = SyncFixture()
    Benchmark(
        "sync · server record writes · \(writers) devices uploading at once",
        configuration: .init(metrics: [.wallClock, writesPerSecond], warmupIterations: 1, maxDuration: .seconds(120), maxIterations: 5),
        closure: { benchmark in
            let round = many.nextIndex()
            for device in many.devices {
                let keychain = items(device)
                for index in 0..<perWriter { try keychain.set("round \(round) item \(index)", for: "item-\(index)") }
            }
            let devices = many.devices
            let start = ContinuousClock.now
            benchmark.startMeasurement()
            let uploaded = try await withThrowingTaskGroup(of: Int.self) { group in
                for device in devices { group.addTask { try await device.syncNow().uploaded } }
                return try await group.reduce(0, +)
            }
            benchmark.stopMeasurement()
            let elapsed = seconds(ContinuousClock.now - start)
            guard uploaded == writers * perWriter else {
                throw BenchmarkFailure("The devices uploaded \(uploaded) records, not \(writers * perWriter).")
            }
            benchmark.measurement(writesPerSecond, Int((Double(uploaded) / elapsed).rounded()))
        },
        setup: {
            try many.start()
            guard let url = many.server?.url else { return }
            // One account per device: 100 people's machines writing at once, none reading another's writes.
            for index in 0..<writers {
                let device = try many.newDevice()
                _ = try await device.createSyncAccount(server: url, deviceName: "device \(index)")
                many.devices.append(device)
            }
            log("server writes: \(writers) devices made their accounts")
        }, teardown: { many.tearDown() })

    // MARK: An honest device during a flood

    /// Sets up `fixture`: a server with its shipped limits and one honest device with an account and 100 items.
    @Sendable func honestDevice(_ fixture: SyncFixture) async throws {
        try fixture.start(internetLimits: true)
        guard let url = fixture.server?.url else { return }
        let device = try fixture.newDevice()
        let keychain = items(device)
        for index in 0..<100 { try keychain.set("secret \(index)", for: "item-\(index)") }
        _ = try await device.createSyncAccount(server: url, deviceName: "honest")
        _ = try await device.syncNow()
        fixture.devices = [device]
    }

    /// One honest round: a change to one item, synced.
    @Sendable func honestRound(_ fixture: SyncFixture) async throws {
        guard let device = fixture.devices.first else { return }
        let index = fixture.nextIndex()
        try items(device).set("change \(index)", for: "item-\(index % 100)")
        let round = try await device.syncNow()
        guard round.uploaded == 1 else { throw BenchmarkFailure("The honest device uploaded \(round.uploaded) records, not 1.") }
    }

    // An account's writes are limited to 300 a minute (the burst): 205 rounds fit.
    let honestConfiguration = Benchmark.Configuration(metrics: [.wallClock], warmupIterations: 5, maxDuration: .seconds(120), maxIterations: 200)

    let quiet = SyncFixture()
    Benchmark(
        "load · an honest device's sync round · quiet", configuration: honestConfiguration,
        closure: { _ in try await honestRound(quiet) }, setup: { try await honestDevice(quiet) }, teardown: { quiet.tearDown() })

    let flooded = SyncFixture()
    let serverGrowth = BenchmarkMetric.custom("server RSS growth (KiB)", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "load · an honest device's sync round · during a flood",
        configuration: .init(metrics: [.wallClock, serverGrowth], warmupIterations: 5, maxDuration: .seconds(120), maxIterations: 200),
        closure: { benchmark in
            try await honestRound(flooded)
            if let server = flooded.server {
                benchmark.measurement(serverGrowth, residentKilobytes(of: server.pid) - flooded.residentBefore)
            }
        },
        setup: {
            try await honestDevice(flooded)
            guard let server = flooded.server, let account = try await flooded.devices.first?.syncStatus().account,
                let port = server.url.port
            else { return }
            flooded.residentBefore = residentKilobytes(of: server.pid)
            let flood = SyncFlood(port: port, account: account)
            flooded.flood = flood
            flood.start()
            // The flood is under way (every kind answered, the held connections open) before the first round.
            let deadline = ContinuousClock.now + .seconds(20)
            while flood.tally.count < SyncFlood.Kind.allCases.count - 1 || (flood.tally[.unsignedBodies]?.sent ?? 0) < 50 {
                guard ContinuousClock.now < deadline else { throw BenchmarkFailure("The flood did not get going within 20 s.") }
                try await Task.sleep(for: .milliseconds(50))
            }
            log("flood: under way against \(server.url) (\(flooded.residentBefore) KiB before)")
        },
        teardown: {
            guard let flood = flooded.flood, let server = flooded.server else { return }
            let after = residentKilobytes(of: server.pid)
            let held = flood.held
            let tallies = flood.stop()
            flooded.flood = nil
            for kind in SyncFlood.Kind.allCases { log("flood: \(kind.rawValue): \(tallies[kind] ?? SyncFlood.Tally())") }
            log("flood: half-sent requests held open at the end: \(held)")
            log("flood: the server's RSS \(flooded.residentBefore) KiB before, \(after) KiB after")
            flooded.tearDown()
            // The limits held: nothing the flood sent was served, and nothing made the server fail.
            let served = tallies.values.flatMap { $0.byStatus }.filter { (200..<300).contains($0.key) || $0.key >= 500 }
            guard served.isEmpty else { throw BenchmarkFailure("The flood was answered with \(served): a limit did not hold.") }
        })
}
