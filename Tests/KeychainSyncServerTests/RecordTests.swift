#if Network
import Foundation
import KeychainSyncAPI
import KeychainSyncServer
import Logging
import Testing

/// Writes, conflicts, the change feed and tombstone purging against a real server and PostgreSQL.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct RecordTests {
    @Test func writtenRecordsComeBackThroughTheFeedPageByPage() async throws {
        try await TestServers.with { servers in
            let (client, device, account) = try await servers.newAccount()

            let written = try await client.write(account, (0..<5).map { recordWrite("item\($0)", expected: 0) }, as: device)
            #expect(written.status == 200)
            let result = try written.decode(Components.Schemas.WriteResult.self)
            #expect(result.seq == 5)
            #expect(result.records.map(\.seq) == [1, 2, 3, 4, 5])
            #expect(result.records.allSatisfy { $0.version == 1 })

            let update = try await client.write(account, [recordWrite("item1", expected: 1), recordWrite("item9", expected: 0)], as: device)
            #expect(try update.decode(Components.Schemas.WriteResult.self).seq == 7)

            // Pages of 3: item0, item2, item3 | item4, item1 (v2), item9 — the latest version of each item, by seq.
            let first = try await client.changes(account, since: 0, limit: 3, as: device).decode(Components.Schemas.Changes.self)
            #expect(first.records.map(\.itemId) == ["item0", "item2", "item3"])
            #expect(first.more && first.next == 4)
            let second = try await client.changes(account, since: first.next, limit: 3, as: device).decode(Components.Schemas.Changes.self)
            #expect(second.records.map(\.itemId) == ["item4", "item1", "item9"])
            #expect(second.records.map(\.seq) == [5, 6, 7])
            #expect(!second.more && second.next == 7)
            let item1 = try #require(second.records.first { $0.itemId == "item1" })
            #expect(item1.version == 2 && item1.writer == device.id && item1.keyId == "zk1")
            #expect(Array(item1.ciphertext.data) == Array("sealed item1 v2".utf8))
            #expect(abs(item1.modified - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)

            let empty = try await client.changes(account, since: 7, as: device).decode(Components.Schemas.Changes.self)
            #expect(empty.records.isEmpty && !empty.more && empty.next == 7)

            // Another zone has its own records but shares the account's sequence.
            let notes = try await client.write(account, zone: "notes", [recordWrite("n", expected: 0)], as: device)
            #expect(try notes.decode(Components.Schemas.WriteResult.self).seq == 8)
            let keychain = try await client.changes(account, since: 7, as: device).decode(Components.Schemas.Changes.self)
            #expect(keychain.records.isEmpty)
        }
    }

    @Test func aStaleVersionWritesNothingOfTheBatchAndAnswersTheCurrentRecords() async throws {
        try await TestServers.with { servers in
            let (client, device, account) = try await servers.newAccount()
            #expect(try await client.write(account, [recordWrite("a", expected: 0), recordWrite("b", expected: 0)], as: device).status == 200)

            let conflicting = try await client.write(
                account,
                [recordWrite("new", expected: 0), recordWrite("a", expected: 1), recordWrite("b", expected: 0), recordWrite("ghost", expected: 3)],
                as: device
            )
            #expect(conflicting.status == 409)
            let conflict = try conflicting.decode(Components.Schemas.WriteConflict.self)
            #expect(conflict.error == "version_conflict")
            #expect(conflict.conflicts.map(\.itemId) == ["b", "ghost"])
            #expect(conflict.conflicts[0].currentVersion == 1 && conflict.conflicts[0].current?.itemId == "b")
            #expect(Array(conflict.conflicts[0].current?.ciphertext.data ?? []) == Array("sealed b v1".utf8))
            #expect(conflict.conflicts[1].currentVersion == 0 && conflict.conflicts[1].current == nil)

            // Nothing of the batch was written, and no sequence number was spent.
            let feed = try await client.changes(account, since: 0, as: device).decode(Components.Schemas.Changes.self)
            #expect(feed.records.map(\.itemId) == ["a", "b"])
            #expect(feed.records.map(\.version) == [1, 1])
            let next = try await client.write(account, [recordWrite("c", expected: 0)], as: device)
            #expect(try next.decode(Components.Schemas.WriteResult.self).seq == 3)
        }
    }

    @Test func concurrentWritersGetGapFreeCommitOrderedSequenceNumbers() async throws {
        try await TestServers.with(count: 2) { servers in
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await servers.client(0).createAccount(account, device: device).status == 201)
            let writers = 2
            let batches = 15
            let results = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var seqs: [Int64] = []
                        for batch in 0..<batches {
                            let writes = (0..<3).map { recordWrite("w\(writer)-b\(batch)-\($0)", expected: 0) }
                            let response = try await servers.client(writer).write(account, writes, as: device)
                            #expect(response.status == 200)
                            let result = try response.decode(Components.Schemas.WriteResult.self)
                            // A batch's records take consecutive numbers, ending at the batch's seq.
                            #expect(result.records.map(\.seq) == [result.seq - 2, result.seq - 1, result.seq])
                            seqs += result.records.map(\.seq)
                        }
                        return seqs
                    }
                }
                var all: [Int64] = []
                for try await seqs in group { all += seqs }
                return all
            }
            let total = writers * batches * 3
            #expect(results.sorted() == Array(1...Int64(total)))
            var read: [Int64] = []
            var since: Int64 = 0
            var more = true
            while more {
                let page = try await servers.client(1).changes(account, since: since, limit: 7, as: device)
                    .decode(Components.Schemas.Changes.self)
                read += page.records.map(\.seq)
                since = page.next
                more = page.more
            }
            #expect(read == Array(1...Int64(total)))
        }
    }

    @Test func purgedTombstonesSendOldReadersBackToZero() async throws {
        try await TestServers.with { servers in
            let (client, device, account) = try await servers.newAccount()
            #expect(try await client.write(account, [recordWrite("keep", expected: 0), recordWrite("gone", expected: 0)], as: device).status == 200)
            #expect(try await client.write(account, [recordWrite("gone", expected: 1, deleted: true, text: "tombstone")], as: device).status == 200)
            #expect(try await client.write(account, [recordWrite("later", expected: 0)], as: device).status == 200)

            // Age the tombstone past the 30-day horizon and run the maintenance pass the server runs periodically.
            try await servers.sql("UPDATE records SET modified = now() - interval '31 days' WHERE deleted")
            let report = try await TestPostgres.withClient(database: servers.database) { database in
                try await SyncStore(client: database, logger: TestPostgres.logger).runMaintenance(tombstoneHorizon: 30 * 24 * 60 * 60)
            }
            #expect(report.purgedTombstones == 1)
            #expect(try await servers.sqlInt("SELECT purged_through FROM accounts") == 3)

            let behind = try await client.changes(account, since: 1, as: device)
            #expect(behind.status == 410)
            let resync = try behind.decode(Components.Schemas.Resync.self)
            #expect(resync.resync && resync.error == "resync")
            let fresh = try await client.changes(account, since: 0, as: device).decode(Components.Schemas.Changes.self)
            #expect(fresh.records.map(\.itemId) == ["keep", "later"])
            #expect(try await client.changes(account, since: 3, as: device).status == 200)
        }
    }

    @Test func limitsAreEnforcedWithMessages() async throws {
        try await TestServers.with { servers in
            let (client, device, account) = try await servers.newAccount()

            let tooMany = try await client.write(account, (0..<501).map { recordWrite("i\($0)", expected: 0) }, as: device)
            #expect(tooMany.status == 400)
            #expect(try tooMany.decode(Components.Schemas._Error.self).message.contains("500"))

            let twice = try await client.write(account, [recordWrite("x", expected: 0), recordWrite("x", expected: 0)], as: device)
            #expect(twice.status == 400)

            let bigCiphertext = Components.Schemas.RecordWrite(
                itemId: "big", expectedVersion: 0, deleted: false, ciphertext: .init([UInt8](repeating: 1, count: 256 * 1024 + 1)),
                wrappedKey: .init([1]), keyId: "zk1"
            )
            let big = try await client.write(account, [bigCiphertext], as: device)
            #expect(big.status == 400 && String(decoding: big.body, as: UTF8.self).contains("ciphertext"))

            let badZone = try await client.write(account, zone: "no%20spaces", [recordWrite("x", expected: 0)], as: device)
            #expect(badZone.status == 400)

            let badLimit = try await client.changes(account, since: 0, limit: 1001, as: device)
            #expect(badLimit.status == 400)

            let notJSON = try await client.send(.POST, "/v1/accounts/\(account)/zones/keychain/records", bytes: Array("{".utf8), as: device)
            #expect(notJSON.status == 400 && notJSON.errorCode == "bad_request")

            // Over 8 MiB: refused before the signature is even looked at.
            let huge = [UInt8](repeating: UInt8(ascii: "a"), count: 8 * 1024 * 1024 + 1)
            let tooLarge = try await client.send(.POST, "/v1/accounts/\(account)/zones/keychain/records", bytes: huge, as: device)
            #expect(tooLarge.status == 413 && tooLarge.errorCode == "body_too_large")
        }
    }
}
#endif
