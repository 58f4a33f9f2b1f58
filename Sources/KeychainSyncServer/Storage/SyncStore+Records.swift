#if Network
import Foundation
import Logging
import NIOCore
import PostgresNIO

extension SyncStore {
    /// The PostgreSQL channel on which committed writes are announced, as `account:zone:seq`.
    package static let notificationChannel = "keychain_sync"

    /// A stale `expected_version` found in a batch.
    package struct VersionConflict: Sendable, Equatable {
        /// The item's id.
        package var itemID: String
        /// The version the write expected.
        package var expectedVersion: Int64
        /// The item's current record, `nil` when it does not exist (version 0).
        package var current: StoredRecord?
    }

    /// A record a batch wrote.
    package struct WrittenRecord: Sendable, Equatable {
        /// The item's id.
        package var itemID: String
        /// Its new version.
        package var version: Int64
        /// Its sequence number.
        package var seq: Int64
    }

    /// What became of a write batch.
    package enum WriteOutcome: Sendable {
        /// Every write is committed; the records and the account's sequence number after the batch.
        case written([WrittenRecord], seq: Int64)
        /// Nothing was written: these items' versions differ from the expected ones.
        case conflict([VersionConflict])
        /// No such account.
        case noSuchAccount
        /// Nothing was written: the account would store more than its quota (bytes it would hold, the quota).
        case overQuota(wouldStore: Int64, quota: Int64)
    }

    private struct OverQuota: Error {
        var wouldStore: Int64
        var quota: Int64
    }

    private struct ConflictFound: Error {
        var conflicts: [VersionConflict]
    }

    private struct AccountMissing: Error {}

    private static let recordColumns =
        "item_id, version, deleted, ciphertext, wrapped_key, key_id, writer, seq, (extract(epoch FROM modified) * 1000)::bigint"

    /// Writes a batch all or nothing, in one transaction.
    ///
    /// The transaction first takes the batch's sequence numbers with `UPDATE accounts SET seq = seq + n`, whose row
    /// lock orders the account's writers by commit: a reader that has seen `seq` N never later finds a record with a
    /// smaller one. It then checks every expected version, writes, and announces the batch with `pg_notify`.
    /// The account's stored bytes (`accounts.stored_bytes`: ciphertexts and wrapped keys) move by what the batch
    /// adds and replaces; a batch that would take them past `quota` writes nothing (deletions and shrinking writes
    /// always pass).
    package func write(account: String, zone: String, writer: String, writes: [RecordWrite], quota: Int64 = .max) async throws -> WriteOutcome {
        do {
            return try await client.withTransaction(logger: logger) { connection in
                var last: Int64?
                for try await seq in try await connection.query(
                    "UPDATE accounts SET seq = seq + \(Int64(writes.count)) WHERE id = \(account) RETURNING seq",
                    logger: logger
                ).decode(Int64.self) {
                    last = seq
                }
                guard let last else { throw AccountMissing() }
                var current: [String: StoredRecord] = [:]
                for record in try await Self.records(
                    query: """
                        SELECT \(unescaped: Self.recordColumns) FROM records
                        WHERE account_id = \(account) AND zone = \(zone) AND item_id = ANY(\(writes.map(\.itemID)))
                        """,
                    on: connection,
                    logger: logger
                ) {
                    current[record.itemID] = record
                }
                let conflicts = writes.compactMap { write -> VersionConflict? in
                    let record = current[write.itemID]
                    guard (record?.version ?? 0) != write.expectedVersion else { return nil }
                    return VersionConflict(itemID: write.itemID, expectedVersion: write.expectedVersion, current: record)
                }
                guard conflicts.isEmpty else { throw ConflictFound(conflicts: conflicts) }
                let added = writes.reduce(Int64(0)) { $0 + Int64($1.ciphertext.count + $1.wrappedKey.count) }
                let replaced = writes.reduce(Int64(0)) { total, write in
                    total + (current[write.itemID].map { Int64($0.ciphertext.count + $0.wrappedKey.count) } ?? 0)
                }
                for try await stored in try await connection.query(
                    "UPDATE accounts SET stored_bytes = stored_bytes + \(added - replaced) WHERE id = \(account) RETURNING stored_bytes",
                    logger: logger
                ).decode(Int64.self) where added > replaced && stored > quota {
                    throw OverQuota(wouldStore: stored, quota: quota)
                }
                let first = last - Int64(writes.count) + 1
                var written: [WrittenRecord] = []
                for (offset, write) in writes.enumerated() {
                    let seq = first + Int64(offset)
                    let version = write.expectedVersion + 1
                    try await connection.query(
                        """
                        INSERT INTO records (account_id, zone, item_id, version, deleted, ciphertext, wrapped_key, key_id, writer, seq, modified)
                        VALUES (\(account), \(zone), \(write.itemID), \(version), \(write.deleted), \(ByteBuffer(bytes: write.ciphertext)),
                                \(ByteBuffer(bytes: write.wrappedKey)), \(write.keyID), \(writer), \(seq), now())
                        ON CONFLICT (account_id, zone, item_id) DO UPDATE SET
                            version = excluded.version, deleted = excluded.deleted, ciphertext = excluded.ciphertext,
                            wrapped_key = excluded.wrapped_key, key_id = excluded.key_id, writer = excluded.writer,
                            seq = excluded.seq, modified = excluded.modified
                        """,
                        logger: logger
                    )
                    written.append(WrittenRecord(itemID: write.itemID, version: version, seq: seq))
                }
                try await connection.query(
                    "SELECT pg_notify(\(Self.notificationChannel), \(PushNotification.changed(account: account, zone: zone, seq: last).payload))",
                    logger: logger
                )
                return .written(written, seq: last)
            }
        } catch let error as PostgresTransactionError {
            if let found = error.closureError as? ConflictFound { return .conflict(found.conflicts) }
            if error.closureError is AccountMissing { return .noSuchAccount }
            if let over = error.closureError as? OverQuota { return .overQuota(wouldStore: over.wouldStore, quota: over.quota) }
            throw error
        }
    }

