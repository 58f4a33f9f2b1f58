import Crypto
import CryptoExtras
import Foundation
import KeychainCore

/// An SSH private key of a kind the agent serves, as its components (big-endian magnitudes), read from an OpenSSH
/// private key file or an agent's add request, and able to make the agent's signatures.
package enum SSHPrivateKey: Sendable, Hashable {
    /// `ssh-ed25519`: the 32-byte seed and the public key.
    case ed25519(seed: [UInt8], publicKey: [UInt8])
    /// `ecdsa-sha2-nistp256`: the 32-byte private scalar and the public point (uncompressed).
    case ecdsaP256(scalar: [UInt8], point: [UInt8])
    /// `ssh-rsa`: the modulus, the exponents and the primes.
    case rsa(SSHRSAComponents)

    /// The key's public half.
    package var publicKey: SSHPublicKey {
        switch self {
        case .ed25519(_, let publicKey): .ed25519(publicKey)
        case .ecdsaP256(_, let point): .ecdsaP256(point: point)
        case .rsa(let rsa): .rsa(exponent: rsa.e, modulus: rsa.n)
        }
    }

    static let malformed = KeychainError(code: .corruptData, message: "An SSH private key is malformed.")

    /// Reads a key as OpenSSH writes it in a private key file's private section and in an agent's add request: the
    /// type's name, then its fields (comment not included). Checks that the public half matches the private one.
    package static func read(from reader: inout SSHWireReader) throws(KeychainError) -> SSHPrivateKey {
        let type = try reader.text()
        switch type {
        case "ssh-ed25519":
            let publicKey = try reader.string(), secret = try reader.string()
            // OpenSSH keeps the seed and the public key together (64 bytes).
            guard publicKey.count == 32, secret.count == 64, Array(secret[32...]) == publicKey else { throw malformed }
            let seed = Array(secret[..<32])
            guard let derived = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed), Array(derived.publicKey.rawRepresentation) == publicKey else {
                throw malformed
            }
            return .ed25519(seed: seed, publicKey: publicKey)
        case "ecdsa-sha2-nistp256":
            guard try reader.text() == "nistp256" else { throw malformed }
            let point = try reader.string(), scalar = try reader.unsignedMPInt()
            guard scalar.count <= 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: SSHPublicKey.padded(scalar, 32)),
                Array(key.publicKey.x963Representation) == point
            else { throw malformed }
            return .ecdsaP256(scalar: SSHPublicKey.padded(scalar, 32), point: point)
        case "ssh-rsa":
            let n = try reader.unsignedMPInt(), e = try reader.unsignedMPInt(), d = try reader.unsignedMPInt()
            let iqmp = try reader.unsignedMPInt(), p = try reader.unsignedMPInt(), q = try reader.unsignedMPInt()
            let components = SSHRSAComponents(n: n, e: e, d: d, iqmp: iqmp, p: p, q: q)
            guard n.count >= 256, (try? components.signingKey()) != nil else {
                throw KeychainError(code: .corruptData, message: "An SSH RSA key is malformed or shorter than 2,048 bits.")
            }
            return .rsa(components)
        default:
            throw KeychainError(code: .unimplemented, message: "SSH keys of type \(type.prefix(64)) are not supported: use Ed25519, ECDSA P-256 or RSA.")
        }
    }

    /// Writes the key as ``read(from:)`` reads it.
    package func write(to writer: inout SSHWireWriter) {
        writer.string(publicKey.typeName)
        switch self {
        case .ed25519(let seed, let publicKey):
            writer.string(publicKey)
            writer.string(seed + publicKey)
        case .ecdsaP256(let scalar, let point):
            writer.string("nistp256")
            writer.string(point)
            writer.mpint(unsigned: scalar)
        case .rsa(let rsa):
            for value in [rsa.n, rsa.e, rsa.d, rsa.iqmp, rsa.p, rsa.q] { writer.mpint(unsigned: value) }
        }
    }

    /// The agent's flags for RSA signatures (`SSH_AGENT_RSA_SHA2_256`, `SSH_AGENT_RSA_SHA2_512`).
    package static let rsaSHA256: UInt32 = 2, rsaSHA512: UInt32 = 4

    /// The wire signature of `data`: Ed25519; ECDSA over SHA-256 (`r` and `s` as mpints); RSA PKCS #1 v1.5 over
    /// SHA-512 or SHA-256 as `flags` ask. RSA with SHA-1 (`ssh-rsa` signatures, no flag) is refused: OpenSSH has not
    /// accepted it since 8.8.
    package func signature(of data: [UInt8], flags: UInt32 = 0) throws(KeychainError) -> [UInt8] {
        var writer = SSHWireWriter()
        do {
            switch self {
            case .ed25519(let seed, _):
                writer.string("ssh-ed25519")
                writer.string(Array(try Curve25519.Signing.PrivateKey(rawRepresentation: seed).signature(for: data)))
            case .ecdsaP256(let scalar, _):
                let raw = Array(try P256.Signing.PrivateKey(rawRepresentation: scalar).signature(for: data).rawRepresentation)
                var inner = SSHWireWriter()
                inner.mpint(unsigned: raw[..<32])
                inner.mpint(unsigned: raw[32...])
                writer.string("ecdsa-sha2-nistp256")
                writer.string(inner.bytes)
            case .rsa(let rsa):
                let key = try rsa.signingKey()
                let signature: _RSA.Signing.RSASignature
                if flags & Self.rsaSHA512 != 0 {
                    signature = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
                    writer.string("rsa-sha2-512")
                } else if flags & Self.rsaSHA256 != 0 {
                    signature = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                    writer.string("rsa-sha2-256")
                } else {
                    throw KeychainError(
                        code: .unimplemented, message: "An RSA signature with SHA-1 (ssh-rsa) was asked for: it is refused; use a client that asks for rsa-sha2-256 or rsa-sha2-512.")
                }
                writer.string(Array(signature.rawRepresentation))
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .internal, message: "An SSH key could not sign.", cause: DescribedError(error))
        }
        return writer.bytes
    }
}

/// An RSA private key's components, big-endian magnitudes without leading zeros.
package struct SSHRSAComponents: Sendable, Hashable {
    /// The modulus.
    package var n: [UInt8]
    /// The public exponent.
    package var e: [UInt8]
    /// The private exponent.
    package var d: [UInt8]
    /// q⁻¹ mod p.
    package var iqmp: [UInt8]
    /// The first prime.
    package var p: [UInt8]
    /// The second prime.
    package var q: [UInt8]

    /// The key, for signing (swift-crypto checks the components).
    func signingKey() throws -> _RSA.Signing.PrivateKey {
        try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q)
    }
}
