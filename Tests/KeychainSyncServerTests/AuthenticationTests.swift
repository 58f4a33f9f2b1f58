#if Network
import Crypto
import Foundation
import KeychainSyncAPI
import KeychainSyncServer
import PostgresNIO
import ServiceLifecycle
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Request signatures against a real server and PostgreSQL: what is accepted and each way a request is refused.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct AuthenticationTests {
    @Test func anAccountIsCreatedAndASignedRequestWorks() async throws {
        try await TestServers.with { servers in
            let client = servers.client()
            let device = TestDevice()
            let account = newAccountID()
            let created = try await client.createAccount(account, device: device)
            #expect(created.status == 201)
            let list = try created.decode(Components.Schemas.DeviceList.self)
            #expect(list.deviceListVersion == 1 && list.trustedDeviceIds == [device.id] && list.signer == device.id)

            let fetched = try await client.send(.GET, "/v1/accounts/\(account)/device-list", as: device)
            #expect(fetched.status == 200)
            #expect(try fetched.decode(Components.Schemas.DeviceList.self) == list)

            let again = try await client.createAccount(account, device: device)
            #expect(again.status == 409 && again.errorCode == "account_exists")
        }
    }

    @Test func wrongSignatureReplayStaleTimestampAndUnknownDeviceAreRefused() async throws {
        try await TestServers.with { servers in
            let (client, device, account) = try await servers.newAccount()
            let path = "/v1/accounts/\(account)/device-list"

            let forged = try await client.send(.GET, path, as: device, signing: Signing(corruptSignature: true))
            #expect(forged.status == 401 && forged.errorCode == "bad_signature")

            let unsigned = try await client.send(.GET, path, as: device, signing: Signing(unsigned: true))
            #expect(unsigned.status == 401 && unsigned.errorCode == "missing_signature")

            let nonce = SyncTestClient.freshNonce()
            #expect(try await client.send(.GET, path, as: device, signing: Signing(nonce: nonce)).status == 200)
            let replayed = try await client.send(.GET, path, as: device, signing: Signing(nonce: nonce))
            #expect(replayed.status == 401 && replayed.errorCode == "replayed_request")
            // The nonce is in PostgreSQL: another instance refuses it too (PushTests.twoInstancesOnOneDatabaseBothServe).

            let stale = try await client.send(.GET, path, as: device, signing: Signing(timestamp: Int64(Date().timeIntervalSince1970) - 301))
            #expect(stale.status == 401 && stale.errorCode == "clock_skew")
            let message = try stale.decode(Components.Schemas._Error.self).message
            #expect(message.contains("clock"))

            let stranger = try await client.send(.GET, path, as: TestDevice())
            #expect(stranger.status == 401 && stranger.errorCode == "unknown_device")

            // A body changed after signing no longer verifies.
            let body = Array(try JSONEncoder().encode(Components.Schemas.WriteBatch(writes: [recordWrite("a", expected: 0)])))
            let tampered = try await client.send(
                .POST, "/v1/accounts/\(account)/zones/keychain/records", bytes: body + Array(" ".utf8), as: device,
                signing: Signing(signedBody: body)
            )
            #expect(tampered.status == 401 && tampered.errorCode == "bad_signature")
        }
    }

    @Test func aRemovedDeviceGets403() async throws {
        try await TestServers.with { servers in
            let client = servers.client()
            let first = TestDevice()
            let second = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: first).status == 201)
            try await join(second, account: account, client: client, invitedBy: first)
            let approve = try first.deviceList(version: 2, trusted: [first.id, second.id])
            #expect(try await client.send(.PUT, "/v1/accounts/\(account)/device-list", json: approve, as: first).status == 200)
            #expect(try await client.changes(account, since: 0, as: second).status == 200)

            let remove = try first.deviceList(version: 3, trusted: [first.id])
            #expect(try await client.send(.PUT, "/v1/accounts/\(account)/device-list", json: remove, as: first).status == 200)
            let refused = try await client.changes(account, since: 0, as: second)
            #expect(refused.status == 403 && refused.errorCode == "device_removed")
            let write = try await client.write(account, [recordWrite("x", expected: 0)], as: second)
            #expect(write.status == 403)
            // The answer says when and by whom.
            let error = try refused.decode(Components.Schemas._Error.self)
            #expect(error.removedBy == first.id && (error.removedAt ?? 0) > 0)

            // The push upgrade is refused as the API document says: 400 with no body, and the connection closed (the
            // WebSocket library answers every refused upgrade so); a signed request to another route tells why.
            let port = servers.ports[0]
            for device in [second, TestDevice()] {
                let refusedPush = try Self.pushUpgrade(port: port, account: account, device: device)
                #expect(refusedPush.status == 400 && refusedPush.body.isEmpty && refusedPush.closed, "\(refusedPush)")
            }
            let forgedPush = try Self.pushUpgrade(port: port, account: account, device: first, signing: Signing(corruptSignature: true))
            #expect(forgedPush.status == 400 && forgedPush.closed, "\(forgedPush)")
            let accepted = try Self.pushUpgrade(port: port, account: account, device: first)
            #expect(accepted.status == 101 && !accepted.closed, "\(accepted)")
        }
    }

    /// Sends a signed WebSocket upgrade for the account's push socket over a raw connection; returns the answer's
    /// status, its body (an upgrade that succeeds has none), and whether the server then closed the connection.
    static func pushUpgrade(port: Int, account: String, device: TestDevice, signing: Signing = .normal) throws -> (status: Int, body: String, closed: Bool) {
        let path = "/v1/accounts/\(account)/push"
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        head += "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        for (name, value) in try SyncTestClient.signatureHeaders(method: "GET", path: path, body: [], device: device, signing: signing) {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        let socket = try ServerFloodTests.connect(port: port)
        defer { close(socket) }
        _ = Array(head.utf8).withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Read the head, then the body its Content-Length names.
        while true {
            let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            answer += buffer[0..<count]
            let text = String(decoding: answer, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let length =
                text[..<end.lowerBound].split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length { break }
        }
        let text = String(decoding: answer, as: UTF8.self)
        let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        // Closed: the next read ends at once; an open socket (an accepted upgrade) waits, until the short timeout.
        var short = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
        let closed = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) } == 0
        return (status, body, closed)
    }

    /// The monitoring listener's configuration in these tests: loopback, any free port.
    static var withMonitoring: SyncServerConfiguration {
        SyncServerConfiguration(host: "127.0.0.1", port: 0, monitoring: ("127.0.0.1", 0))
    }

    @Test func theOpenRoutesNeedNoSignatureAndTheMetricsAreOnTheMonitoringListenerOnly() async throws {
        try await TestServers.with(configuration: Self.withMonitoring) { servers in
            let client = servers.client()
            let monitoring = SyncTestClient(port: servers.monitoringPorts[0])
            let health = try await monitoring.send(.GET, "/health", as: nil)
            #expect(health.status == 200)
            #expect(try health.decode(Components.Schemas.Health.self).status == "ok")

            let document = try await client.send(.GET, "/openapi.yaml", as: nil)
            #expect(document.status == 200)
            #expect(document.body == SyncAPIDocument.bytes)

            let device = TestDevice()
            #expect(try await client.createAccount(newAccountID(), device: device).status == 201)
            let metrics = try await monitoring.send(.GET, "/metrics", as: nil)
            #expect(metrics.status == 200)
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(text.contains("keychain_sync_requests_total"))
            #expect(text.contains(#"route="/v1/accounts""#))
            #expect(text.contains("keychain_sync_request_duration_seconds"))

            // The API's listener, which faces the internet, serves neither.
            for path in ["/metrics", "/health"] {
                let refused = try await client.send(.GET, path, as: nil)
                #expect(refused.status == 404 && refused.errorCode == "not_found", "\(path)")
                #expect(!String(decoding: refused.body, as: UTF8.self).contains("keychain_sync_requests_total"))
            }
        }
    }
}

