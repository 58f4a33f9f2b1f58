import Crypto
import Foundation
import HTTPTypes
import KeychainSync
import OpenAPIRuntime

/// Signs every request to the sync server with the device's key, as the API document says: four headers
/// (`Keychain-Device`, `Keychain-Timestamp`, `Keychain-Nonce`, `Keychain-Signature`) and an Ed25519 signature over
/// the canonical string of the method, the path with its query, SHA-256 of the body, the time and a fresh nonce.
struct SyncRequestSigner: ClientMiddleware {
    /// The device that signs.
    let keys: SyncDeviceKeys
    /// The clock the timestamp comes from.
    let now: @Sendable () -> Date
    /// The largest body signed (the server refuses larger ones).
    static let maximumBody = 8 * 1024 * 1024

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let bytes: [UInt8] = if let body { try await [UInt8](collecting: body, upTo: Self.maximumBody) } else { [] }
        // The path as sent: the base URL's path (if any) before the operation's.
        let basePath = baseURL.path.hasSuffix("/") ? String(baseURL.path.dropLast()) : baseURL.path
        let target = basePath + (request.path ?? "/")
        let timestamp = String(Int64(now().timeIntervalSince1970))
        let nonce = Self.nonce()
        let signature = try keys.signing.signature(for: Self.canonicalString(method: request.method.rawValue, target: target,
                                                                              body: bytes, timestamp: timestamp, nonce: nonce))
        request.headerFields[Self.device] = keys.publicKeys.deviceID
        request.headerFields[Self.timestamp] = timestamp
        request.headerFields[Self.nonceField] = nonce
        request.headerFields[Self.signatureField] = signature.base64EncodedString()
        return try await next(request, body == nil ? nil : HTTPBody(bytes), baseURL)
    }

    static let device = HTTPField.Name("Keychain-Device")!
    static let timestamp = HTTPField.Name("Keychain-Timestamp")!
    static let nonceField = HTTPField.Name("Keychain-Nonce")!
    static let signatureField = HTTPField.Name("Keychain-Signature")!

    /// The bytes signed: `keychain-sync-v1`, the method, the request target, the body's SHA-256 in hex, the
    /// timestamp and the nonce, one per line.
    static func canonicalString(method: String, target: String, body: [UInt8], timestamp: String, nonce: String) -> Data {
        let hash = SHA256.hash(data: body).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        return Data(["keychain-sync-v1", method.uppercased(), target, hash, timestamp, nonce].joined(separator: "\n").utf8)
    }

    /// 16 random bytes in base64url without padding (22 characters).
    static func nonce() -> String {
        let bytes = SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
