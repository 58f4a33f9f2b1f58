#if Network
import Logging
import PostgresNIO
import ServiceLifecycle

/// `keychain-sync-server setup-database`: the schema brought up to date before the server starts, the role's rights
/// checked, and the `pg_hba.conf` line for the way the server connects.
package enum DatabaseSetup {
    /// What the setup found.
    package struct Report: Sendable, CustomStringConvertible {
        /// The schema steps this run applied.
        package var applied: [Int]
        /// The role the server logs in as.
        package var role: String
        /// The database.
        package var database: String
        /// The tables the role may not read and write.
        package var missingRights: [String]
        /// The `pg_hba.conf` line the server needs.
        package var hbaLine: String

        /// The lines `setup-database` prints.
        package var description: String {
            var lines = [
                "schema: " + (applied.isEmpty ? "up to date" : "applied steps \(applied.map(String.init).joined(separator: ", "))"),
                missingRights.isEmpty
                    ? "role: \(role) may read and write every table"
                    : "role: \(role) may not read and write \(missingRights.joined(separator: ", ")): run as the tables' owner GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(role)",
                "pg_hba.conf: \(hbaLine)",
            ]
            lines.append("Put that line in pg_hba.conf before the other lines that match, and reload PostgreSQL (pg_ctl reload, or SELECT pg_reload_conf()).")
            return lines.joined(separator: "\n")
        }
    }

    /// A setup that cannot go on, with what to do.
    package struct Failure: Error, CustomStringConvertible {
        /// What to do.
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// The tables the server reads and writes.
    static let tables = ["accounts", "devices", "zone_keys", "records", "nonces", "invitations", "schema_migrations"]

    /// Connects as `configuration` says, applies the schema's steps, gives the tables to `owner` when named (the
    /// server's role, when a superuser runs the setup), and checks the server's role's rights.
    package static func run(configuration: PostgresClient.Configuration, owner: String? = nil, logger: Logger) async throws -> Report {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let report = try await withThrowingTaskGroup(of: Report?.self) { group -> Report? in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            let applied = try await SchemaMigrations.run(on: client, logger: logger)
            var role = configuration.username
            for try await name in try await client.query("SELECT current_user::text", logger: logger).decode(String.self) { role = name }
            if let owner {
                // Identifiers cannot be bound: the role is checked to exist, then quoted.
                var exists = false
                for try await _ in try await client.query("SELECT 1 FROM pg_roles WHERE rolname = \(owner)", logger: logger) { exists = true }
                guard exists else { throw Failure("There is no role \(owner): make it first (createuser \(owner)).") }
                let quoted = "\"" + owner.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                for table in tables {
                    try await client.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(table) OWNER TO \(quoted)"), logger: logger)
                }
                role = owner
            }
            var missing: [String] = []
            for table in tables {
                for try await allowed in try await client.query(
                    "SELECT has_table_privilege(\(role), \(table), 'SELECT,INSERT,UPDATE,DELETE')", logger: logger
                ).decode(Bool.self) where !allowed {
                    missing.append(table)
                }
            }
            let database = configuration.database ?? role
            let method = configuration.password == nil ? "peer" : "scram-sha-256"
            let hba =
                configuration.unixSocketPath != nil
                ? "local   \(database)   \(role)   \(method)"
                : "hostssl   \(database)   \(role)   SERVER_ADDRESS/32   scram-sha-256   (SERVER_ADDRESS: the sync server's; use host instead of hostssl without TLS)"
            return Report(applied: applied, role: role, database: database, missingRights: missing, hbaLine: hba)
        }
        guard let report else { throw CancellationError() }
        return report
    }
}
#endif
