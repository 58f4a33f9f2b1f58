#if Network
import Foundation
import KeychainSyncServer
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// Real sync server instances for a test: each its own `PostgresClient` and Hummingbird application on one new
/// database, listening on 127.0.0.1 at a port the system chose.
struct TestServers: Sendable {
    /// The database the instances share.
    let database: String
    /// Each instance's port.
    let ports: [Int]

    /// Runs `body` with `count` instances on a new database; shuts them down gracefully and drops the database after.
    static func with<T: Sendable>(
        count: Int = 1,
        configuration: SyncServerConfiguration = SyncServerConfiguration(host: "127.0.0.1", port: 0),
        _ body: @Sendable (TestServers) async throws -> T
    ) async throws -> T {
        try await TestPostgres.withDatabase { database in
            let logger = TestPostgres.logger
            var groups: [ServiceGroup] = []
            let (portStream, portContinuation) = AsyncStream.makeStream(of: (Int, Int).self)
            for index in 0..<count {
                let client = PostgresClient(configuration: TestPostgres.configuration(database: database), backgroundLogger: logger)
                let app = try SyncServer.makeApplication(configuration: configuration, database: client, logger: logger) { port in
                    portContinuation.yield((index, port))
                }
                groups.append(
                    ServiceGroup(
                        configuration: .init(
                            services: [.init(service: client), .init(service: app)],
                            gracefulShutdownSignals: [],
                            logger: logger
                        )
                    )
                )
            }
            let running = groups
            return try await withThrowingTaskGroup(of: Void.self) { tasks in
                for group in running {
                    tasks.addTask { try await group.run() }
                }
                /// Shuts the instances down gracefully, waiting at most 20 seconds for them to finish.
                func shutDown() async throws {
                    for group in running { await group.triggerGracefulShutdown() }
                    tasks.addTask {
                        try await Task.sleep(for: .seconds(20))
                        throw ShutdownTimeout()
                    }
                    for _ in running { _ = try await tasks.next() }
                    tasks.cancelAll()
                }
                let result: T
                do {
                    var ports = [Int](repeating: 0, count: count)
                    var seen = 0
                    for await (index, port) in portStream {
                        ports[index] = port
                        seen += 1
                        if seen == count { break }
                    }
                    result = try await body(TestServers(database: database, ports: ports))
                } catch {
                    try? await shutDown()
                    throw error
                }
                try await shutDown()
                return result
            }
        }
    }

    /// The instances did not finish within the time allowed after a graceful shutdown.
    struct ShutdownTimeout: Error {}

    /// A new account on instance 0 with one trusted device: a client, the device and the account id.
    func newAccount() async throws -> (SyncTestClient, TestDevice, String) {
        let device = TestDevice()
        let account = newAccountID()
        let created = try await client().createAccount(account, device: device)
        try #require(created.status == 201)
        return (client(), device, account)
    }

    /// A client of instance `index`.
    func client(_ index: Int = 0) -> SyncTestClient { SyncTestClient(port: ports[index]) }

    /// Runs SQL on the shared database (to age records, or to look behind the API).
    func sql(_ query: PostgresQuery) async throws {
        try await TestPostgres.withClient(database: database) { client in
            try await client.query(query)
        }
    }

    /// An Int64 the database answers.
    func sqlInt(_ query: PostgresQuery) async throws -> Int64 {
        try await TestPostgres.withClient(database: database) { client in
            for try await value in try await client.query(query).decode(Int64.self) { return value }
            return -1
        }
    }
}
#endif
