#if Network
import Logging
import PostgresNIO

/// The database schema as numbered steps, applied at start-up.
///
/// Each step is a list of single SQL statements (the extended protocol runs one at a time). All pending steps run in
/// one transaction that first takes a transaction-level advisory lock, so several instances starting at once apply
/// each step exactly once: the others wait on the lock and then find the steps recorded in `schema_migrations`.
package enum SchemaMigrations {
    /// The advisory lock key the migration transaction holds (an arbitrary constant of this program).
    package static let advisoryLockKey: Int64 = 0x6b63_7379_6e63_0001

    /// The steps, by number from 1; never edit a released step, add a new one.
    static let steps: [[String]] = [
        [
            """
            CREATE TABLE accounts (
                id text PRIMARY KEY,
                seq bigint NOT NULL DEFAULT 0,
                purged_through bigint NOT NULL DEFAULT 0,
                device_list bytea NOT NULL,
                device_list_version bigint NOT NULL,
                device_list_signer text NOT NULL,
                device_list_signature bytea NOT NULL,
                created timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE devices (
                account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                id text NOT NULL,
                signing_key bytea NOT NULL,
                agreement_key bytea NOT NULL,
                state text NOT NULL CHECK (state IN ('pending', 'trusted', 'removed')),
                code_hash bytea NOT NULL DEFAULT ''::bytea,
                requested timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (account_id, id)
            )
            """,
            """
            CREATE TABLE zone_keys (
                account_id text NOT NULL,
                recipient text NOT NULL,
                key_id text NOT NULL,
                wrapped bytea NOT NULL,
                PRIMARY KEY (account_id, recipient, key_id),
                FOREIGN KEY (account_id, recipient) REFERENCES devices (account_id, id) ON DELETE CASCADE
            )
            """,
            """
            CREATE TABLE records (
                account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                zone text NOT NULL,
                item_id text NOT NULL,
                version bigint NOT NULL,
                deleted boolean NOT NULL,
                ciphertext bytea NOT NULL,
                wrapped_key bytea NOT NULL,
                key_id text NOT NULL,
                writer text NOT NULL,
                seq bigint NOT NULL,
                modified timestamptz NOT NULL,
                PRIMARY KEY (account_id, zone, item_id)
            )
            """,
            "CREATE INDEX records_feed ON records (account_id, zone, seq)",
            "CREATE INDEX records_tombstones ON records (modified) WHERE deleted",
            """
            CREATE TABLE nonces (
                device_id text NOT NULL,
                nonce text NOT NULL,
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (device_id, nonce)
            )
            """,
            "CREATE INDEX nonces_expiry ON nonces (expires_at)",
        ],
        [
            // When a device was removed and by which device's list, told to the removed device.
            "ALTER TABLE devices ADD COLUMN removed_at timestamptz",
            "ALTER TABLE devices ADD COLUMN removed_by text",
            // What each account stores (records' ciphertext and wrapped keys), for the storage quota.
            "ALTER TABLE accounts ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0",
            // One-time invitations to join: the SHA-256 of each secret, until when, and which device used it.
            """
            CREATE TABLE invitations (
                account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                token_hash bytea NOT NULL,
                created_by text NOT NULL,
                expires_at timestamptz NOT NULL,
                used_by text,
                PRIMARY KEY (account_id, token_hash)
            )
            """,
            "CREATE INDEX invitations_expiry ON invitations (expires_at)",
            """
            UPDATE accounts SET stored_bytes = coalesce(
                (SELECT sum(octet_length(ciphertext) + octet_length(wrapped_key)) FROM records WHERE records.account_id = accounts.id), 0)
            """,
        ],
    ]

    /// Brings the database's schema up to date.
    /// - Parameters:
    ///   - client: A running client of the database.
    ///   - logger: Where to log the steps applied.
    /// - Returns: The numbers of the steps this call applied (empty when the schema was current).
    @discardableResult
    package static func run(on client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(advisoryLockKey))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())",
                logger: logger
            )
            var current = 0
            for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations", logger: logger)
                .decode(Int.self)
            {
                current = version
            }
            var applied: [Int] = []
            for (index, statements) in steps.enumerated() where index + 1 > current {
                let version = index + 1
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(version))", logger: logger)
                applied.append(version)
            }
            if !applied.isEmpty {
                logger.info("Applied schema migrations", metadata: ["steps": "\(applied)"])
            }
            return applied
        }
    }
}
#endif
