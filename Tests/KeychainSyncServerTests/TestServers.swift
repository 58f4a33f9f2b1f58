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
    /// Each instance's monitoring port (`/metrics`, `/health`), when the configuration asks for the listener.
    var monitoringPorts: [Int] = []

    /// Runs `body` with `count` instances on a new database; shuts them down gracefully and drops the database after.
    /// The configuration of the tests' instances unless one is given: every test's devices share 127.0.0.1 and
    /// sync as fast as they can, so the rate limits are out of their way (the flood tests set their own).
    static var testConfiguration: SyncServerConfiguration {
        var configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.rateLimits.writesPerAccountPerMinute = 100_000
        configuration.rateLimits.writesPerAddressPerMinute = 100_000
        configuration.rateLimits.joinsPerAddressPerHour = 100_000
        configuration.rateLimits.accountCreationsPerAddressPerHour = 100_000
        return configuration
    }

    static func with<T: Sendable>(
        count: Int = 1,
        configuration: SyncServerConfiguration = testConfiguration,
        _ body: @Sendable (TestServers) async throws -> T
    ) async throws -> T {
        try await TestPostgres.withDatabase { database in
            let logger = TestPostgres.logger
            var groups: [ServiceGroup] = []
            // Ports as (instance, port, whether it is the monitoring listener's).
            let (portStream, portContinuation) = AsyncStream.makeStream(of: (Int, Int, Bool).self)
            for index in 0..<count {
                let client = PostgresClient(configuration: TestPostgres.configuration(database: database), backgroundLogger: logger)
                let app = try SyncServer.makeApplication(
                    configuration: configuration, database: client, logger: logger,
                    onRunning: { port in portContinuation.yield((index, port, false)) },
                    onMonitoringRunning: { port in portContinuation.yield((index, port, true)) })
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
            // Each instance runs in a task of its own, not a child of this one: a child that does not end would hold
            // this scope (and the test) for ever. An instance whose pool does not wind down after its database went
            // away (postgres-nio, seen once in a full run) is left behind with a notice instead.
            let running = groups
            let runs = running.map { group in Task { try await group.run() } }
            // An instance that failed fails the test, as before; one cancelled here after its 20 s is not a failure.
            func shutDown() async throws {
                for group in running { await group.triggerGracefulShutdown() }
                if await Self.finished(runs, within: .seconds(20)) {
                    for run in runs { try await run.value }
                    return
                }
                for run in runs { run.cancel() }
                if await Self.finished(runs, within: .seconds(10)) { return }
                print("TestServers: an instance on \(database) did not stop within 30 s of its graceful shutdown; left behind.")
            }
            let result: T
            do {
                var ports = [Int](repeating: 0, count: count)
                var monitoringPorts = [Int](repeating: 0, count: configuration.monitoring == nil ? 0 : count)
                var seen = 0
                for await (index, port, monitoring) in portStream {
                    if monitoring { monitoringPorts[index] = port } else { ports[index] = port }
                    seen += 1
                    if seen == ports.count + monitoringPorts.count { break }
                }
                result = try await body(TestServers(database: database, ports: ports, monitoringPorts: monitoringPorts))
            } catch {
                try? await shutDown()
                throw error
            }
            try await shutDown()
            return result
        }
    }

    /// Whether every one of `runs` ended within `limit`, however it ended (the caller reads the outcomes of runs that
    /// ended); waits no longer, and leaves them running.
    static func finished(_ runs: [Task<Void, any Error>], within limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = FirstAnswer(continuation, waitingFor: runs.count)
            if runs.isEmpty { answer.give(true) }
            for run in runs {
                Task {
                    _ = try? await run.value
                    answer.oneEnded()
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                answer.give(false)
            }
        }
    }

    /// Resumes a continuation once: with true when every awaited run ended, or with what ``give(_:)`` says first.
    final class FirstAnswer: Sendable {
        private let continuation: CheckedContinuation<Bool, Never>
        private let state: Mutex<(left: Int, answered: Bool)>

        init(_ continuation: CheckedContinuation<Bool, Never>, waitingFor count: Int) {
            self.continuation = continuation
            state = Mutex((count, false))
        }

        func oneEnded() {
            if state.withLock({ state in
                state.left -= 1
                return state.left == 0
            }) {
                give(true)
            }
        }

        func give(_ value: Bool) {
            let first = state.withLock { state in
                defer { state.answered = true }
                return !state.answered
            }
            if first { continuation.resume(returning: value) }
        }
    }

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
