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

    /// The last field of Apple's RSA-PSS identifiers (`algid:sign:RSA:digest-PSS:SHA224:SHA224:24`): the digest
    /// length, except SHA-224's, which Apple's constant spells 24 (the salt is 28 bytes all the same).
    var pssLabel: Int { self == .sha224 ? 24 : byteCount }
}

/// What a key operation does, as `SecKeyIsAlgorithmSupported` names it (`SecKeyOperationType`'s raw values).
package enum KeyOperation: Int, Sendable, Hashable {
    case sign = 0, verify = 1, encrypt = 2, decrypt = 3, keyExchange = 4
}

/// How an RSA signature encodes what it signs.
package enum RSASignaturePadding: Sendable, Hashable {
    /// None: the input, as a big-endian number below the modulus, is raised to the private exponent.
    case none
    /// PKCS#1 v1.5 (EMSA-PKCS1-v1_5), with the digest's DigestInfo when the algorithm names a hash.
    case pkcs1v15
    /// RSASSA-PSS, MGF1 with the same hash, a salt as long as the digest.
    case pss
}

/// How RSA encryption pads the plaintext.
package enum RSAEncryptionPadding: Sendable, Hashable {
    /// None: the plaintext, as a big-endian number below the modulus.
    case none
    /// PKCS#1 v1.5 (EME-PKCS1-v1_5).
    case pkcs1
    /// OAEP with the hash for both the label digest and MGF1.
    case oaep(KeyHash)
}

