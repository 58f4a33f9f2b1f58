#if Network
import ArgumentParser
import KeychainSyncServer
import KeychainVersion
import Logging
import PostgresNIO
import ServiceLifecycle

/// `keychain-sync-server`: parses the command line and runs the server beside its PostgreSQL client until SIGTERM
/// or SIGINT, which shut it down gracefully. Everything else is in KeychainSyncServer.
@main
struct KeychainSyncServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychain-sync-server",
        abstract: "Serve end-to-end-encrypted keychain sync over HTTP, stored in PostgreSQL.",
        discussion: """
            Give the database as --postgres URL (libpq style; PGPASSWORD keeps the password off the command line) \
            or as --postgres-socket DIR with --postgres-user and --postgres-database. The schema is created or \
            upgraded at start-up. Several instances may serve one database.
            """,
        version: KeychainVersion.line(program: "keychain-sync-server")
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 8080

    @Option(help: "The database as a URL, e.g. postgres://sync@db.internal:5432/sync?sslmode=require.")
    var postgres: String?

    @Option(help: "The folder of the database server's Unix socket (instead of --postgres).")
    var postgresSocket: String?

    @Option(help: "The database user, with --postgres-socket.")
    var postgresUser: String?

    @Option(help: "The database name, with --postgres-socket (default: the user's name).")
    var postgresDatabase: String?

    @Option(help: "Days a deletion (tombstone) is kept before it is purged; clients offline longer resync.")
    var tombstoneHorizonDays = 30

    @Option(help: "Seconds a connection may stay silent, between requests or in the middle of one (a half-sent body), before it is closed.")
    var idleTimeout = SyncLimits.defaultIdleTimeoutSeconds

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard (1...3600).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1 to 3600 seconds.") }
        guard tombstoneHorizonDays >= 1 else { throw ValidationError("--tombstone-horizon-days must be at least 1.") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical.")
        }
        switch (postgres, postgresSocket) {
        case (.some, .some): throw ValidationError("Give either --postgres or --postgres-socket, not both.")
        case (nil, nil): throw ValidationError("Give the database: --postgres URL, or --postgres-socket DIR --postgres-user USER.")
        case (nil, .some) where postgresUser == nil: throw ValidationError("--postgres-socket needs --postgres-user.")
        default: break
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "keychain-sync-server")
        let database: PostgresClient.Configuration
        if let postgres {
            do {
                database = try DatabaseAddress.configuration(url: postgres)
            } catch let error as DatabaseAddress.Invalid {
                throw ValidationError(error.description)
            }
        } else {
            let user = postgresUser ?? ""
            database = DatabaseAddress.socket(folder: postgresSocket ?? "", user: user, database: postgresDatabase ?? user)
        }
        let client = PostgresClient(configuration: database, backgroundLogger: logger)
        let app = try SyncServer.makeApplication(
            configuration: SyncServerConfiguration(
                host: host, port: port, tombstoneHorizonSeconds: Int64(tombstoneHorizonDays) * 24 * 60 * 60,
                idleTimeout: .seconds(idleTimeout)
            ),
            database: client,
            logger: logger
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: client), .init(service: app, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}
#else
import Foundation

/// Built without the package's Network trait: says how to build the server, and fails.
@main
enum KeychainSyncServerUnavailable {
    static func main() {
        FileHandle.standardError.write(Data("keychain-sync-server: this build has no sync server. Build it with the Network trait: swift build --traits Network\n".utf8))
        exit(1)
    }
}
#endif
