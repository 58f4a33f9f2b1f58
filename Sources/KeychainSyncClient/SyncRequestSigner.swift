import Crypto
import Foundation
import HTTPTypes
import KeychainSync
import KeychainSyncAPI
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
        let message = RequestSignature.canonicalString(method: request.method.rawValue, pathWithQuery: target, body: bytes,
                                                       timestamp: timestamp, nonce: nonce)
        let signature = try keys.signing.signature(for: message)
        request.headerFields[Self.device] = keys.publicKeys.deviceID
        request.headerFields[Self.timestamp] = timestamp
        request.headerFields[Self.nonceField] = nonce
        request.headerFields[Self.signatureField] = signature.base64EncodedString()
        return try await next(request, body == nil ? nil : HTTPBody(bytes), baseURL)
    }

    // The header names are constants of the protocol, valid field names: the initializer cannot fail on them.
    static let device = HTTPField.Name(RequestSignature.deviceHeader)!
    static let timestamp = HTTPField.Name(RequestSignature.timestampHeader)!
    static let nonceField = HTTPField.Name(RequestSignature.nonceHeader)!
    static let signatureField = HTTPField.Name(RequestSignature.signatureHeader)!

    /// 16 random bytes in base64url without padding (22 characters).
    static func nonce() -> String {
        let bytes = SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