extension AuthenticationTests {
    @Test func healthSays503WhenTheDatabaseDoesNotAnswer() async throws {
        try await TestServers.with(configuration: Self.withMonitoring) { servers in
            let client = SyncTestClient(port: servers.monitoringPorts[0])
            #expect(try await client.send(.GET, "/health", as: nil).status == 200)
            // Cut the server off its database: no new connections, and the open ones ended.
            try await TestPostgres.withClient(database: "postgres") { admin in
                try await admin.query("ALTER DATABASE \(unescaped: servers.database) ALLOW_CONNECTIONS false")
                try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(servers.database)")
            }
            let down = try await client.send(.GET, "/health", as: nil)
            #expect(down.status == 503)
            #expect(try down.decode(Components.Schemas.Health.self).status == "unavailable")
            try await TestPostgres.withClient(database: "postgres") { admin in
                try await admin.query("ALTER DATABASE \(unescaped: servers.database) ALLOW_CONNECTIONS true")
            }
        }
    }
}

/// Makes `device` a pending device of the account, with an invitation `owner` (a trusted device) makes.
func join(
    _ device: TestDevice, account: String, client: SyncTestClient, invitedBy owner: TestDevice, code: [UInt8] = Array("code-hash".utf8)
) async throws {
    let secret = SyncTestClient.freshNonce()
    let invited = try await client.send(
        .POST, "/v1/accounts/\(account)/invitations",
        json: Components.Schemas.Invitation(tokenHash: .init(Array(SHA256.hash(data: Array(secret.prefix(12).utf8)))), lifetimeSeconds: 900),
        as: owner)
    #expect(invited.status == 201)
    let response = try await client.send(
        .POST, "/v1/accounts/\(account)/joins",
        json: Components.Schemas.JoinRequest(device: device.keys, codeHash: .init(code), invitation: String(secret.prefix(12))), as: device
    )
    #expect(response.status == 202)
}
#endif

