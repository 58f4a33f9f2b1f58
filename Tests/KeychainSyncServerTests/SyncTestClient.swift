#if Network
import AsyncHTTPClient
import Crypto
import Foundation
import KeychainSyncAPI
import KeychainSyncServer
import NIOCore
import NIOHTTP1

/// A device of the tests: its Ed25519 and X25519 keys and its id.
struct TestDevice: Sendable {
    let signing = Curve25519.Signing.PrivateKey()
    let agreement = Curve25519.KeyAgreement.PrivateKey()

    /// The raw public signing key.
    var signingKey: [UInt8] { Array(signing.publicKey.rawRepresentation) }

    /// The device id the server derives.
    var id: String { DeviceIdentity.deviceID(signingKey: signingKey) }

    /// The keys as the API carries them.
    var keys: Components.Schemas.DeviceKeys {
        .init(signingKey: .init(signingKey), agreementKey: .init(Array(agreement.publicKey.rawRepresentation)))
    }

    /// A device list naming `trusted`, version `version`, signed by this device.
    func deviceList(version: Int64, trusted: [String]) throws -> Components.Schemas.DeviceList {
        let blob = Array("device-list v\(version): \(trusted.joined(separator: ","))".utf8)
        return .init(
            deviceList: .init(blob), deviceListVersion: version, trustedDeviceIds: trusted, signer: id,
            signature: .init(Array(try signing.signature(for: blob)))
        )
    }
}

/// An HTTP answer: status and body.
struct TestResponse: Sendable {
    let status: Int
    let body: [UInt8]
    /// The `Retry-After` header, when the answer has one.
    var retryAfter: String? = nil

    /// The body decoded as `T`.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body))
    }

    /// The `error` code of an error body, or "" when it has none.
    var errorCode: String { (try? decode(Components.Schemas._Error.self).error) ?? "" }
}

/// How a test request is signed: normally, or broken on purpose.
struct Signing: Sendable {
    var timestamp: Int64? = nil
    var nonce: String? = nil
    var corruptSignature = false
    var unsigned = false
    /// Sign these bytes instead of the body sent.
    var signedBody: [UInt8]? = nil

    static let normal = Signing()
}

/// Talks HTTP to one server instance over a real socket with AsyncHTTPClient, signing as a device.
struct SyncTestClient: Sendable {
    let port: Int

    /// The URL of a path on the instance.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// A fresh random nonce (22 base64url characters).
    static func freshNonce() -> String {
        Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The signature headers for a request.
    static func signatureHeaders(
        method: String, path: String, body: [UInt8], device: TestDevice, signing: Signing = .normal
    ) throws
        -> [(String, String)]
    {
        let timestamp = String(signing.timestamp ?? Int64(Date().timeIntervalSince1970))
        let nonce = signing.nonce ?? freshNonce()
        let message = RequestSignature.canonicalString(method: method, pathWithQuery: path, body: body, timestamp: timestamp, nonce: nonce)
        var signature = Array(try device.signing.signature(for: message))
        if signing.corruptSignature { signature[0] ^= 0xff }
        return [
            (RequestSignature.deviceHeader, device.id), (RequestSignature.timestampHeader, timestamp),
            (RequestSignature.nonceHeader, nonce), (RequestSignature.signatureHeader, Data(signature).base64EncodedString()),
        ]
    }

    /// Sends a request with raw body bytes, signed by `device` (unless `device` is nil).
    func send(
        _ method: HTTPMethod, _ path: String, bytes: [UInt8] = [], as device: TestDevice?, signing: Signing = .normal
    ) async throws
        -> TestResponse
    {
        var request = HTTPClientRequest(url: url(path))
        request.method = method
        if !bytes.isEmpty {
            request.body = .bytes(ByteBuffer(bytes: bytes))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        if let device, !signing.unsigned {
            for (name, value) in try Self.signatureHeaders(
                method: method.rawValue, path: path, body: signing.signedBody ?? bytes, device: device, signing: signing
            ) {
                request.headers.add(name: name, value: value)
            }
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return TestResponse(status: Int(response.status.code), body: Array(body.readableBytesView), retryAfter: response.headers.first(name: "Retry-After"))
    }

    /// Sends a request with a JSON body, signed by `device`.
    func send(
        _ method: HTTPMethod, _ path: String, json: some Encodable, as device: TestDevice?, signing: Signing = .normal
    ) async throws
        -> TestResponse
    {
        try await send(method, path, bytes: Array(try JSONEncoder().encode(json)), as: device, signing: signing)
    }

    // MARK: The API's operations

    /// Creates an account with `device` as its first device and a zone key `zk1` wrapped for it.
    func createAccount(_ account: String, device: TestDevice) async throws -> TestResponse {
        try await send(
            .POST, "/v1/accounts",
            json: Components.Schemas.CreateAccountRequest(
                accountId: account, device: device.keys, deviceList: try device.deviceList(version: 1, trusted: [device.id]),
                zoneKeys: [.init(keyId: "zk1", recipient: device.id, wrapped: .init(Array("zone key for \(device.id)".utf8)))]
            ),
            as: device
        )
    }

    /// Writes records to a zone.
    func write(
        _ account: String, zone: String = "keychain", _ writes: [Components.Schemas.RecordWrite], as device: TestDevice
    ) async throws
        -> TestResponse
    {
        try await send(.POST, "/v1/accounts/\(account)/zones/\(zone)/records", json: Components.Schemas.WriteBatch(writes: writes), as: device)
    }

    /// Reads one page of a zone's changes.
    func changes(
        _ account: String, zone: String = "keychain", since: Int64, limit: Int? = nil, as device: TestDevice
    ) async throws
        -> TestResponse
    {
        let query = "since=\(since)" + (limit.map { "&limit=\($0)" } ?? "")
        return try await send(.GET, "/v1/accounts/\(account)/zones/\(zone)/changes?\(query)", as: device)
    }
}

/// A write of item `id` with a recognizable ciphertext.
func recordWrite(_ id: String, expected: Int64, deleted: Bool = false, text: String? = nil) -> Components.Schemas.RecordWrite {
    .init(
        itemId: id, expectedVersion: expected, deleted: deleted, ciphertext: .init(Array((text ?? "sealed \(id) v\(expected + 1)").utf8)),
        wrappedKey: .init(Array("key \(id)".utf8)), keyId: "zk1"
    )
}

/// A new account id.
func newAccountID() -> String { UUID().uuidString.lowercased() }
#endif
