#if Network
import Foundation
import HTTPTypes
import HummingbirdWSClient
import KeychainSyncAPI
import KeychainSyncServer
import Logging
import Synchronization
import Testing

/// Several instances on one database, and push over WebSockets across them.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct PushTests {
    @Test func twoInstancesOnOneDatabaseBothServe() async throws {
        try await TestServers.with(count: 2) { servers in
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await servers.client(0).createAccount(account, device: device).status == 201)
            #expect(try await servers.client(1).write(account, [recordWrite("a", expected: 0)], as: device).status == 200)
            let feed = try await servers.client(0).changes(account, since: 0, as: device).decode(Components.Schemas.Changes.self)
            #expect(feed.records.map(\.itemId) == ["a"])
            #expect(try await servers.client(1).send(.GET, "/openapi.yaml", as: nil).status == 200)

            // A nonce used on one instance is refused by the other.
            let nonce = SyncTestClient.freshNonce()
            let path = "/v1/accounts/\(account)/device-list"
            #expect(try await servers.client(0).send(.GET, path, as: device, signing: Signing(nonce: nonce)).status == 200)
            #expect(try await servers.client(1).send(.GET, path, as: device, signing: Signing(nonce: nonce)).status == 401)
        }
    }

    @Test func aSocketOnOneInstanceHearsAWriteThroughAnother() async throws {
        try await TestServers.with(count: 2) { servers in
            let device = TestDevice()
            let account = newAccountID()
            #expect(try await servers.client(0).createAccount(account, device: device).status == 201)
            let path = "/v1/accounts/\(account)/push"
            let received = Mutex<[String]>([])
            let (connected, connectedContinuation) = AsyncStream.makeStream(of: Void.self)
            let socketTask = Task {
                try await openPushSocket(port: servers.ports[0], account: account, as: device) { inbound, _, _ in
                    connectedContinuation.yield()
                    for try await message in inbound.messages(maxSize: 1 << 16) {
                        if case .text(let text) = message {
                            received.withLock { $0.append(text) }
                        }
                        if received.withLock({ $0.count }) >= 1 { return }
                    }
                }
            }
            for await _ in connected { break }
            // The server subscribes the socket, and instance 0's LISTEN connection may still be opening, a moment after
            // the client sees the upgrade: a write before then is not pushed (the client's poll finds it). So write
            // until one write is heard. How soon is the latency benchmark's question, not this test's.
            var writes = 0
            let deadline = ContinuousClock.now + .seconds(60)
            while received.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
                writes += 1
                let write = try await servers.client(1).write(account, zone: "keychain", [recordWrite("a\(writes)", expected: 0)], as: device)
                #expect(write.status == 200)
                let wait = ContinuousClock.now + .seconds(2)
                while received.withLock({ $0.isEmpty }) && ContinuousClock.now < wait {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            // The first message heard names one of the writes, by its sequence number in the zone.
            let messages = received.withLock { $0 }
            #expect(messages.count == 1)
            #expect((1...max(1, writes)).map { #"{"zone":"keychain","seq":\#($0)}"# }.contains(messages.first ?? ""), "\(messages)")
            socketTask.cancel()
            _ = try? await socketTask.value

            // The upgrade is signed like any request: without a signature, or from a pending device, there is no socket.
            await #expect(throws: (any Error).self) {
                try await WebSocketClient.connect(url: "ws://127.0.0.1:\(servers.ports[0])\(path)", logger: TestPostgres.logger) { _, _, _ in }
            }
            let pending = TestDevice()
            try await join(pending, account: account, client: servers.client(0), invitedBy: device)
            await #expect(throws: (any Error).self) {
                try await openPushSocket(port: servers.ports[0], account: account, as: pending) { _, _, _ in }
            }
        }
    }

    @Test func socketsPerAccountAreBounded() async throws {
        let configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0, pushSocketsPerAccount: 1)
        try await TestServers.with(configuration: configuration) { servers in
            let (_, device, account) = try await servers.newAccount()
            let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
            let first = Task {
                try await openPushSocket(port: servers.ports[0], account: account, as: device) { _, _, _ in
                    openedContinuation.yield()
                    for await _ in release { break }
                }
            }
            for await _ in opened { break }
            // The account's one socket is open: the next upgrade is refused (429), the socket never opens.
            await #expect(throws: (any Error).self) {
                try await openPushSocket(port: servers.ports[0], account: account, as: device) { _, _, _ in }
            }
            releaseContinuation.yield()
            releaseContinuation.finish()
            _ = try? await first.value
        }
    }

    @Test func aRemovedDevicesSocketIsClosed() async throws {
        try await TestServers.with(count: 2) { servers in
            let (client, first, account) = try await servers.newAccount()
            let second = TestDevice()
            try await join(second, account: account, client: client, invitedBy: first)
            let approve = try first.deviceList(version: 2, trusted: [first.id, second.id])
            #expect(try await client.send(.PUT, "/v1/accounts/\(account)/device-list", json: approve, as: first).status == 200)

            let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
            let socket = Task {
                try await openPushSocket(port: servers.ports[0], account: account, as: second) { inbound, _, _ in
                    openedContinuation.yield()
                    for try await _ in inbound {}
                }
            }
            for await _ in opened { break }
            // Removed through the other instance: the socket on this one is closed by the server.
            let remove = try first.deviceList(version: 3, trusted: [first.id])
            #expect(try await servers.client(1).send(.PUT, "/v1/accounts/\(account)/device-list", json: remove, as: first).status == 200)
            let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    let frame = try await socket.value
                    return frame?.closeCode == .policyViolation
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(5))
                    return false
                }
                defer {
                    group.cancelAll()
                    socket.cancel()
                }
                return try await group.next() ?? false
            }
            #expect(closed)
        }
    }
}

/// Opens the account's push socket on an instance, the upgrade signed by `device`, and runs `handler` on it.
/// - Returns: The server's close frame, if it sent one.
@discardableResult
func openPushSocket(
    port: Int,
    account: String,
    as device: TestDevice,
    handler: @escaping WebSocketDataHandler<WebSocketClient.Context>
) async throws -> WebSocketCloseFrame? {
    let path = "/v1/accounts/\(account)/push"
    var fields = HTTPFields()
    for (name, value) in try SyncTestClient.signatureHeaders(method: "GET", path: path, body: [], device: device) {
        if let field = HTTPField.Name(name) { fields[field] = value }
    }
    return try await WebSocketClient.connect(
        url: "ws://127.0.0.1:\(port)\(path)", configuration: .init(additionalHeaders: fields), logger: TestPostgres.logger, handler: handler
    )
}
#endif
