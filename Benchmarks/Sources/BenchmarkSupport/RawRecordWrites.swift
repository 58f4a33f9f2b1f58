import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The floor under the sync server's record writes: rows shaped like its `records` (same columns, same sizes,
/// same upsert), written straight to PostgreSQL with postgres-nio in transactions of the server's batch size —
/// no HTTP, no JSON, no signature check, no version check, no push.
public final class RawRecordWrites: Sendable {
    let client: PostgresClient
    let runner: Task<Void, Never>
    let logger = Logger(label: "raw-record-writes")
    /// Bytes of one record's ciphertext and wrapped key (a small password item, sealed).
    static let ciphertextSize = 420
    static let wrappedKeySize = 60

    /// Connects to `database` and makes a table of its own (`raw_records`).
    public init(database: ThrowawayPostgres) async throws {
        let configuration = PostgresClient.Configuration(
            unixSocketPath: database.socketFolder + "/.s.PGSQL.5432", username: database.user, password: nil, database: database.user)
        let client = PostgresClient(configuration: configuration)
        self.client = client
        runner = Task { await client.run() }
        try await client.query("DROP TABLE IF EXISTS raw_records")
        try await client.query(
            """
            CREATE TABLE raw_records (
                account_id text NOT NULL, zone text NOT NULL, item_id text NOT NULL, version bigint NOT NULL,
                deleted boolean NOT NULL, ciphertext bytea NOT NULL, wrapped_key bytea NOT NULL, key_id text NOT NULL,
                writer text NOT NULL, seq bigint NOT NULL, modified timestamptz NOT NULL,
                PRIMARY KEY (account_id, zone, item_id))
            """)
        try await client.query("CREATE INDEX raw_records_feed ON raw_records (account_id, zone, seq)")
    }

    /// Writes `writers` × `perWriter` rows, each writer its own account, in transactions of `batch` rows, all
    /// writers at once; returns the seconds it took.
    public func write(writers: Int, perWriter: Int, batch: Int, round: Int) async throws -> Double {
        let ciphertext = ByteBuffer(repeating: 0x5a, count: Self.ciphertextSize)
        let wrapped = ByteBuffer(repeating: 0xa5, count: Self.wrappedKeySize)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask { [client, logger] in
                    let account = "account-\(writer)"
                    for first in stride(from: 0, to: perWriter, by: batch) {
                        try await client.withTransaction(logger: logger) { connection in
                            for index in first..<min(perWriter, first + batch) {
                                let item = "item-\(round)-\(index)"
                                let seq = Int64(round * perWriter + index)
                                try await connection.query(
                                    """
                                    INSERT INTO raw_records (account_id, zone, item_id, version, deleted, ciphertext, wrapped_key, key_id, writer, seq, modified)
                                    VALUES (\(account), 'keychain', \(item), 1, false, \(ciphertext), \(wrapped), 'key', 'device', \(seq), now())
                                    ON CONFLICT (account_id, zone, item_id) DO UPDATE SET
                                        version = excluded.version, ciphertext = excluded.ciphertext, seq = excluded.seq, modified = excluded.modified
                                    """, logger: logger)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Closes the connections.
    public func stop() {
        runner.cancel()
    }
}
