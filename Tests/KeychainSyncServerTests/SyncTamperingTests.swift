#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import NIOCore
import PostgresNIO
import Testing

/// A malicious operator editing the records table behind the server's back (the schema of
/// `Sources/KeychainSyncServer/Storage`), and raising the sequence so that devices read what it made: the devices
/// reject those records and their items stay as they were.
@Suite("Records tampered with in the database", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncTamperingTests {
    /// What the operator does.
    enum Tampering: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Swaps the ciphertexts and wrapped keys of two items.
        case swapSealed
        /// Swaps only the wrapped item keys of two items.
        case swapWrappedKeys
        /// Serves an item's older version (its ciphertext and wrapped key kept from before) as a newer one.
        case replayOlderVersion
        /// Moves an item's record to another item identifier.
        case moveToAnotherItem

        var testDescription: String { rawValue }

        /// How many records the reading device must reject.
        var rejected: Int {
            switch self {
            case .swapSealed, .swapWrappedKeys: 2
            case .replayOlderVersion, .moveToAnotherItem: 1
            }
        }
    }

    /// An item's record as the database holds it.
    struct Row: Sendable {
        var itemID: String
        var version: Int64
        var ciphertext: ByteBuffer
        var wrappedKey: ByteBuffer
    }

    static func rows(_ servers: TestServers, account: String) async throws -> [Row] {
        try await TestPostgres.withClient(database: servers.database) { client in
            var rows: [Row] = []
            for try await (itemID, version, ciphertext, wrappedKey) in try await client.query(
                "SELECT item_id, version, ciphertext, wrapped_key FROM records WHERE account_id = \(account) ORDER BY item_id"
            ).decode((String, Int64, ByteBuffer, ByteBuffer).self) {
                rows.append(Row(itemID: itemID, version: version, ciphertext: ciphertext, wrappedKey: wrappedKey))
            }
            return rows
        }
    }

    /// Rewrites item `itemID`'s record as `row` says (its identifier, version and sealed parts), at the account's
    /// next sequence number, as the server would after a write.
    static func rewrite(_ itemID: String, as row: Row, in servers: TestServers, account: String) async throws {
        try await servers.sql(
            """
            WITH next AS (UPDATE accounts SET seq = seq + 1 WHERE id = \(account) RETURNING seq)
            UPDATE records SET item_id = \(row.itemID), version = \(row.version), ciphertext = \(row.ciphertext),
                wrapped_key = \(row.wrappedKey), seq = (SELECT seq FROM next), modified = now()
            WHERE account_id = \(account) AND item_id = \(itemID)
            """)
    }

    @Test("The reading device rejects what the operator made, and its items stay as they were", arguments: Tampering.allCases)
    func rejected(_ tampering: Tampering) async throws {
        try await TestServers.with { servers in
            let (devices, account) = try await SyncTestDevice.account(of: 2, on: servers)
            let (writer, reader) = (devices[0], devices[1])
            for name in ["alpha", "bravo", "charlie"] { try writer.add("\(name).example.com", secret: "\(name) v1") }
            #expect(try await SyncTestDevice.settle(devices) != nil)
            let first = try await Self.rows(servers, account: account)
            writer.clock.advance(milliseconds: 1000)
            for name in ["alpha", "bravo", "charlie"] { try writer.update("\(name).example.com", secret: "\(name) v2") }
            #expect(try await SyncTestDevice.settle(devices) != nil)
            let current = try await Self.rows(servers, account: account)
            try #require(current.count == 3 && first.count == 3)
            let before = try reader.contents()
            #expect(before.count == 3)

            switch tampering {
            case .swapSealed:
                var (x, y) = (current[0], current[1])
                swap(&x.ciphertext, &y.ciphertext)
                swap(&x.wrappedKey, &y.wrappedKey)
                try await Self.rewrite(x.itemID, as: x, in: servers, account: account)
                try await Self.rewrite(y.itemID, as: y, in: servers, account: account)
            case .swapWrappedKeys:
                var (x, y) = (current[0], current[1])
                swap(&x.wrappedKey, &y.wrappedKey)
                try await Self.rewrite(x.itemID, as: x, in: servers, account: account)
                try await Self.rewrite(y.itemID, as: y, in: servers, account: account)
            case .replayOlderVersion:
                var replayed = first[0]
                #expect(replayed.version == 1 && current[0].version == 2)
                replayed.version = 3
                try await Self.rewrite(replayed.itemID, as: replayed, in: servers, account: account)
            case .moveToAnotherItem:
                var moved = current[0]
                moved.itemID = UUID().uuidString.lowercased()
                try await Self.rewrite(current[0].itemID, as: moved, in: servers, account: account)
            }

            for device in devices {
                let summary = try await device.sync()
                #expect(summary.counts == SyncSession.RoundSummary(rejected: tampering.rejected))
                #expect(try device.contents() == before)
                #expect(try device.requiredSession.replica.outgoingChanges().isEmpty)
                // Read once: the next round has nothing to reject.
                #expect(try await device.sync().counts == SyncSession.RoundSummary())
            }
            for name in ["alpha", "bravo", "charlie"] {
                #expect(try reader.secret("\(name).example.com") == "\(name) v2")
            }
        }
    }
}
#endif
