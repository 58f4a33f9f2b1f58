import Crypto
import CryptoExtras
import Foundation

/// The cryptographic half of a Secret Service session: what `OpenSession` negotiated, and how each secret is
/// wrapped for the bus (``seal(_:)``, for `GetSecrets`/`GetSecret`) and unwrapped from it (``open(parameters:value:)``,
/// for `CreateItem`/`SetSecret`).
///
/// A secret on the bus is the structure `(oayays)`: session, parameters, value, content type. This type deals with
/// the parameters and the value; the session path and the content type are the caller's.
///
/// For `dh-ietf1024-sha256-aes128-cbc-pkcs7` only the derived AES-128 key is kept; the private exponent and the
/// shared secret are dropped once ``open(algorithm:input:)-(SecretTransferAlgorithm,_)`` returns.
package struct SecretSessionCrypto: Sendable {
    /// The session's algorithm.
    package let algorithm: SecretTransferAlgorithm
    /// The AES-128 key both sides derived, for `dh-ietf1024-sha256-aes128-cbc-pkcs7`; nil for `plain`.
    let key: SymmetricKey?

    /// The AES-CBC block and IV length.
    static let blockSize = 16

    /// Opens a session's cryptography for the algorithm a client named in `OpenSession`.
    ///
    /// - Parameters:
    ///   - algorithm: The algorithm's name as the client sent it.
    ///   - input: `OpenSession`'s input variant when it was a byte array (`ay`), else nil.
    /// - Returns: The session, and the bytes to answer with in `OpenSession`'s output variant.
    /// - Throws: ``SecretTransferError/unsupportedAlgorithm(_:)`` for a name that is not a
    ///   ``SecretTransferAlgorithm``, and what ``open(algorithm:input:)-(SecretTransferAlgorithm,_)`` throws.
    package static func open(algorithm: String, input: [UInt8]?) throws(SecretTransferError) -> (SecretSessionCrypto, output: [UInt8]) {
        guard let known = SecretTransferAlgorithm(rawValue: algorithm) else {
            throw .unsupportedAlgorithm(algorithm)
        }
        return try open(algorithm: known, input: input)
    }

    /// Opens a session's cryptography.
    ///
    /// - `plain`: `input` is not looked at and the output is empty. The specification has the client send an
    ///   empty string (`s`) and the service answer with one; checking the input's type and answering with an
    ///   empty string variant are the caller's, since only it sees the variant.
    /// - `dh-ietf1024-sha256-aes128-cbc-pkcs7`: `input` is the client's public key, big-endian (leading zero bytes
    ///   allowed). The output is this side's public key, 2^x mod p for a fresh 256-bit x, as 128 big-endian bytes;
    ///   the caller sends it as a byte array (`ay`).
    ///
    /// - Parameters:
    ///   - algorithm: The algorithm the client chose.
    ///   - input: `OpenSession`'s input variant when it was a byte array (`ay`), else nil.
    /// - Returns: The session, and the bytes of `OpenSession`'s output variant.
    /// - Throws: ``SecretTransferError/invalidPublicKey(_:)`` for a missing, too long or out-of-range client key;
    ///   ``SecretTransferError/cryptoLibraryUnavailable(_:)`` when libcrypto cannot be opened;
    ///   ``SecretTransferError/cryptoFailed(_:)`` when the exponentiation fails.
    package static func open(algorithm: SecretTransferAlgorithm, input: [UInt8]?) throws(SecretTransferError) -> (SecretSessionCrypto, output: [UInt8]) {
        switch algorithm {
        case .plain:
            return (SecretSessionCrypto(algorithm: .plain, key: nil), output: [])
        case .dhIETF1024SHA256AES128CBCPKCS7:
            guard let input else { throw .invalidPublicKey(.missing) }
            return try openDiffieHellman(clientPublicKey: input, privateExponent: OakleyGroup2.randomPrivateExponent())
        }
    }

    /// The Diffie-Hellman exchange with a given private exponent: ``open(algorithm:input:)-(SecretTransferAlgorithm,_)``
    /// draws a fresh one, tests pass a fixed one for golden vectors.
    ///
    /// - Parameters:
    ///   - clientPublicKey: The client's public key, big-endian.
    ///   - privateExponent: This side's private exponent x, big-endian, greater than 1.
    /// - Returns: The session, and 2^x mod p as 128 bytes.
    /// - Throws: As ``open(algorithm:input:)-(SecretTransferAlgorithm,_)`` for this algorithm.
    static func openDiffieHellman(clientPublicKey: [UInt8], privateExponent: [UInt8]) throws(SecretTransferError) -> (SecretSessionCrypto, output: [UInt8]) {
        let peer = try OakleyGroup2.validatedPublicKey(clientPublicKey)
        let publicKey = try OakleyGroup2.power(OakleyGroup2.generator, privateExponent)
        let sharedSecret = try OakleyGroup2.power(peer, privateExponent)
        let session = SecretSessionCrypto(algorithm: .dhIETF1024SHA256AES128CBCPKCS7, key: aesKey(sharedSecret: sharedSecret))
        return (session, output: publicKey)
    }

    /// The AES-128 key from a shared secret: HKDF-SHA256 with empty salt and info over the secret left-padded to
    /// 128 bytes. The padding matters: libsecret, gnome-keyring and secretstorage all pad, so a secret whose first
    /// byte is zero (one exchange in 256) must not be shortened.
    static func aesKey(sharedSecret: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: OakleyGroup2.leftPadded(sharedSecret)),
            salt: [UInt8](), info: [UInt8](), outputByteCount: 16)
    }

    /// Wraps a secret for the bus.
    ///
    /// - `plain`: empty parameters, the secret as the value.
    /// - `dh-ietf1024-sha256-aes128-cbc-pkcs7`: a fresh random 16-byte IV as the parameters, the secret encrypted
    ///   with AES-128-CBC and PKCS#7 padding as the value.
    ///
    /// - Parameter secret: The secret's bytes (may be empty).
    /// - Returns: The secret's parameters and value.
    /// - Throws: ``SecretTransferError/cryptoFailed(_:)`` if swift-crypto refuses to encrypt (it should not).
    package func seal(_ secret: [UInt8]) throws(SecretTransferError) -> (parameters: [UInt8], value: [UInt8]) {
        try seal(secret, iv: AES._CBC.IV())
    }

    /// ``seal(_:)`` with a given IV (tests pass a fixed one for golden vectors).
    ///
    /// - Parameters:
    ///   - secret: The secret's bytes.
    ///   - iv: The IV to encrypt under; not used for `plain`.
    /// - Returns: The secret's parameters and value.
    /// - Throws: ``SecretTransferError/cryptoFailed(_:)`` if swift-crypto refuses to encrypt.
    func seal(_ secret: [UInt8], iv: AES._CBC.IV) throws(SecretTransferError) -> (parameters: [UInt8], value: [UInt8]) {
        guard let key else { return (parameters: [], value: secret) }
        do {
            let value = try AES._CBC.encrypt(secret, using: key, iv: iv)
            return (parameters: Array(iv), value: Array(value))
        } catch {
            throw .cryptoFailed("AES-128-CBC encryption: \(error)")
        }
    }

    /// Unwraps a secret a client sent.
    ///
    /// - `plain`: the parameters must be empty; the value is the secret.
    /// - `dh-ietf1024-sha256-aes128-cbc-pkcs7`: the parameters must be the 16-byte IV and the value a non-empty
    ///   multiple of 16 bytes, which must decrypt to valid PKCS#7 padding (checked in constant time by swift-crypto).
    ///
    /// - Parameters:
    ///   - parameters: The secret's parameters.
    ///   - value: The secret's value.
    /// - Returns: The secret.
    /// - Throws: ``SecretTransferError/malformedParameters(algorithm:byteCount:)``,
    ///   ``SecretTransferError/malformedCiphertext(byteCount:)`` or ``SecretTransferError/badPadding``.
    package func open(parameters: [UInt8], value: [UInt8]) throws(SecretTransferError) -> [UInt8] {
        guard let key else {
            guard parameters.isEmpty else { throw .malformedParameters(algorithm: algorithm, byteCount: parameters.count) }
            return value
        }
        guard parameters.count == Self.blockSize, let iv = try? AES._CBC.IV(ivBytes: parameters) else {
            throw .malformedParameters(algorithm: algorithm, byteCount: parameters.count)
        }
        guard !value.isEmpty, value.count % Self.blockSize == 0 else {
            throw .malformedCiphertext(byteCount: value.count)
        }
        // With the key, IV and length checked, the only failure left is the padding.
        guard let secret = try? AES._CBC.decrypt(value, using: key, iv: iv) else { throw .badPadding }
        return Array(secret)
    }
}

