#if Network
import Foundation
import HTTPTypes
import KeychainSyncAPI
import KeychainSyncServer
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

/// Signs each request of the generated client: collects the body (the signature covers its hash), adds the four
/// headers, and sends the same bytes on. The reference for a client written from the OpenAPI document.
struct RequestSigningMiddleware: ClientMiddleware {
    let device: TestDevice

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let bytes: [UInt8] = if let body { try await [UInt8](collecting: body, upTo: 8 * 1024 * 1024) } else { [] }
        var request = request
        let path = request.path ?? "/"
        for (name, value) in try SyncTestClient.signatureHeaders(method: request.method.rawValue, path: path, body: bytes, device: device) {
            if let field = HTTPField.Name(name) { request.headerFields[field] = value }
        }
        return try await next(request, body == nil ? nil : HTTPBody(bytes), baseURL)
    }
}

/// The client generated from the OpenAPI document, over AsyncHTTPClient, against a real server.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct GeneratedClientTests {
    @Test func theGeneratedClientCreatesWritesAndReads() async throws {
        try await TestServers.with(configuration: AuthenticationTests.withMonitoring) { servers in
            let device = TestDevice()
            let client = Client(
                serverURL: try #require(URL(string: "http://127.0.0.1:\(servers.ports[0])")),
                transport: AsyncHTTPClientTransport(),
                middlewares: [RequestSigningMiddleware(device: device)]
            )
            let account = newAccountID()
            let created = try await client.createAccount(
                body: .json(
                    .init(
                        accountId: account, device: device.keys, deviceList: try device.deviceList(version: 1, trusted: [device.id]),
                        zoneKeys: []
                    )
                )
            )
            #expect(try created.created.body.json.deviceListVersion == 1)

            let written = try await client.writeRecords(
                path: .init(account: account, zone: "keychain"),
                body: .json(.init(writes: [recordWrite("a", expected: 0), recordWrite("b", expected: 0)]))
            )
            #expect(try written.ok.body.json.seq == 2)

            let conflict = try await client.writeRecords(
                path: .init(account: account, zone: "keychain"), body: .json(.init(writes: [recordWrite("a", expected: 0)]))
            )
            #expect(try conflict.conflict.body.json.conflicts.map(\.currentVersion) == [1])

            let page = try await client.getChanges(path: .init(account: account, zone: "keychain"), query: .init(since: 1, limit: 10))
            #expect(try page.ok.body.json.records.map(\.itemId) == ["b"])

            // The monitoring listener answers the document's health operation.
            let monitoring = Client(
                serverURL: try #require(URL(string: "http://127.0.0.1:\(servers.monitoringPorts[0])")), transport: AsyncHTTPClientTransport())
            let health = try await monitoring.getHealth()
            #expect(try health.ok.body.json.status == "ok")
        }
    }
}
#endif
