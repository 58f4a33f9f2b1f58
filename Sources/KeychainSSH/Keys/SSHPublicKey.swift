import Crypto
import Foundation
import KeychainCore

/// An SSH public key of a kind the agent serves: its wire blob (RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709 §4), its
/// `authorized_keys` line and its SHA-256 fingerprint, as `ssh-keygen -l` prints it.
package enum SSHPublicKey: Sendable, Hashable {
    /// `ecdsa-sha2-nistp256`: the point, uncompressed (65 bytes).
    case ecdsaP256(point: [UInt8])
    /// `ssh-ed25519`: 32 bytes.
    case ed25519([UInt8])
    /// `ssh-rsa`: the public exponent and modulus, big-endian without leading zeros.
    case rsa(exponent: [UInt8], modulus: [UInt8])

    /// The key type's name on the wire.
    package var typeName: String {
        switch self {
        case .ecdsaP256: "ecdsa-sha2-nistp256"
        case .ed25519: "ssh-ed25519"
        case .rsa: "ssh-rsa"
        }
    }

    /// The key's wire blob.
    package var blob: [UInt8] {
        var writer = SSHWireWriter()
        writer.string(typeName)
        switch self {
        case .ecdsaP256(let point):
            writer.string("nistp256")
            writer.string(point)
        case .ed25519(let key):
            writer.string(key)
        case .rsa(let exponent, let modulus):
            writer.mpint(unsigned: exponent)
            writer.mpint(unsigned: modulus)
        }
        return writer.bytes
    }

    /// The key in a blob; `corruptData` for a malformed one, `unimplemented` for a type the agent does not serve.
    package init(blob: [UInt8]) throws(KeychainError) {
        var reader = SSHWireReader(blob)
        let type = try reader.text()
        switch type {
        case "ecdsa-sha2-nistp256":
            guard try reader.text() == "nistp256" else { throw Self.malformed }
            let point = try reader.string()
            guard point.count == 65, point[0] == 4, (try? P256.Signing.PublicKey(x963Representation: point)) != nil else { throw Self.malformed }
            self = .ecdsaP256(point: point)
        case "ssh-ed25519":
            let key = try reader.string()
            guard key.count == 32 else { throw Self.malformed }
            self = .ed25519(key)
        case "ssh-rsa":
            let exponent = try reader.unsignedMPInt(), modulus = try reader.unsignedMPInt()
            guard !exponent.isEmpty, modulus.count >= 128 else { throw Self.malformed }
            self = .rsa(exponent: exponent, modulus: modulus)
        default:
            throw KeychainError(code: .unimplemented, message: "SSH keys of type \(type.prefix(64)) are not supported: use Ed25519, ECDSA P-256 or RSA.")
        }
        guard reader.isAtEnd else { throw Self.malformed }
    }

    static let malformed = KeychainError(code: .corruptData, message: "An SSH public key is malformed.")

    /// The key as one line of `authorized_keys`: type, base64 blob and `comment` (when not empty).
    package func authorizedKeysLine(comment: String = "") -> String {
        let line = typeName + " " + Data(blob).base64EncodedString()
        return comment.isEmpty ? line : line + " " + comment
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as OpenSSH prints fingerprints.
    package var fingerprint: String {
        var text = Data(SHA256.hash(data: blob)).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return "SHA256:" + text
    }

    /// Whether `signature` (a wire signature blob) is this key's signature of `data`.
    package func verifies(_ signature: [UInt8], of data: [UInt8]) -> Bool {
        var reader = SSHWireReader(signature)
        guard let type = try? reader.text(), let raw = try? reader.string(), reader.isAtEnd else { return false }
        switch self {
        case .ed25519(let key):
            guard type == "ssh-ed25519", let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key) else { return false }
            return publicKey.isValidSignature(raw, for: data)
        case .ecdsaP256(let point):
            var inner = SSHWireReader(raw)
            guard type == typeName, let publicKey = try? P256.Signing.PublicKey(x963Representation: point),
                let r = try? inner.unsignedMPInt(), let s = try? inner.unsignedMPInt(), inner.isAtEnd, r.count <= 32, s.count <= 32,
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: Self.padded(r, 32) + Self.padded(s, 32))
            else { return false }
            return publicKey.isValidSignature(ecdsa, for: SHA256.hash(data: data))
        case .rsa:
            // RSA signatures are checked by the peer (sshd); the agent only makes them.
            return false
        }
    }

    static func padded(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        [UInt8](repeating: 0, count: max(0, length - bytes.count)) + bytes
    }
}