// MARK: The client's side

/// A client's half of a `dh-ietf1024-sha256-aes128-cbc-pkcs7` exchange in progress: its private exponent and the
/// public key to send in `OpenSession`. ``finish(serverPublicKey:)`` makes the session from the service's answer;
/// the exponent goes with this value, which the caller drops once the session is made.
///
/// `security import-secret-service` is such a client of another provider (gnome-keyring, KeePassXC).
package struct SecretSessionClientExchange: Sendable {
    /// This side's private exponent x, big-endian.
    let privateExponent: [UInt8]
    /// This side's public key, 2^x mod p as 128 big-endian bytes: `OpenSession`'s input, as a byte array (`ay`).
    package let publicKey: [UInt8]

    /// The session both sides derive: the same HKDF-SHA256 of the shared secret as the service's side.
    ///
    /// - Parameter serverPublicKey: `OpenSession`'s output, the service's public key, big-endian.
    /// - Returns: The session's cryptography.
    /// - Throws: ``SecretTransferError/invalidPublicKey(_:)`` for a too long or out-of-range key;
    ///   ``SecretTransferError/cryptoLibraryUnavailable(_:)`` or ``SecretTransferError/cryptoFailed(_:)`` as
    ///   the exponentiation fails.
    package func finish(serverPublicKey: [UInt8]) throws(SecretTransferError) -> SecretSessionCrypto {
        // The computation is symmetric: (g^y)^x with the peer's key and this side's exponent.
        try SecretSessionCrypto.openDiffieHellman(clientPublicKey: serverPublicKey, privateExponent: privateExponent).0
    }
}

extension SecretSessionCrypto {
    /// Starts a client's `dh-ietf1024-sha256-aes128-cbc-pkcs7` exchange with a fresh 256-bit private exponent.
    ///
    /// - Returns: The exchange: send its ``SecretSessionClientExchange/publicKey`` in `OpenSession`, then call
    ///   ``SecretSessionClientExchange/finish(serverPublicKey:)`` with the answer.
    /// - Throws: ``SecretTransferError/cryptoLibraryUnavailable(_:)`` or ``SecretTransferError/cryptoFailed(_:)``.
    package static func beginClientExchange() throws(SecretTransferError) -> SecretSessionClientExchange {
        try beginClientExchange(privateExponent: OakleyGroup2.randomPrivateExponent())
    }

    /// ``beginClientExchange()`` with a given private exponent (tests pass a fixed one).
    static func beginClientExchange(privateExponent: [UInt8]) throws(SecretTransferError) -> SecretSessionClientExchange {
        SecretSessionClientExchange(
            privateExponent: privateExponent,
            publicKey: try OakleyGroup2.power(OakleyGroup2.generator, privateExponent))
    }
}
