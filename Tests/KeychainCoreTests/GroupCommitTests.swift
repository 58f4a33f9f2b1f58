import Foundation
import Testing
import KeychainClient
@testable import KeychainCore
import Synchronization
import GRDB

/// Runs `body` on `count` threads of their own at once (not Dispatch's pool, which is as wide as the CPU).
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(i)
            group.leave()
        }
    }
    group.wait()
}

@Suite struct GroupCommitTests {
    func item(_ account: String) -> [String: PlistValue] {
        ["class": .string("genp"), "acct": .string(account), "svce": .string("gc"), "v_Data": .data(Data(account.utf8))]
    }

    @Test func concurrentWritesShareCommitsAndEachKeepsItsOwnOutcome() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("gc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let engine = try KeychainEngine(location: KeychainLocation(home: home))
        let caller = AccessPolicy(groups: ["g"])
        _ = try InProcessKeychain(engine: engine, caller: caller).secItemAdd(item("taken"))
        let before = engine.commitStatistics

        // 16 threads each add 20 items of their own, and each also tries to add one that exists.
        let outcomes = Mutex<[String: Int32]>([:])
        onThreads(16) { t in
            for i in 0..<20 {
                for account in ["t\(t)-\(i)", "taken"] {
                    var status: Int32 = 0
                    do { _ = try InProcessKeychain(engine: engine, caller: caller).secItemAdd(item(account)) } catch { status = (error as? KeychainError)?.status.rawValue ?? -1 }
                    outcomes.withLock { $0[account == "taken" ? "taken-\(t)-\(i)" : account] = status }
                }
            }
        }
        let results = outcomes.withLock { $0 }
        #expect(results.count == 640)
        #expect(
            results.filter { $0.key.hasPrefix("taken-") }.allSatisfy { $0.value == KeychainStatus.duplicateItem.rawValue },
            "a duplicate in a shared transaction fails alone")
        #expect(results.filter { !$0.key.hasPrefix("taken-") }.allSatisfy { $0.value == 0 })

        let found = try InProcessKeychain(engine: engine, caller: caller).secItemCopyMatching([
            "class": .string("genp"), "svce": .string("gc"), "m_Limit": .string("m_LimitAll"),
            "r_Attributes": .bool(true),
        ])
        guard case .array(let all)? = found else { Issue.record("no items"); return }
        #expect(all.count == 321, "every acknowledged add is there, and the duplicates are not")

        let after = engine.commitStatistics
        #expect(after.writes - before.writes == 320, "only successful writes count as committed")
        #expect(after.transactions - before.transactions < 320, "16 threads writing at once shared commits")
    }

    /// Every commit is fsynced before the write is acknowledged: the engine's writer runs with `synchronous=FULL`,
    /// which in WAL mode syncs the WAL at each commit (GRDB's pool sets NORMAL, which syncs only at checkpoints).
    @Test func theWriterSyncsEveryCommit() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("gc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        for _ in 0..<2 {  // a new keychain, then the same one opened again
            let engine = try KeychainEngine(location: KeychainLocation(home: home))
            let level = try engine.pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
            #expect(level == 2, "synchronous=FULL")
            #expect(try engine.pool.writeWithoutTransaction { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
            try engine.close()
        }
    }

    /// Random bytes come from the kernel in one call for each key, nonce or identifier.
    @Test func systemRandomFillsEveryByte() {
        let random = SystemRandom()
        for count in [0, 1, 12, 16, 32, 300] {
            #expect(random.bytes(count).count == count)
        }
        let samples = (0..<4).map { _ in random.bytes(32) }
        #expect(Set(samples).count == 4, "no two 256-bit draws are equal")
        #expect(samples.allSatisfy { $0.contains { $0 != 0 } })
    }

    @Test func writesThatArriveDuringACommitShareTheNextOne() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gc-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let pool = try DatabasePool(path: path)
        try pool.write { try $0.execute(sql: "CREATE TABLE t (k INTEGER PRIMARY KEY)") }
        let writer = GroupCommitWriter(pool: pool)
        let firstIsCommitting = DispatchSemaphore(value: 0)
        let results = Mutex<[Int: Bool]>([:])
        onThreads(17) { i in
            if i > 0 { firstIsCommitting.wait() }  // everyone else arrives while the first write holds the writer
            let ok =
                (try? writer.perform { db -> Void in
                    try db.execute(sql: "INSERT INTO t (k) VALUES (?)", arguments: [i % 16])  // 0 and 16 collide
                    if i == 0 {
                        for _ in 0..<16 { firstIsCommitting.signal() }
                        Thread.sleep(forTimeInterval: 0.3)
                    }
                }) != nil
            results.withLock { $0[i] = ok }
        }
        let outcome = results.withLock { $0 }
        #expect(outcome[0] == true)
        #expect(outcome[16] == false, "the colliding write fails alone")
        #expect((1..<16).allSatisfy { outcome[$0] == true })
        let stats = writer.statistics
        #expect(stats.writes == 16)
        #expect(stats.transactions == 2, "the 16 writes that queued behind the first shared one commit")
        #expect(stats.serialTime >= .milliseconds(300), "the writer's serial time holds the first commit, which held the writer 0.3 s")
        #expect(try pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM t") } == 16)
    }
}
