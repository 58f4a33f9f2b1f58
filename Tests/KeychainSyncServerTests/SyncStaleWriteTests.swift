#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import PostgresNIO
import Testing

/// A write made stale by another device's, through the real server: the server's conflict answer, and what the
/// device that got it does with it.
@Suite("Stale writes", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncStaleWriteTests {
    /// Waits until `count` statements of `database` wait on a lock (at most about ten seconds).
    static func waitForLockWaiters(_ count: Int64, in servers: TestServers) async throws {
        for _ in 0..<1000 {
            let waiting = try await servers.sqlInt(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            if waiting >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("\(count) writes never came to wait on the account's row")
    }

    @Test(
        "Both devices edit one item; B writes first, so A's batch meets the conflict answer; the retry loses nothing",
        arguments: [true, false])
    func staleWrite(aEditsLast: Bool) async throws {
        try await TestServers.with { servers in
            let (devices, account) = try await SyncTestDevice.account(of: 2, on: servers)
            let (a, b) = (devices[0], devices[1])
            try a.add("shared.example.com", secret: "v1")
            try a.add("renamed.example.com", secret: "old")
            #expect(try await SyncTestDevice.settle(devices) != nil)

            // Apart: both edit the shared item, the later one by its clock wins; A also changes another item and
            // adds one, in the same batch as its edit.
            a.clock.advance(milliseconds: aEditsLast ? 2000 : 1000)
            b.clock.advance(milliseconds: aEditsLast ? 1000 : 2000)
            try a.update("shared.example.com", secret: "from a")
            try b.update("shared.example.com", secret: "from b")
            try a.update("renamed.example.com", secret: "new from a")
            try a.add("added.example.com", secret: "added on a")
            let winner = aEditsLast ? "from a" : "from b"

            // Both read the feed before either writes: the account's row is held, so each write waits on it, B's
            // first; then B's is taken and A's finds the shared item at a newer version than it read.
            let aRound = try await TestPostgres.withClient(database: servers.database) { client in
                try await client.withTransaction(logger: TestPostgres.logger) { connection in
                    try await connection.query("SELECT seq FROM accounts WHERE id = \(account) FOR UPDATE", logger: TestPostgres.logger)
                    let bRound = Task { try await b.sync() }
                    try await Self.waitForLockWaiters(1, in: servers)
                    let aRound = Task { try await a.sync() }
                    try await Self.waitForLockWaiters(2, in: servers)
                    return (bRound, aRound)
                }
            }
            let bSummary = try await aRound.0.value
            let aSummary = try await aRound.1.value
            #expect(bSummary.counts == SyncSession.RoundSummary(uploaded: 1))
            // Nothing of A's batch was taken; the shared item's current record came with the answer and was weighed.
            #expect(aSummary.conflicts == 1)
            #expect(aSummary.uploaded == 0)
            #expect(aSummary.applied == 0)
            #expect(try a.secret("shared.example.com") == winner)
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account)") == 2)

            // The retry: A's other changes, and its edit if it won, go out; both end with the winner.
            let passes = try await SyncTestDevice.settle(devices)
            #expect(passes != nil)
            for device in devices {
                #expect(try device.secret("shared.example.com") == winner)
                #expect(try device.secret("renamed.example.com") == "new from a")
                #expect(try device.secret("added.example.com") == "added on a")
            }
            #expect(try a.contents() == b.contents())
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account)") == 3)
            // The shared item was written once by B, and once more by A only if A's edit won.
            #expect(try await servers.sqlInt("SELECT max(version) FROM records WHERE account_id = \(account)") == (aEditsLast ? 3 : 2))
        }
    }
}
#endif