extension AuthenticationTests {
    /// The monitoring listener comes up before the API's, which waits for the schema: until the API listens, `/health`
    /// says `starting` (503), so nothing that waits for health sends a request to a port nobody listens on.
    @Test func healthSaysStartingUntilTheAPIListens() async throws {
        try await TestPostgres.withDatabase { database in
            try await TestPostgres.withClient(database: database) { admin in
                try await admin.withConnection { holder in
                    // Hold the schema's lock, so the API's listener waits for it.
                    try await holder.query("BEGIN", logger: TestPostgres.logger)
                    try await holder.query("SELECT pg_advisory_xact_lock(\(SchemaMigrations.advisoryLockKey))", logger: TestPostgres.logger)
                    let (ports, continuation) = AsyncStream.makeStream(of: (Int, Bool).self)
                    let client = PostgresClient(configuration: TestPostgres.configuration(database: database), backgroundLogger: TestPostgres.logger)
                    let app = try SyncServer.makeApplication(
                        configuration: Self.withMonitoring, database: client, logger: TestPostgres.logger,
                        onRunning: { continuation.yield(($0, false)) }, onMonitoringRunning: { continuation.yield(($0, true)) })
                    let group = ServiceGroup(
                        configuration: .init(
                            services: [.init(service: client), .init(service: app)], gracefulShutdownSignals: [], logger: TestPostgres.logger))
                    let run = Task { try await group.run() }
                    var iterator = ports.makeAsyncIterator()
                    let first = await iterator.next()
                    #expect(first?.1 == true, "The monitoring listener came up first.")
                    let monitoring = SyncTestClient(port: first?.0 ?? 0)
                    let starting = try await monitoring.send(.GET, "/health", as: nil)
                    #expect(starting.status == 503)
                    #expect(try starting.decode(Components.Schemas.Health.self).status == "starting")

                    try await holder.query("COMMIT", logger: TestPostgres.logger)
                    let api = await iterator.next()
                    #expect(api?.1 == false)
                    let up = try await monitoring.send(.GET, "/health", as: nil)
                    #expect(up.status == 200)
                    #expect(try up.decode(Components.Schemas.Health.self).status == "ok")
                    await group.triggerGracefulShutdown()
                    try await run.value
                }
            }
        }
    }
}
