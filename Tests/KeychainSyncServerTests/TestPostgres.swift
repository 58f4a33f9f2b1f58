#if Network
import Foundation
import KeychainSyncServer
import Logging
import PostgresNIO
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs a suite only where the environment gives a PostgreSQL (see ``TestPostgres``).
    static var needsPostgres: Self {
        .enabled(if: TestPostgres.isAvailable, "needs PostgreSQL: set KEYCHAIN_TEST_POSTGRES_SOCKET (and _USER), as .ci/run does")
    }
}

/// The PostgreSQL the environment gives the tests: `KEYCHAIN_TEST_POSTGRES_SOCKET` (the server's socket folder) and
/// `KEYCHAIN_TEST_POSTGRES_USER` (a superuser, default `postgres`). `.ci/run` starts a throwaway cluster and sets both.
enum TestPostgres {
    /// The socket folder, when the environment names one that exists.
    static var socketFolder: String? {
        guard let folder = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_POSTGRES_SOCKET"], !folder.isEmpty,
            FileManager.default.fileExists(atPath: "\(folder)/.s.PGSQL.5432")
        else { return nil }
        return folder
    }

    /// Whether the tests that need PostgreSQL can run.
    static var isAvailable: Bool { socketFolder != nil }

    /// The superuser the tests log in as.
    static var user: String { ProcessInfo.processInfo.environment["KEYCHAIN_TEST_POSTGRES_USER"] ?? "postgres" }

    /// A client configuration for one database.
    static func configuration(database: String) -> PostgresClient.Configuration {
        DatabaseAddress.socket(folder: socketFolder ?? "/nonexistent", user: user, database: database)
    }

    /// A logger that keeps quiet unless `KEYCHAIN_TEST_LOG` names a level.
    static var logger: Logger {
        var logger = Logger(label: "sync-test")
        logger.logLevel = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }

    /// Runs `body` with a running client of `database`.
    @discardableResult
    static func withClient<T: Sendable>(database: String, _ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: configuration(database: database), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// Runs `body` with a new empty database, dropped afterwards (whatever `body` did).
    static func withDatabase<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let name = "sync_test_\(UInt64.random(in: 0...UInt64.max))"
        try await withClient(database: "postgres") { admin in
            try await admin.query("CREATE DATABASE \(unescaped: name)")
        }
        do {
            let result = try await body(name)
            try await drop(name)
            return result
        } catch {
            try? await drop(name)
            throw error
        }
    }

    private static func drop(_ name: String) async throws {
        try await withClient(database: "postgres") { admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
        }
    }
}
#endif
