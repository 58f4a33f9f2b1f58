#if Network
import Crypto
import Foundation
import KeychainSyncAPI

/// A device's identity as the sync service names it.
package enum DeviceIdentity {
    /// The length of an Ed25519 or X25519 public key in raw form.
    package static let publicKeyLength = 32

    /// A device's id: lowercase hex of the first 16 bytes of SHA-256 over its raw Ed25519 public key.
    /// - Parameter signingKey: The raw 32-byte public signing key.
    /// - Returns: 32 lowercase hex characters.
    package static func deviceID(signingKey: some Sequence<UInt8>) -> String {
        Array(SHA256.hash(data: Array(signingKey)).prefix(16)).hexString
    }

    /// Whether a string has the form of a device id (32 lowercase hex characters).
    /// - Parameter id: The string to check.
    /// - Returns: `true` for a well-formed id.
    package static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count == 32
            && id.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// Verifies an Ed25519 signature with a raw public key.
    /// - Parameters:
    ///   - signature: The signature bytes.
    ///   - message: The signed bytes.
    ///   - signingKey: The raw 32-byte public key.
    /// - Returns: `false` when the key is malformed or the signature does not verify.
    package static func verify(signature: some DataProtocol, of message: some DataProtocol, signingKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: signingKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }
}
#endif