    /// A page of the change feed.
    package enum ChangesPage: Sendable {
        /// The records after `since`, by ascending `seq`, and whether more follow.
        case page([StoredRecord], more: Bool)
        /// Tombstones after `since` were purged: the client must read from 0 again.
        case resync(purgedThrough: Int64)
        /// No such account.
        case noSuchAccount
    }

    /// The latest version of each item of a zone whose `seq` is greater than `since`, at most `limit` of them.
    package func changes(account: String, zone: String, since: Int64, limit: Int) async throws -> ChangesPage {
        try await client.withConnection { connection in
            var purgedThrough: Int64?
            for try await value in try await connection.query(
                "SELECT purged_through FROM accounts WHERE id = \(account)",
                logger: logger
            ).decode(Int64.self) {
                purgedThrough = value
            }
            guard let purgedThrough else { return .noSuchAccount }
            if since > 0 && since < purgedThrough { return .resync(purgedThrough: purgedThrough) }
            var records = try await Self.records(
                query: """
                    SELECT \(unescaped: Self.recordColumns) FROM records
                    WHERE account_id = \(account) AND zone = \(zone) AND seq > \(since)
                    ORDER BY seq LIMIT \(limit + 1)
                    """,
                on: connection,
                logger: logger
            )
            let more = records.count > limit
            if more { records.removeLast() }
            return .page(records, more: more)
        }
    }

    private static func records(query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> [StoredRecord] {
        var records: [StoredRecord] = []
        for try await (itemID, version, deleted, ciphertext, wrappedKey, keyID, writer, seq, modified) in try await connection.query(
            query,
            logger: logger
        ).decode((String, Int64, Bool, ByteBuffer, ByteBuffer, String, String, Int64, Int64).self) {
            records.append(
                StoredRecord(
                    itemID: itemID, version: version, deleted: deleted, ciphertext: ciphertext.bytes, wrappedKey: wrappedKey.bytes,
                    keyID: keyID, writer: writer, seq: seq, modifiedMillis: modified
                )
            )
        }
        return records
    }

    // MARK: Maintenance

    /// What one maintenance pass removed.
    package struct MaintenanceReport: Sendable, Equatable {
        /// Tombstones purged.
        package var purgedTombstones: Int
        /// Expired nonces deleted.
        package var expiredNonces: Int
        /// Lapsed join requests deleted.
        package var lapsedJoins: Int
    }

    /// Purges tombstones older than the horizon (raising each account's `purged_through`), and deletes expired
    /// nonces and lapsed join requests.
    /// - Parameter tombstoneHorizon: How long a tombstone stays, in seconds.
    package func runMaintenance(tombstoneHorizon: Int64) async throws -> MaintenanceReport {
        var report = MaintenanceReport(purgedTombstones: 0, expiredNonces: 0, lapsedJoins: 0)
        try await client.withTransaction(logger: logger) { connection in
            for try await count in try await connection.query(
                """
                WITH purged AS (
                    DELETE FROM records WHERE deleted AND modified < now() - make_interval(secs => \(tombstoneHorizon))
                    RETURNING account_id, seq, octet_length(ciphertext) + octet_length(wrapped_key) AS bytes
                ), raised AS (
                    UPDATE accounts SET purged_through = greatest(accounts.purged_through, p.max_seq),
                        stored_bytes = greatest(0, accounts.stored_bytes - p.bytes)
                    FROM (SELECT account_id, max(seq) AS max_seq, sum(bytes) AS bytes FROM purged GROUP BY account_id) AS p
                    WHERE accounts.id = p.account_id
                    RETURNING 1
                )
                SELECT count(*) FROM purged
                """,
                logger: logger
            ).decode(Int.self) {
                report.purgedTombstones = count
            }
        }
        for try await count in try await client.query(
            "WITH gone AS (DELETE FROM nonces WHERE expires_at < now() RETURNING 1) SELECT count(*) FROM gone",
            logger: logger
        ).decode(Int.self) {
            report.expiredNonces = count
        }
        try await client.query("DELETE FROM invitations WHERE expires_at < now() - interval '1 day'", logger: logger)
        for try await count in try await client.query(
            """
            WITH gone AS (
                DELETE FROM devices
                WHERE state = 'pending' AND requested < now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds))
                RETURNING 1
            ) SELECT count(*) FROM gone
            """,
            logger: logger
        ).decode(Int.self) {
            report.lapsedJoins = count
        }
        return report
    }
}
#endif
