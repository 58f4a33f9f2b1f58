#if Network
import Foundation
import KeychainCore
import KeychainSync
import KeychainSyncClient
import KeychainTestSupport
import PostgresNIO
import Testing

/// Issue 18's "killing the server or a client mid-batch, ≥ 100 times at random points, loses no acknowledged change",
/// with real processes: `keychain-sync-server` on a real PostgreSQL, and `keychain-test-helper sync-writer` (a device
/// that edits its keychain on disk and syncs, in batches of up to 500) killed with SIGKILL at seeded random moments,
/// one, the other or both, then started again.
@Suite("Killing the sync server and a syncing client at random points", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncKillTests {
    /// How many kills.
    static let kills = 120
    /// The seed of the moments and kinds of kills and of the writer's edits (`KEYCHAIN_TEST_SEED` replays another).
    static let seed = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_SEED"].flatMap { UInt64($0) } ?? 18_100

    /// What was killed.
    enum Kill: String, CaseIterable {
        case client, server, both
    }

    /// A change the writer said the server took: the item (its account), its state then (`rev:R` or `deleted`),
    /// its identifier in the zone and the version the server gave it.
    struct Ack: Hashable {
        var account: String
        var revision: UInt64?
        var itemID: String
        var version: Int64

        init?(_ line: Substring) {
            let parts = line.split(separator: " ")
            guard parts.count == 5, parts[0] == "ack", let version = Int64(parts[4]) else { return nil }
            account = String(parts[1])
            if parts[2] == "deleted" {
                revision = nil
            } else if parts[2].hasPrefix("rev:"), let revision = UInt64(parts[2].dropFirst(4)) {
                self.revision = revision
            } else {
                return nil
            }
            itemID = String(parts[3])
            self.version = version
        }
    }

    /// The server as a process on one database, started again on the same port after each kill.
    final class ServerRunner: @unchecked Sendable {
        let database: String
        let scratch: String
        var port = 0
        var process: KillableProcess?
        var starts = 0

        init(database: String, scratch: String) {
            self.database = database
            self.scratch = scratch
        }

        var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

        /// Starts it (on a port the system picks the first time, the same one after), and waits until it listens.
        func start() async throws {
            let executable = try BuiltProducts.path(of: "keychain-sync-server")
            var lastError: (any Error)?
            // A port just released may still be busy for a moment: the server then ends, and is started again.
            for _ in 0..<50 {
                starts += 1
                let server = try KillableProcess(
                    executable,
                    [
                        "--host", "127.0.0.1", "--port", "\(port)",
                        "--postgres-socket", TestPostgres.socketFolder ?? "", "--postgres-user", TestPostgres.user,
                        "--postgres-database", database, "--log-level", "info", "--no-metrics",
                        // The writer syncs round after round, as fast as it can: more than a person's machine would.
                        "--writes-per-account-per-minute", "100000", "--writes-per-address-per-minute", "100000",
                    ], outputPath: scratch + "/server-\(starts).log")
                do {
                    let line = try await server.waitForLine(containing: "listening on 127.0.0.1:", inErrors: true)
                    guard let listening = line.split(separator: ":").last.flatMap({ Int($0) }) else {
                        throw TestProcessError("The server's start line names no port: \(line)")
                    }
                    port = listening
                    process = server
                    return
                } catch {
                    lastError = error
                    try await server.kill()
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            throw lastError ?? TestProcessError("The server did not start.")
        }

        func kill() async throws {
            try await process?.kill()
            process = nil
        }
    }

    static func median(_ durations: [Duration]) -> Duration {
        durations.isEmpty ? .zero : durations.sorted()[durations.count / 2]
    }

    /// A keychain on disk, opened in this process.
    static func engine(_ home: String) throws -> KeychainEngine {
        try KeychainEngine(location: KeychainLocation(home: home), tpm: nil, passcodePolicy: .testing)
    }

    /// The writer's live items in `engine` (account → revision), and the accounts of its deleted ones.
    static func writerItems(_ engine: KeychainEngine) throws -> (live: [String: UInt64], deleted: Set<String>) {
        var live: [String: UInt64] = [:]
        var deleted: Set<String> = []
        for tombstones in [false, true] {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = ["svce": .string("sync-writer")]
            if tombstones { q.attributes["tomb"] = .int(1) }
            q.sync = .any
            q.limit = .all
            q.returns = ReturnOptions(data: !tombstones, attributes: true)
            let found = Result { () throws(KeychainError) in try engine.find(q, caller: AccessPolicy(groups: ["*"])) }
            if case .failure(let error) = found, error.code == .itemNotFound { continue }
            for item in try found.get() {
                guard case .string(let account)? = item.attributes["acct"] else { continue }
                if tombstones {
                    deleted.insert(account)
                } else {
                    guard let data = item.data, let revision = UInt64(String(decoding: data.dropFirst(4), as: UTF8.self)) else {
                        throw TestProcessError("The writer's item \(account) holds no revision.")
                    }
                    live[account] = revision
                }
            }
        }
        return (live, deleted)
    }

    @Test("Killing the server, the client or both 120 times at seeded random moments mid-batch loses no acknowledged change; both devices end identical and the database consistent")
    func killsLoseNoAcknowledgedChange() async throws {
        let started = ContinuousClock.now
        let helper = try BuiltProducts.path(of: "keychain-test-helper")
        let scratch = FileManager.default.temporaryDirectory.path + "/sync-kills-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try await TestPostgres.withDatabase { database in
            let server = ServerRunner(database: database, scratch: scratch)
            try await server.start()
            let homeA = scratch + "/writer", homeB = scratch + "/checker"

            // The account: the writer's device makes it, the checker's joins and is approved. The writer's keychain
            // is then closed here: from now on only its own process opens it.
            let engineB = try Self.engine(homeB)
            let checker: SyncSession
            let account: String
            do {
                let engineA = try Self.engine(homeA)
                let writer = try await SyncSession.createAccount(
                    engine: engineA, mirrorPath: KeychainLocation(home: homeA).syncMirrorPath,
                    serverURL: server.url, name: "writer")
                account = writer.account
                let joining = try await SyncSession.join(
                    engine: engineB, mirrorPath: KeychainLocation(home: homeB).syncMirrorPath,
                    serverURL: server.url, account: account, invitation: try await writer.invite().invitation)
                try await writer.approve(joining.code, name: "checker")
                #expect(try await joining.session.finishJoining())
                checker = joining.session
                try engineA.close()
            }

            var random = SeededGenerator(seed: Self.seed)
            var runs: [String] = []
            var writerStarts: [Duration] = []
            func startWriter(settle: Bool = false) async throws -> KillableProcess {
                let output = scratch + "/writer-\(runs.count).out"
                runs.append(output)
                let start = ContinuousClock.now
                let writer = try KillableProcess(
                    helper, ["sync-writer", homeA, "w", "\(random.next())"] + (settle ? ["settle"] : []),
                    outputPath: output)
                // The keychain and the mirror a kill left open again.
                _ = try await writer.waitForLine(containing: "ready")
                writerStarts.append(ContinuousClock.now - start)
                return writer
            }

            // Whether the server is inside a batch's transaction now (its INSERTs into records).
            let watcher = PostgresClient(configuration: TestPostgres.configuration(database: database), backgroundLogger: TestPostgres.logger)
            let watching = Task { await watcher.run() }
            defer { watching.cancel() }
            func batchInProgress() async throws -> Bool {
                for try await count in try await watcher.query(
                    """
                    SELECT count(*) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()
                        AND state <> 'idle' AND query LIKE '%INSERT INTO records%'
                    """
                ).decode(Int64.self) {
                    return count > 0
                }
                return false
            }

            var writer = try await startWriter()
            var kills: [Kill: Int] = [:]
            var midRound = 0
            var midBatch = 0
            var serverStarts: [Duration] = []
            for _ in 0..<Self.kills {
                // A third of the kills land anywhere (mostly while the writer edits, or reads and seals a round);
                // a third while the server writes a batch in its transaction (seen in pg_stat_activity), so that
                // the batch is rolled back (server) or committed with its answer lost (client); a third after the
                // writer's next round is acknowledged.
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    try await Task.sleep(for: .milliseconds(Int.random(in: 20...400, using: &random)))
                case 1:
                    let deadline = ContinuousClock.now + .seconds(5)
                    while try await !batchInProgress(), writer.isRunning, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(2))
                    }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...60, using: &random)))
                    if try await batchInProgress() { midBatch += 1 }
                default:
                    let seen = writer.lines.count
                    let deadline = ContinuousClock.now + .seconds(10)
                    while !writer.lines[seen...].contains(where: { $0.hasPrefix("synced ") }), writer.isRunning, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(3))
                    }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 20...400, using: &random)))
                }
                try #require(writer.isRunning, "the writer ended by itself: \(writer.lines.suffix(3)) \(writer.errorLines.suffix(3))")
                if writer.lines.last?.hasPrefix("round ") == true { midRound += 1 }
                let roll = Int.random(in: 0..<100, using: &random)
                let kill: Kill = roll < 60 ? .client : roll < 85 ? .server : .both
                kills[kill, default: 0] += 1
                if kill != .server { try await writer.kill() }
                if kill != .client {
                    try await server.kill()
                    let start = ContinuousClock.now
                    try await server.start()
                    serverStarts.append(ContinuousClock.now - start)
                }
                if kill != .server { writer = try await startWriter() }
            }
            try await writer.kill()

            // Quiet: the writer uploads what is left, the checker reads everything.
            let settling = try await startWriter(settle: true)
            #expect(try await settling.waitForExit(timeout: .seconds(120)) == 0)
            #expect(settling.lines.last == "settled")
            let first = try await checker.syncOnce()
            let second = try await checker.syncOnce()
            #expect(first.uploaded == 0 && first.conflicts == 0 && first.rejected == 0)
            #expect(second.applied == 0 && second.uploaded == 0)

            // Every acknowledged change is on the checker in its acknowledged state or a later one.
            let lines = runs.flatMap(KillableProcess.lines)
            let acks = lines.compactMap(Ack.init)
            let engineA = try Self.engine(homeA)
            let a = try Self.writerItems(engineA), b = try Self.writerItems(engineB)
            var lost: [Ack] = []
            for ack in acks {
                let kept =
                    switch (ack.revision, b.live[ack.account]) {
                    case (nil, nil): true
                    case (nil, .some): false
                    case (.some(let acknowledged), .some(let held)): held >= acknowledged
                    case (.some, nil): a.deleted.contains(ack.account)
                    }
                if !kept { lost.append(ack) }
            }
            #expect(lost.isEmpty, "\(lost.count) acknowledged changes lost, e.g. \(lost.prefix(5))")
            // Nor did a round take back an edit the writer had made (even one not yet acknowledged).
            let takenBack = lines.filter { $0.hasPrefix("lost-local ") }
            #expect(takenBack.isEmpty, "\(takenBack.count) local edits taken back, e.g. \(takenBack.prefix(5))")
            let differing = Set(a.live.keys).union(b.live.keys).filter { a.live[$0] != b.live[$0] }.sorted()
            #expect(
                differing.isEmpty && !a.live.isEmpty,
                "\(differing.count) items differ between the devices, e.g. \(differing.prefix(5).map { "\($0): \(a.live[$0].map(String.init) ?? "none") / \(b.live[$0].map(String.init) ?? "none")" })")
            #expect(acks.count > 1000, "the writer should have had many changes acknowledged between kills")

            // The database: one record per item at the version both devices last saw, acknowledged versions never
            // gone back, sequence numbers distinct and within the account's counter.
            let records = try await TestPostgres.withClient(database: database) { client in
                var records: [String: (version: Int64, deleted: Bool, seq: Int64)] = [:]
                for try await (item, version, deleted, seq) in try await client.query(
                    "SELECT item_id, version, deleted, seq FROM records WHERE account_id = \(account)"
                ).decode((String, Int64, Bool, Int64).self) {
                    records[item] = (version, deleted, seq)
                }
                return records
            }
            let accountSeq = try await TestPostgres.withClient(database: database) { client in
                var seq: Int64 = -1
                for try await value in try await client.query("SELECT seq FROM accounts WHERE id = \(account)").decode(Int64.self) {
                    seq = value
                }
                return seq
            }
            let seqs = records.values.map(\.seq)
            #expect(Set(seqs).count == seqs.count)
            #expect(seqs.allSatisfy { 1...accountSeq ~= $0 })
            #expect(records.values.allSatisfy { $0.version >= 1 })
            let behind = acks.filter { ack in
                guard let record = records[ack.itemID] else { return true }
                return record.version < ack.version || (ack.revision == nil && !record.deleted)
            }
            #expect(behind.isEmpty, "\(behind.count) acknowledged versions are not on the server, e.g. \(behind.prefix(5))")
            for home in [homeA, homeB] {
                let mirror = try SyncMirror(path: KeychainLocation(home: home).syncMirrorPath)
                let seen = Dictionary(try mirror.rows().filter { $0.version > 0 }.map { ($0.itemID, Int64($0.version)) }, uniquingKeysWith: max)
                let versions = records.mapValues(\.version)
                let apart = Set(seen.keys).union(versions.keys).filter { seen[$0] != versions[$0] }
                #expect(apart.isEmpty, "\(apart.count) items of \(home)'s mirror are not at the server's version, e.g. \(apart.prefix(3).map { "\($0): \(seen[$0] ?? 0) / \(versions[$0] ?? 0)" })")
            }
            // The writer's keychain, killed in the middle of its writes about a hundred times, is whole.
            let verification = try engineA.verify()
            #expect(verification.damaged.isEmpty && verification.notChecked == 0 && verification.verified > 0)
            try engineA.close()
            try await server.kill()

            let rounds = lines.count(where: { $0.hasPrefix("synced ") })
            let failedRounds = lines.count(where: { $0.hasPrefix("sync-error ") })
            print(
                """
                sync kills (seed \(Self.seed)): \(kills[.client, default: 0]) client, \(kills[.server, default: 0]) server, \
                \(kills[.both, default: 0]) both; \(midRound) while a round was syncing, \(midBatch) while the server wrote a batch; \(runs.count) writer runs (ready after \
                \(Self.median(writerStarts)) median), \(server.starts) server starts (listening after \(Self.median(serverStarts)) median); \
                \(rounds) rounds completed, \(failedRounds) failed; \(acks.count) acknowledgements \
                of \(Set(acks.map(\.account)).count) items; \(records.count) records; \(ContinuousClock.now - started)
                """)
        }
    }
}
#endif
