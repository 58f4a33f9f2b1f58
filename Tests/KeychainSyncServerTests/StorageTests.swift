#if Network
import KeychainSyncServer
import PostgresNIO
import Testing

/// The schema migrations against a real PostgreSQL.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct StorageTests {
    @Test func instancesMigratingAtOnceApplyEachStepOnce() async throws {
        try await TestPostgres.withDatabase { database in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await TestPostgres.withClient(database: database) { client in
                            try await SchemaMigrations.run(on: client, logger: TestPostgres.logger)
                        }
                    }
                }
                var all: [[Int]] = []
                for try await steps in group { all.append(steps) }
                return all
            }
            #expect(applied.filter { !$0.isEmpty } == [[1, 2]])
            try await TestPostgres.withClient(database: database) { client in
                var rows: [Int] = []
                for try await version in try await client.query("SELECT version FROM schema_migrations").decode(Int.self) {
                    rows.append(version)
                }
                #expect(rows.sorted() == [1, 2])
                // Once current, running again applies nothing.
                #expect(try await SchemaMigrations.run(on: client, logger: TestPostgres.logger).isEmpty)
            }
        }
    }
}

/// The command line's database addresses (no database needed).
struct DatabaseAddressTests {
    @Test func libpqURLsAreRead() throws {
        let tcp = try DatabaseAddress.configuration(url: "postgres://sync:p%40ss@db.example:6543/keychain?sslmode=disable", environment: [:])
        #expect(tcp.host == "db.example" && tcp.port == 6543)
        #expect(tcp.username == "sync" && tcp.password == "p@ss" && tcp.database == "keychain")

        let socket = try DatabaseAddress.configuration(url: "postgresql:///sync?host=/run/postgresql&user=svc", environment: [:])
        #expect(socket.unixSocketPath == "/run/postgresql/.s.PGSQL.5432")
        #expect(socket.username == "svc" && socket.database == "sync" && socket.password == nil)

        let fromEnvironment = try DatabaseAddress.configuration(url: "postgres://db.example/x", environment: ["PGUSER": "u", "PGPASSWORD": "secret"])
        #expect(fromEnvironment.username == "u" && fromEnvironment.password == "secret")
    }

    @Test func badURLsSayWhatToFix() {
        #expect(throws: DatabaseAddress.Invalid.self) { try DatabaseAddress.configuration(url: "mysql://x@y/z", environment: [:]) }
        #expect(throws: DatabaseAddress.Invalid.self) { try DatabaseAddress.configuration(url: "postgres://db.example/x", environment: [:]) }
        #expect(throws: DatabaseAddress.Invalid.self) {
            try DatabaseAddress.configuration(url: "postgres://u@db.example/x?sslmode=bogus", environment: [:])
        }
    }
}
#endif
