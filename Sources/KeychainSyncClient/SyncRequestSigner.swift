#if Network
import Crypto
import Foundation
import HTTPTypes
import KeychainSync
import KeychainSyncAPI
import OpenAPIRuntime

/// Signs every request to the sync server with the device's key, as the API document says: four headers
/// (`Keychain-Device`, `Keychain-Timestamp`, `Keychain-Nonce`, `Keychain-Signature`) and an Ed25519 signature over
/// the canonical string of the method, the path with its query, SHA-256 of the body, the time and a fresh nonce;
/// and the body's hash in `Keychain-Content-SHA256`, so that the server checks the signature before the body.
struct SyncRequestSigner: ClientMiddleware {
    /// The device that signs.
    let keys: SyncDeviceKeys
    /// The clock the timestamp comes from.
    let now: @Sendable () -> Date
    /// The largest body signed (the server refuses larger ones).
    static let maximumBody = 8 * 1024 * 1024

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let bytes: [UInt8] = if let body { try await [UInt8](collecting: body, upTo: Self.maximumBody) } else { [] }
        // The path as sent: the base URL's path (if any) before the operation's.
        let basePath = baseURL.path.hasSuffix("/") ? String(baseURL.path.dropLast()) : baseURL.path
        let target = basePath + (request.path ?? "/")
        for field in try Self.signatureFields(method: request.method.rawValue, pathWithQuery: target, body: bytes, keys: keys, now: now()) {
            request.headerFields[field.name] = field.value
        }
        return try await next(request, body == nil ? nil : HTTPBody(bytes), baseURL)
    }

    /// The four signature headers of a request: its method, its path with the query as sent (the base URL's path
    /// included), its body's bytes, signed by `keys` at `now` with a fresh nonce. Used as well for the push
    /// socket's upgrade request, which the generated client does not send.
    static func signatureFields(method: String, pathWithQuery: String, body: [UInt8], keys: SyncDeviceKeys, now: Date) throws -> HTTPFields {
        let timestamp = String(Int64(now.timeIntervalSince1970))
        let nonce = Self.nonce()
        let bodyHash = RequestSignature.bodyHash(body)
        let message = RequestSignature.canonicalString(
            method: method, pathWithQuery: pathWithQuery, bodyHash: bodyHash,
            timestamp: timestamp, nonce: nonce)
        let signature = try keys.signing.signature(for: message)
        var fields = HTTPFields()
        // The server checks the signature from the headers, before it reads the body.
        fields[Self.contentHash] = bodyHash
        fields[Self.device] = keys.publicKeys.deviceID
        fields[Self.timestamp] = timestamp
        fields[Self.nonceField] = nonce
        fields[Self.signatureField] = signature.base64EncodedString()
        return fields
    }

    // The header names are constants of the protocol, valid field names: the initializer cannot fail on them.
    static let device = HTTPField.Name(RequestSignature.deviceHeader)!
    static let timestamp = HTTPField.Name(RequestSignature.timestampHeader)!
    static let nonceField = HTTPField.Name(RequestSignature.nonceHeader)!
    static let signatureField = HTTPField.Name(RequestSignature.signatureHeader)!
    static let contentHash = HTTPField.Name(RequestSignature.contentHashHeader)!

    /// 16 random bytes in base64url without padding (22 characters).
    static func nonce() -> String {
        let bytes = SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
#endif
