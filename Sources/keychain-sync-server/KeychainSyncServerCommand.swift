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

    @Option(help: "Join requests one account may receive per hour, from anyone (also the burst).")
    var joinsPerAccountPerHour = SyncRateLimits().joinsPerAccountPerHour

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
            ("--joins-per-account-per-hour", joinsPerAccountPerHour), ("--writes-per-address-per-minute", writesPerAddressPerMinute),
            ("--writes-per-account-per-minute", writesPerAccountPerMinute),
        ] where value < 0 {
            throw ValidationError("\(name) must be 0 (refuse all) or more.")
        }
        guard (0...65535).contains(metricsPort) else { throw ValidationError("--metrics-port must be 0 to 65535.") }
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
        var configuration = SyncServerConfiguration(
            host: host, port: port, tombstoneHorizonSeconds: Int64(tombstoneHorizonDays) * 24 * 60 * 60,
            idleTimeout: .seconds(idleTimeout), monitoring: noMetrics ? nil : (metricsHost, metricsPort)
        )
        configuration.storageQuotaBytes = Int64(storageQuotaMib) * 1024 * 1024
        configuration.accountCreation = try accountCreationPolicy()
        configuration.rateLimits.accountCreationsPerAddressPerHour = accountCreationsPerHour
        configuration.rateLimits.joinsPerAddressPerHour = joinsPerAddressPerHour
        configuration.rateLimits.joinsPerAccountPerHour = joinsPerAccountPerHour
        configuration.rateLimits.writesPerAddressPerMinute = writesPerAddressPerMinute
        configuration.rateLimits.writesPerAccountPerMinute = writesPerAccountPerMinute
        configuration.clientAddressHeader = clientAddressHeader
        let app = try SyncServer.makeApplication(configuration: configuration, database: client, logger: logger)
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
