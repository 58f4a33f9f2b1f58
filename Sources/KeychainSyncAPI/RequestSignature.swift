internal import Crypto
import Foundation

/// The signature rule every sync request follows: which headers carry it and what string it signs.
///
/// Clients build the canonical string with ``canonicalString(method:pathWithQuery:body:timestamp:nonce:)`` and
/// sign it with their Ed25519 key; the server rebuilds it from what it received and verifies. Kept here, beside the
/// API document (whose `info.description` states the same rule for other clients), so that the server and this
/// project's client share one definition.
package enum RequestSignature {
    /// The first line of every canonical string: the rule's version.
    package static let domain = "keychain-sync-v1"
    /// The header naming the signing device.
    package static let deviceHeader = "Keychain-Device"
    /// The header carrying the Unix time of signing, in seconds.
    package static let timestampHeader = "Keychain-Timestamp"
    /// The header carrying the request's single-use nonce.
    package static let nonceHeader = "Keychain-Nonce"
    /// The header carrying the base64 Ed25519 signature.
    package static let signatureHeader = "Keychain-Signature"
    /// The header carrying the lowercase hex SHA-256 of the body, as the canonical string has it: with it the
    /// server checks the signature before it reads the body, then the body against it.
    package static let contentHashHeader = "Keychain-Content-SHA256"
    /// How far a timestamp may be from the server's clock, in seconds.
    package static let maximumClockSkew: Int64 = 300
    /// How long the server remembers a nonce, in seconds (longer than the skew on either side).
    package static let nonceLifetime: Int64 = 600

    /// The bytes a request's signature covers.
    /// - Parameters:
    ///   - method: The HTTP method, upper case.
    ///   - pathWithQuery: The request target exactly as sent (path and query).
    ///   - body: The body bytes exactly as sent (empty when there is none).
    ///   - timestamp: The `Keychain-Timestamp` header's value.
    ///   - nonce: The `Keychain-Nonce` header's value.
    /// - Returns: The UTF-8 bytes of the canonical string.
    package static func canonicalString(
        method: String,
        pathWithQuery: String,
        body: some Sequence<UInt8>,
        timestamp: String,
        nonce: String
    ) -> [UInt8] {
        canonicalString(method: method, pathWithQuery: pathWithQuery, bodyHash: bodyHash(body), timestamp: timestamp, nonce: nonce)
    }

    /// The bytes a request's signature covers, from the body's hash (``bodyHash(_:)``) rather than the body.
    package static func canonicalString(method: String, pathWithQuery: String, bodyHash: String, timestamp: String, nonce: String) -> [UInt8] {
        let lines = [domain, method.uppercased(), pathWithQuery, bodyHash, timestamp, nonce]
        return Array(lines.joined(separator: "\n").utf8)
    }

    /// The lowercase hex SHA-256 of a body, as the canonical string and ``contentHashHeader`` carry it.
    package static func bodyHash(_ body: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(body)).hexString
    }

    /// Whether a ``contentHashHeader`` value has the form of a hash: 64 lowercase hex digits.
    package static func isWellFormedHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// Whether a nonce has the allowed form: 16 to 64 base64url characters, no padding.
    /// - Parameter nonce: The `Keychain-Nonce` header's value.
    /// - Returns: `true` when the server accepts its form.
    package static func isWellFormedNonce(_ nonce: String) -> Bool {
        (16...64).contains(nonce.utf8.count)
            && nonce.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default:
                    false
                }
            }
    }
}

extension Sequence<UInt8> {
    /// The bytes as lowercase hex.
    package var hexString: String {
        var result = ""
        for byte in self {
            result += String(byte >> 4, radix: 16) + String(byte & 0x0f, radix: 16)
        }
        return result
    }
}
