#if Network
import ArgumentParser
import KeychainSyncAPI
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
            upgraded at start-up (`keychain-sync-server setup-database` does it beforehand, checks the role's \
            rights and prints the pg_hba.conf line). Several instances may serve one database. SIGTERM or SIGINT \
            stops it within 10 seconds: it stops accepting, finishes what it can, and closes its connections.
            """,
        version: KeychainVersion.line(program: "keychain-sync-server"),
        subcommands: [SetupDatabase.self]
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 8080

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Days a deletion (tombstone) is kept before it is purged; clients offline longer resync.")
    var tombstoneHorizonDays = 30

    @Option(help: "Seconds a connection may stay silent, between requests or in the middle of one (a half-sent body), before it is closed.")
    var idleTimeout = SyncLimits.defaultIdleTimeoutSeconds

    @Option(help: "Seconds a request may take once read (waiting for the database included); past that it answers 503, so a client learns at once that PostgreSQL is away.")
    var requestTimeout = SyncLimits.defaultRequestTimeoutSeconds

    @Option(help: "The most each account may store, in MiB (records' ciphertexts and wrapped keys); past it a write answers 507.")
    var storageQuotaMib = Int(SyncLimits.defaultStorageQuotaBytes / (1024 * 1024))

    @Option(help: "Who may create accounts: open (anyone, within the rate limit), token (with a token of --account-tokens-file) or closed.")
    var accountCreation: AccountCreationMode = .open

    @Option(help: "A file of tokens, one per line, that allow creating an account with --account-creation token (keep it private: 0600).")
    var accountTokensFile: String?

    @Option(help: "Accounts one source address may create per hour (also the burst).")
    var accountCreationsPerHour = SyncRateLimits().accountCreationsPerAddressPerHour

    @Option(help: "Join requests one source address may send per hour (also the burst).")
    var joinsPerAddressPerHour = SyncRateLimits().joinsPerAddressPerHour

    @Option(help: "Writes (record batches, device lists, zone keys) one source address may send per minute (also the burst).")
    var writesPerAddressPerMinute = SyncRateLimits().writesPerAddressPerMinute

    @Option(help: "Writes one account may take per minute (also the burst).")
    var writesPerAccountPerMinute = SyncRateLimits().writesPerAccountPerMinute

    @Option(help: "Behind a proxy: the header that carries the client's address (its last entry), e.g. X-Forwarded-For. Only set it when the proxy always sets it.")
    var clientAddressHeader: String?

    @Option(help: "The address of the monitoring listener (GET /metrics and /health; never on the API's).")
    var metricsHost = "127.0.0.1"

    @Option(help: "The port of the monitoring listener.")
    var metricsPort = 9464

    @Flag(help: "Serve no monitoring listener.")
    var noMetrics = false

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535.") }
        guard storageQuotaMib >= 1 else { throw ValidationError("--storage-quota-mib must be at least 1.") }
        guard (accountCreation == .token) == (accountTokensFile != nil) else {
            throw ValidationError("--account-creation token needs --account-tokens-file, and --account-tokens-file goes with --account-creation token.")
        }
        for (name, value) in [
            ("--account-creations-per-hour", accountCreationsPerHour), ("--joins-per-address-per-hour", joinsPerAddressPerHour),
            ("--writes-per-address-per-minute", writesPerAddressPerMinute),
            ("--writes-per-account-per-minute", writesPerAccountPerMinute),
        ] where value < 0 {
            throw ValidationError("\(name) must be 0 (refuse all) or more.")
        }
        guard (0...65535).contains(metricsPort) else { throw ValidationError("--metrics-port must be 0 to 65535.") }
        guard (1...3600).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1 to 3600 seconds.") }
        guard (1...600).contains(requestTimeout) else { throw ValidationError("--request-timeout must be 1 to 600 seconds.") }
        guard tombstoneHorizonDays >= 1 else { throw ValidationError("--tombstone-horizon-days must be at least 1.") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical.")
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
        let databaseConfiguration = try database.configuration()
        // postgres-nio's own lines about its connections (refused, lost, retried) name the database too.
        var databaseLogger = logger
        databaseLogger[metadataKey: "database"] = "\(DatabaseAddress.describe(databaseConfiguration))"
        let client = PostgresClient(configuration: databaseConfiguration, backgroundLogger: databaseLogger)
        var configuration = SyncServerConfiguration(
            host: host, port: port, tombstoneHorizonSeconds: Int64(tombstoneHorizonDays) * 24 * 60 * 60,
            idleTimeout: .seconds(idleTimeout), monitoring: noMetrics ? nil : (metricsHost, metricsPort)
        )
        configuration.requestTimeout = .seconds(requestTimeout)
        configuration.databaseDescription = DatabaseAddress.describe(databaseConfiguration)
        configuration.storageQuotaBytes = Int64(storageQuotaMib) * 1024 * 1024
        configuration.accountCreation = try accountCreationPolicy()
        configuration.rateLimits.accountCreationsPerAddressPerHour = accountCreationsPerHour
        configuration.rateLimits.joinsPerAddressPerHour = joinsPerAddressPerHour
        configuration.rateLimits.writesPerAddressPerMinute = writesPerAddressPerMinute
        configuration.rateLimits.writesPerAccountPerMinute = writesPerAccountPerMinute
        configuration.clientAddressHeader = clientAddressHeader
        let app = try SyncServer.makeApplication(configuration: configuration, database: client, logger: logger)
        var group = ServiceGroupConfiguration(
            services: [.init(service: client), .init(service: app, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // A graceful shutdown that waits on a database that does not answer ends within 10 seconds all the same.
        group.maximumGracefulShutdownDuration = .seconds(SyncLimits.shutdownSeconds)
        group.maximumCancellationDuration = .seconds(2)
        try await ServiceGroup(configuration: group).run()
    }
}

/// The database options the server and `setup-database` share.
struct DatabaseOptions: ParsableArguments {
    @Option(
        help: "The database as a URL: postgres://USER@HOST:5432/DB?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem, or postgres:///DB?host=/run/postgresql&user=USER for a socket.")
    var postgres: String?

    @Option(help: "The folder of the database server's Unix socket (instead of --postgres).")
    var postgresSocket: String?

    @Option(help: "The port of the database server's Unix socket, with --postgres-socket.")
    var postgresPort = 5432

    @Option(help: "The database user, with --postgres-socket.")
    var postgresUser: String?

    @Option(help: "The database name, with --postgres-socket (default: the user's name).")
    var postgresDatabase: String?

    func validate() throws {
        switch (postgres, postgresSocket) {
        case (.some, .some): throw ValidationError("Give either --postgres or --postgres-socket, not both.")
        case (nil, nil): throw ValidationError("Give the database: --postgres URL, or --postgres-socket DIR --postgres-user USER.")
        case (nil, .some) where postgresUser == nil: throw ValidationError("--postgres-socket needs --postgres-user.")
        default: break
        }
        guard (1...65535).contains(postgresPort) else { throw ValidationError("--postgres-port must be 1 to 65535.") }
    }

    /// The client configuration the options give.
    func configuration() throws -> PostgresClient.Configuration {
        if let postgres {
            do {
                return try DatabaseAddress.configuration(url: postgres)
            } catch let error as DatabaseAddress.Invalid {
                throw ValidationError(error.description)
            }
        }
        let user = postgresUser ?? ""
        return DatabaseAddress.socket(folder: postgresSocket ?? "", port: postgresPort, user: user, database: postgresDatabase ?? user)
    }
}

/// `keychain-sync-server setup-database`: the schema made (or brought up to date) beforehand, the role's rights
/// checked, and the pg_hba.conf line the server needs printed.
struct SetupDatabase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup-database",
        abstract: "Create or upgrade the schema, check the role's rights, and print the pg_hba.conf line it needs.",
        discussion: """
            Make the role and the database first, as PostgreSQL's superuser: `createuser keychain_sync` and \
            `createdb -O keychain_sync keychain_sync` (or in SQL: CREATE ROLE keychain_sync LOGIN; CREATE DATABASE \
            keychain_sync OWNER keychain_sync). Then run this with the server's own --postgres or --postgres-socket, \
            or as the superuser with --owner keychain_sync: it applies the schema's steps, gives the tables to \
            --owner, checks that the server's role may read and write them, and prints the pg_hba.conf line for the \
            way it connected. When it cannot, it says what to do and fails.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The role the server logs in as, when a superuser runs the setup: the tables are given to it (e.g. keychain_sync).")
    var owner: String?

    func run() async throws {
        var handler = StreamLogHandler.standardError(label: "keychain-sync-server")
        handler.logLevel = .warning
        let logger = Logger(label: "keychain-sync-server", factory: { _ in handler })
        let configuration = try database.configuration()
        do {
            let report = try await DatabaseSetup.run(configuration: configuration, owner: owner, logger: logger)
            print(report.description)
        } catch let failure as DatabaseSetup.Failure {
            throw ValidationError(failure.description)
        }
    }
}

/// `--account-creation`'s values.
enum AccountCreationMode: String, ExpressibleByArgument, CaseIterable {
    case open, token, closed
}

extension KeychainSyncServerCommand {
    /// The policy the flags give; with `token`, the tokens file read (its tokens kept only as hashes).
    func accountCreationPolicy() throws -> AccountCreationPolicy {
        switch accountCreation {
        case .open: return .open
        case .closed: return .closed
        case .token:
            let path = accountTokensFile ?? ""
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("--account-tokens-file \(path) cannot be read: give a file of tokens, one per line.")
            }
            let tokens = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !tokens.isEmpty else { throw ValidationError("--account-tokens-file \(path) holds no token.") }
            return .token(hashes: Set(tokens.map { RequestSignature.bodyHash(Array($0.utf8)) }))
        }
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
