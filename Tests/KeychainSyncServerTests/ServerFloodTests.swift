#if Network
import Crypto
import Foundation
import KeychainSyncAPI
import KeychainSyncServer
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The server alone on a port, as an attacker finds it: a real `keychain-sync-server` process on a real PostgreSQL,
/// flooded the ways that hurt before (account creation without limit, unsigned bodies read in full, half-sent
/// bodies held open), each answered from the headers and the limits.
@Suite("A sync server under a flood", .needsPostgres, .timeLimit(.minutes(10)))
struct ServerFloodTests {
    @Test("300 account creations from one address: the configured burst is created, the rest get 429 with Retry-After")
    func accountCreationIsRateLimitedPerAddress() async throws {
        let server = try SyncServerProcess(arguments: ["--account-creations-per-hour", "10"])
        defer { server.stop() }
        let client = SyncTestClient(port: server.port)
        var statuses: [Int: Int] = [:]
        var retryAfter: Set<String> = []
        try await withThrowingTaskGroup(of: TestResponse.self) { group in
            for index in 0..<300 {
                if index >= 8 { if let done = try await group.next() { record(done) } }
                group.addTask { try await client.createAccount(newAccountID(), device: TestDevice()) }
            }
            for try await done in group { record(done) }
            func record(_ response: TestResponse) {
                statuses[response.status, default: 0] += 1
                if response.status == 429, let value = response.retryAfter { retryAfter.insert(value) }
            }
        }
        #expect(statuses == [201: 10, 429: 290])
        // Each refusal says when to come back: a token every 6 minutes, so within 360 s.
        #expect(!retryAfter.isEmpty && retryAfter.allSatisfy { Int($0).map { (1...360).contains($0) } == true })
    }

