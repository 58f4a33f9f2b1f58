import Foundation

/// A hash function named in an Apple key algorithm.
package enum KeyHash: String, Sendable, Hashable, CaseIterable {
    case sha1 = "SHA1", sha224 = "SHA224", sha256 = "SHA256", sha384 = "SHA384", sha512 = "SHA512"

    /// The digest length in bytes.
    package var byteCount: Int {
        switch self {
        case .sha1: 20
        case .sha224: 28
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }
}

/// What a key operation does, as `SecKeyIsAlgorithmSupported` names it (`SecKeyOperationType`'s raw values).
package enum KeyOperation: Int, Sendable, Hashable {
    case sign = 0, verify = 1, encrypt = 2, decrypt = 3, keyExchange = 4
}

/// A `SecKeyAlgorithm`, parsed from Apple's identifier string (`"algid:sign:ECDSA:message-X962:SHA256"`, …)
/// into what the engine does. Only the algorithms swift-crypto can carry out have a case; any other identifier,
/// Apple's or not, is "not supported" (`errSecParam` from the operations, false from `SecKeyIsAlgorithmSupported`).
package enum KeyAlgorithm: Sendable, Hashable {
    /// ECDSA over a digest the caller computed (`nil`: any digest length), DER (X9.62) or raw r‖s (RFC 4754).
    case ecdsaDigest(KeyHash?, raw: Bool)
    /// ECDSA over a message hashed here, DER (X9.62) or raw r‖s (RFC 4754).
    case ecdsaMessage(KeyHash, raw: Bool)
    /// RSA PKCS#1 v1.5 signature over a message hashed here.
    case rsaPKCS1v15Message(KeyHash)
    /// RSA PSS signature (salt as long as the digest) over a message hashed here.
    case rsaPSSMessage(KeyHash)
    /// RSA OAEP encryption.
    case rsaOAEP(KeyHash)
    /// ECIES as Apple does it: ephemeral ECDH, ANSI X9.63 KDF, AES-GCM; `variableIV` takes the nonce from the KDF
    /// (else 16 zero bytes).
    case ecies(cofactor: Bool, hash: KeyHash, variableIV: Bool)
    /// ECDH; with a hash, the shared secret goes through the ANSI X9.63 KDF.
    case ecdh(cofactor: Bool, kdf: KeyHash?)

    /// Parses Apple's identifier; nil for one the engine cannot carry out.
    package init?(identifier: String) {
        guard let known = KeyAlgorithm.table[identifier] else { return nil }
        self = known
    }

    /// The operations this algorithm is for.
    package var operations: Set<KeyOperation> {
        switch self {
        case .ecdsaDigest, .ecdsaMessage, .rsaPKCS1v15Message, .rsaPSSMessage: [.sign, .verify]
        case .rsaOAEP, .ecies: [.encrypt, .decrypt]
        case .ecdh: [.keyExchange]
        }
    }

    /// Whether it needs an elliptic-curve key (else RSA).
    package var isEC: Bool {
        switch self {
        case .ecdsaDigest, .ecdsaMessage, .ecies, .ecdh: true
        case .rsaPKCS1v15Message, .rsaPSSMessage, .rsaOAEP: false
        }
    }

    /// Apple's identifiers (`SecKey.h`) of the algorithms swift-crypto supports.
    static let table: [String: KeyAlgorithm] = {
        var t: [String: KeyAlgorithm] = [
            "algid:sign:ECDSA:RFC4754": .ecdsaDigest(nil, raw: true),
            "algid:sign:ECDSA:digest-X962": .ecdsaDigest(nil, raw: false),
            "algid:sign:ECDSA:digest-RFC4754": .ecdsaDigest(nil, raw: true),
            "algid:encrypt:RSA:OAEP:SHA1": .rsaOAEP(.sha1),
            "algid:encrypt:RSA:OAEP:SHA256": .rsaOAEP(.sha256),
            "algid:keyexchange:ECDH": .ecdh(cofactor: false, kdf: nil),
            "algid:keyexchange:ECDHC": .ecdh(cofactor: true, kdf: nil),
        ]
        for hash in KeyHash.allCases {
            let h = hash.rawValue
            // A digest the caller computed is signed as bytes, whatever hash made it.
            t["algid:sign:ECDSA:digest-X962:\(h)"] = .ecdsaDigest(hash, raw: false)
            t["algid:sign:ECDSA:digest-RFC4754:\(h)"] = .ecdsaDigest(hash, raw: true)
            // swift-crypto has no SHA-224: nothing that hashes here uses it.
            guard hash != .sha224 else { continue }
            t["algid:sign:ECDSA:message-X962:\(h)"] = .ecdsaMessage(hash, raw: false)
            t["algid:sign:ECDSA:message-RFC4754:\(h)"] = .ecdsaMessage(hash, raw: true)
            t["algid:keyexchange:ECDH:KDFX963:\(h)"] = .ecdh(cofactor: false, kdf: hash)
            t["algid:keyexchange:ECDHC:KDFX963:\(h)"] = .ecdh(cofactor: true, kdf: hash)
            t["algid:encrypt:ECIES:ECDH:KDFX963:\(h):AESGCM"] = .ecies(cofactor: false, hash: hash, variableIV: false)
            t["algid:encrypt:ECIES:ECDHC:KDFX963:\(h):AESGCM"] = .ecies(cofactor: true, hash: hash, variableIV: false)
            if hash != .sha1 {
                t["algid:encrypt:ECIES:ECDH:KDFX963:\(h):AESGCM-KDFIV"] = .ecies(cofactor: false, hash: hash, variableIV: true)
                t["algid:encrypt:ECIES:ECDHC:KDFX963:\(h):AESGCM-KDFIV"] = .ecies(cofactor: true, hash: hash, variableIV: true)
            }
            t["algid:sign:RSA:message-PKCS1v15:\(h)"] = .rsaPKCS1v15Message(hash)
            t["algid:sign:RSA:message-PSS:\(h):\(h):\(hash.byteCount)"] = .rsaPSSMessage(hash)
        }
        return t
    }()
}