/// A `SecKeyAlgorithm`, parsed from Apple's identifier string (`"algid:sign:ECDSA:message-X962:SHA256"`, …)
/// into what the engine does. Every algorithm of Apple's public list has an entry in ``table``; identifiers Apple
/// knows but this keychain does not carry out are in ``unimplemented`` (`errSecUnimplemented`); any other string
/// is not an algorithm (`errSecParam`).
package enum KeyAlgorithm: Sendable, Hashable {
    /// ECDSA over a digest the caller computed (`nil`: any digest length), DER (X9.62) or raw r‖s (RFC 4754).
    case ecdsaDigest(KeyHash?, raw: Bool)
    /// ECDSA over a message hashed here, DER (X9.62) or raw r‖s (RFC 4754).
    case ecdsaMessage(KeyHash, raw: Bool)
    /// An RSA signature: its padding, the digest the input is (nil: bytes signed as given), and whether the input
    /// is the message, hashed here.
    case rsaSignature(RSASignaturePadding, hash: KeyHash?, message: Bool)
    /// RSA encryption; with `aesGCM`, Apple's hybrid: a random AES key encrypted with the padding, then AES-GCM.
    case rsaEncryption(RSAEncryptionPadding, aesGCM: Bool)
    /// ECIES as Apple does it: ephemeral ECDH, ANSI X9.63 KDF, AES-GCM; `variableIV` takes the nonce from the KDF
    /// (else 16 zero bytes).
    case ecies(cofactor: Bool, hash: KeyHash, variableIV: Bool)
    /// ECDH; with a hash, the shared secret goes through the ANSI X9.63 KDF.
    case ecdh(cofactor: Bool, kdf: KeyHash?)

    /// Parses Apple's identifier; nil for one the engine does not carry out.
    package init?(identifier: String) {
        guard let known = KeyAlgorithm.table[identifier] else { return nil }
        self = known
    }

    /// Why an identifier Apple's Security framework knows is not carried out here, with what to use instead; nil
    /// for an identifier that is carried out, or that is not Apple's.
    package static func unimplementedReason(_ identifier: String) -> String? {
        unimplemented[identifier].map { "Algorithm \(identifier) is not implemented: \($0)" }
    }

    /// The operations this algorithm is for.
    package var operations: Set<KeyOperation> {
        switch self {
        case .ecdsaDigest, .ecdsaMessage, .rsaSignature: [.sign, .verify]
        case .rsaEncryption, .ecies: [.encrypt, .decrypt]
        case .ecdh: [.keyExchange]
        }
    }

    /// Whether it needs an elliptic-curve key (else RSA).
    package var isEC: Bool {
        switch self {
        case .ecdsaDigest, .ecdsaMessage, .ecies, .ecdh: true
        case .rsaSignature, .rsaEncryption: false
        }
    }

    /// Apple's identifiers (`SecKey.h`, `SecKeyAdaptors`), each with what it does.
    package static let table: [String: KeyAlgorithm] = {
        var t: [String: KeyAlgorithm] = [
            "algid:sign:ECDSA:RFC4754": .ecdsaDigest(nil, raw: true),
            "algid:sign:ECDSA:digest-X962": .ecdsaDigest(nil, raw: false),
            "algid:sign:ECDSA:digest-RFC4754": .ecdsaDigest(nil, raw: true),
            "algid:sign:RSA:raw": .rsaSignature(.none, hash: nil, message: false),
            "algid:sign:RSA:digest-PKCS1v15": .rsaSignature(.pkcs1v15, hash: nil, message: false),
            "algid:encrypt:RSA:raw": .rsaEncryption(.none, aesGCM: false),
            "algid:encrypt:RSA:PKCS1": .rsaEncryption(.pkcs1, aesGCM: false),
            "algid:keyexchange:ECDH": .ecdh(cofactor: false, kdf: nil),
            "algid:keyexchange:ECDHC": .ecdh(cofactor: true, kdf: nil),
        ]
        for hash in KeyHash.allCases {
            let h = hash.rawValue
            t["algid:sign:ECDSA:digest-X962:\(h)"] = .ecdsaDigest(hash, raw: false)
            t["algid:sign:ECDSA:digest-RFC4754:\(h)"] = .ecdsaDigest(hash, raw: true)
            t["algid:sign:ECDSA:message-X962:\(h)"] = .ecdsaMessage(hash, raw: false)
            t["algid:sign:ECDSA:message-RFC4754:\(h)"] = .ecdsaMessage(hash, raw: true)
            t["algid:sign:RSA:digest-PKCS1v15:\(h)"] = .rsaSignature(.pkcs1v15, hash: hash, message: false)
            t["algid:sign:RSA:message-PKCS1v15:\(h)"] = .rsaSignature(.pkcs1v15, hash: hash, message: true)
            t["algid:sign:RSA:digest-PSS:\(h):\(h):\(hash.pssLabel)"] = .rsaSignature(.pss, hash: hash, message: false)
            t["algid:sign:RSA:message-PSS:\(h):\(h):\(hash.pssLabel)"] = .rsaSignature(.pss, hash: hash, message: true)
            t["algid:encrypt:RSA:OAEP:\(h)"] = .rsaEncryption(.oaep(hash), aesGCM: false)
            t["algid:encrypt:RSA:OAEP:\(h):AESGCM"] = .rsaEncryption(.oaep(hash), aesGCM: true)
            t["algid:keyexchange:ECDH:KDFX963:\(h)"] = .ecdh(cofactor: false, kdf: hash)
            t["algid:keyexchange:ECDHC:KDFX963:\(h)"] = .ecdh(cofactor: true, kdf: hash)
            t["algid:encrypt:ECIES:ECDH:KDFX963:\(h):AESGCM"] = .ecies(cofactor: false, hash: hash, variableIV: false)
            t["algid:encrypt:ECIES:ECDHC:KDFX963:\(h):AESGCM"] = .ecies(cofactor: true, hash: hash, variableIV: false)
            // Apple has no variable-IV ECIES with SHA-1.
            if hash != .sha1 {
                t["algid:encrypt:ECIES:ECDH:KDFX963:\(h):AESGCM-KDFIV"] = .ecies(cofactor: false, hash: hash, variableIV: true)
                t["algid:encrypt:ECIES:ECDHC:KDFX963:\(h):AESGCM-KDFIV"] = .ecies(cofactor: true, hash: hash, variableIV: true)
            }
        }
        return t
    }()

    /// Identifiers Apple's Security framework has (private ones, outside the public `SecKeyAlgorithm` list) that
    /// this keychain does not carry out, with what to use instead.
    package static let unimplemented: [String: String] = [
        "algid:sign:RSA:digest-PKCS1v15:MD5": "MD5 signatures are not offered (MD5 is broken); use a SHA-256 or longer algorithm.",
        "algid:sign:RSA:message-PKCS1v15:MD5": "MD5 signatures are not offered (MD5 is broken); use rsaSignatureMessagePKCS1v15SHA256 or longer.",
        "algid:sign:RSA:raw-cc": "it works on corecrypto's in-memory number format; use rsaSignatureRaw (big-endian).",
        "algid:encrypt:RSA:raw-cc": "it works on corecrypto's in-memory number format; use rsaEncryptionRaw (big-endian).",
        "algid:encrypt:ECIES:ECDH:SHA256:2PubKeys": "it is Apple's key-store smart-card scheme; use eciesEncryptionCofactorVariableIVX963SHA256AESGCM.",
    ]
}