    @Test("16 unsigned 8 MiB bodies at once are refused from the headers, and the server's memory stays within 20 MB")
    func unsignedBodiesAreRefusedBeforeTheyAreRead() async throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        let client = SyncTestClient(port: server.port)
        // A warm-up request, so that what the first request allocates is not counted.
        _ = try await client.send(.GET, "/openapi.yaml", as: nil)
        let before = try #require(server.residentBytes)
        let body = [UInt8](repeating: 0x41, count: 8 * 1024 * 1024)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                group.addTask {
                    // Half unsigned, half signed by a device the server does not know.
                    try await client.send(
                        .POST, "/v1/accounts/\(newAccountID())/zones/keychain/records", bytes: body,
                        as: index.isMultiple(of: 2) ? nil : TestDevice()
                    ).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 401 }, "\(statuses)")
        let after = try #require(server.residentBytes)
        #expect(after - before < 20 * 1024 * 1024, "RSS grew from \(before / 1_048_576) MiB to \(after / 1_048_576) MiB")
    }

    @Test("A timestamp at either end of Int64 is refused as clock skew, not a crash")
    func extremeTimestampsAreRefused() async throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        let client = SyncTestClient(port: server.port)
        for timestamp in [Int64.min, Int64.max] {
            let answer = try await client.send(
                .GET, "/v1/accounts/\(newAccountID())/device-list", as: TestDevice(), signing: Signing(timestamp: timestamp))
            #expect(answer.status == 401 && answer.errorCode == "clock_skew", "\(timestamp): \(answer.status)")
        }
        #expect(try await client.send(.GET, "/openapi.yaml", as: nil).status == 200)
    }

    @Test("A body larger than its route takes is refused from Content-Length (a join request is at most 16 KiB)")
    func aBodyOverItsRoutesLimitIsRefused() async throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        let client = SyncTestClient(port: server.port)
        let joined = try await client.send(
            .POST, "/v1/accounts/\(newAccountID())/joins", bytes: [UInt8](repeating: 0x20, count: 17 * 1024), as: TestDevice())
        #expect(joined.status == 413 && joined.errorCode == "body_too_large")
        let read = try await client.send(.GET, "/v1/accounts/\(newAccountID())/device-list", bytes: [1], as: TestDevice())
        #expect(read.status == 413)
    }

    @Test("A half-sent body is closed within the idle timeout")
    func aHalfSentBodyIsClosed() throws {
        let server = try SyncServerProcess(arguments: ["--idle-timeout", "2"])
        defer { server.stop() }
        let socket = try Self.connect(port: server.port)
        defer { close(socket) }
        let head = "POST /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"account_id\":"
        let sent = Array(head.utf8).withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
        #expect(sent == head.utf8.count)
        // Wait for the server to close (reads return 0 at its end), 20 s at most.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let start = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4096)
        var count = 0
        repeat {
            count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
        } while count > 0
        let waited = ContinuousClock.now - start
        #expect(count == 0, "the connection was not closed (read: \(count), errno \(errno))")
        // The idle timeout is 2 s; the server's timer may fire up to one period late.
        #expect(waited < .seconds(5), "closed after \(waited)")
    }

    @Test("An account past its storage quota gets 507 and nothing is written; shrinking writes and deletions still pass")
    func theStorageQuotaHolds() async throws {
        var configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.storageQuotaBytes = 4096
        try await TestServers.with(configuration: configuration) { servers in
            let client = servers.client()
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: device).status == 201)
            let big = String(repeating: "x", count: 1500)
            #expect(try await client.write(account, [recordWrite("a", expected: 0, text: big), recordWrite("b", expected: 0, text: big)], as: device).status == 200)
            let over = try await client.write(account, [recordWrite("c", expected: 0, text: big)], as: device)
            #expect(over.status == 507 && over.errorCode == "quota_exceeded")
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account)") == 2)
            // Replacing a record with a smaller one, and deleting, make room.
            #expect(try await client.write(account, [recordWrite("a", expected: 1, deleted: true, text: "gone")], as: device).status == 200)
            #expect(try await client.write(account, [recordWrite("c", expected: 0, text: big)], as: device).status == 200)
        }
    }

    @Test("Writes past the per-account rate get 429 with Retry-After; reads still pass")
    func writesAreRateLimitedPerAccount() async throws {
        var configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.rateLimits.writesPerAccountPerMinute = 3
        try await TestServers.with(configuration: configuration) { servers in
            let client = servers.client()
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: device).status == 201)
            var statuses: [Int] = []
            var retryAfter: String?
            for index in 0..<5 {
                let response = try await client.write(account, [recordWrite("item\(index)", expected: 0)], as: device)
                statuses.append(response.status)
                if response.status == 429 { retryAfter = response.retryAfter }
            }
            #expect(statuses == [200, 200, 200, 429, 429])
            #expect(retryAfter.flatMap(Int.init).map { (1...20).contains($0) } == true)
            #expect(try await client.changes(account, since: 0, as: device).status == 200)
        }
    }

    @Test("16 join requests without an invitation are refused and store nothing; an invited device then joins, once")
    func uninvitedJoinsAreRefused() async throws {
        try await TestServers.with { servers in
            let client = servers.client()
            let owner = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: owner).status == 201)
            for _ in 0..<16 {
                let outsider = TestDevice()
                let refused = try await client.send(
                    .POST, "/v1/accounts/\(account)/joins",
                    json: Components.Schemas.JoinRequest(device: outsider.keys, codeHash: .init(Array("code".utf8)), invitation: "AAAABBBBCCCC"),
                    as: outsider)
                #expect(refused.status == 403 && refused.errorCode == "invitation_required")
            }
            #expect(try await servers.sqlInt("SELECT count(*) FROM devices WHERE account_id = \(account) AND state = 'pending'") == 0)

            // The owner invites; the invited device is admitted, and the invitation admits nobody else.
            let secret = "7KQ2M9XD3F1P"
            let invited = try await client.send(
                .POST, "/v1/accounts/\(account)/invitations",
                json: Components.Schemas.Invitation(tokenHash: .init(Array(SHA256.hash(data: Array(secret.utf8)))), lifetimeSeconds: 900), as: owner)
            #expect(invited.status == 201)
            let guest = TestDevice()
            let admitted = try await client.send(
                .POST, "/v1/accounts/\(account)/joins",
                json: Components.Schemas.JoinRequest(device: guest.keys, codeHash: .init(Array("code".utf8)), invitation: secret), as: guest)
            #expect(admitted.status == 202)
            let second = TestDevice()
            let reused = try await client.send(
                .POST, "/v1/accounts/\(account)/joins",
                json: Components.Schemas.JoinRequest(device: second.keys, codeHash: .init(Array("code".utf8)), invitation: secret), as: second)
            #expect(reused.status == 403 && reused.errorCode == "invitation_required")

            // The pending device sees nothing of the account but its own request: not the device list.
            let list = try await client.send(.GET, "/v1/accounts/\(account)/device-list", as: guest)
            #expect(list.status == 403 && list.errorCode == "not_trusted")
            #expect(try await client.send(.GET, "/v1/accounts/\(account)/joins", as: guest).status == 403)
            // Asking again while pending needs no invitation.
            let again = try await client.send(
                .POST, "/v1/accounts/\(account)/joins",
                json: Components.Schemas.JoinRequest(device: guest.keys, codeHash: .init(Array("code".utf8))), as: guest)
            #expect(again.status == 202)
        }
    }

    @Test("A request in flight when PostgreSQL goes away is answered 503 within the request timeout")
    func aRequestWithoutADatabaseIsAnswered() async throws {
        var configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.requestTimeout = .seconds(2)
        try await TestServers.with(configuration: configuration) { servers in
            let client = servers.client()
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: device).status == 201)
            try await Self.cutOff(servers.database)
            let start = ContinuousClock.now
            let answer = try await client.changes(account, since: 0, as: device)
            let waited = ContinuousClock.now - start
            #expect(answer.status == 503 && answer.errorCode == "unavailable", "\(answer.status) \(answer.errorCode)")
            #expect(waited < .seconds(5), "answered after \(waited)")
            try await Self.reconnect(servers.database)
        }
    }

    @Test("SIGTERM stops the server within 10 seconds, even while its database is away")
    func sigtermIsHonouredWithoutADatabase() async throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        try await Self.cutOff(server.database)
        // A request waiting on the database while the server is asked to stop.
        let client = SyncTestClient(port: server.port)
        let waiting = Task { try? await client.changes(newAccountID(), since: 0, as: TestDevice()) }
        let took = server.terminate(within: .seconds(15))
        #expect(took.map { $0 < .seconds(10) } == true, "SIGTERM took \(String(describing: took))")
        waiting.cancel()
    }

    /// Refuses new connections to `database` and ends the open ones, as when PostgreSQL goes away.
    static func cutOff(_ database: String) async throws {
        try await TestPostgres.withClient(database: "postgres") { admin in
            try await admin.query("ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS false")
            try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database)")
        }
    }

    /// Lets connections to `database` in again.
    static func reconnect(_ database: String) async throws {
        try await TestPostgres.withClient(database: "postgres") { admin in
            try await admin.query("ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS true")
        }
    }

    /// A TCP connection to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestProcessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestProcessError("connect: errno \(errno)")
        }
        return fd
    }
}
#endif
