import Crypto
import CryptoExtras
import Foundation

/// The kind of an asymmetric key (`kSecAttrKeyType`, stored as Apple's numbers: EC 73, RSA 42).
package enum KeyType: Int64, Sendable, Hashable {
    case rsa = 42
    case ec = 73
}

/// Public or private (`kSecAttrKeyClass`, stored as Apple's numbers: public 0, private 1).
package enum KeyClass: Int64, Sendable, Hashable {
    case publicKey = 0
    case privateKey = 1
}

/// An asymmetric key as the engine holds it: its type, class and Apple's external representation (EC: ANSI
/// X9.63, `04‖X‖Y` public and `04‖X‖Y‖K` private; RSA: PKCS#1 DER). Every operation rebuilds the swift-crypto key
/// from those bytes, so a value never holds more than its bytes.
package struct KeyMaterial: Sendable, Hashable {
    package let type: KeyType
    package let keyClass: KeyClass
    /// Apple's external representation.
    package let bytes: Data
    /// The size in bits (256, 384 or 521 for EC; the modulus size for RSA).
    package let sizeInBits: Int

    // MARK: Making keys

    /// A new random private key: EC P-256, P-384 or P-521, or RSA of 2048 to 4096 bits (a multiple of 8).
    package static func generate(type: KeyType, sizeInBits: Int) throws(KeychainError) -> KeyMaterial {
        switch type {
        case .ec:
            guard let curve = Curve(bits: sizeInBits) else {
                throw KeychainError(code: .invalidParameter, message: "EC keys are 256, 384 or 521 bits (P-256, P-384, P-521); \(sizeInBits) is not one of them.")
            }
            return KeyMaterial(type: .ec, keyClass: .privateKey, bytes: curve.ops.generate(), sizeInBits: curve.bits)
        case .rsa:
            guard (2048...4096).contains(sizeInBits), sizeInBits % 8 == 0 else {
                throw KeychainError(code: .invalidParameter, message: "RSA keys are 2048 to 4096 bits, in multiples of 8; \(sizeInBits) is not.")
            }
            do {
                let key = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: sizeInBits))
                return KeyMaterial(type: .rsa, keyClass: .privateKey, bytes: key.derRepresentation, sizeInBits: key.keySizeInBits)
            } catch {
                throw KeychainError(code: .internal, message: "Generating an RSA key failed.", cause: error)
            }
        }
    }

    /// A key from Apple's external representation; `errSecParam` when the bytes are not such a key.
    package init(externalRepresentation data: Data, type: KeyType, keyClass: KeyClass) throws(KeychainError) {
        let bad = KeychainError(
            code: .invalidParameter,
            message:
                "The data is not an \(type == .ec ? "EC" : "RSA") \(keyClass == .privateKey ? "private" : "public") key in Apple's external representation (\(type == .ec ? "ANSI X9.63" : "PKCS#1 DER"))."
        )
        switch type {
        case .ec:
            let parts = keyClass == .privateKey ? 3 : 2
            guard data.first == 4, (data.count - 1) % parts == 0,
                let curve = Curve(coordinateBytes: (data.count - 1) / parts)
            else { throw bad }
            do {
                try curve.ops.validate(data, privateKey: keyClass == .privateKey)
            } catch {
                throw bad
            }
            self.init(type: .ec, keyClass: keyClass, bytes: Data(data), sizeInBits: curve.bits)
        case .rsa:
            do {
                if keyClass == .privateKey {
                    let key = try _RSA.Signing.PrivateKey(derRepresentation: data)
                    self.init(type: .rsa, keyClass: .privateKey, bytes: key.derRepresentation, sizeInBits: key.keySizeInBits)
                } else {
                    let key = try _RSA.Signing.PublicKey(derRepresentation: data)
                    self.init(type: .rsa, keyClass: .publicKey, bytes: key.pkcs1DERRepresentation, sizeInBits: key.keySizeInBits)
                }
            } catch {
                throw bad
            }
        }
    }

    /// An EC private key from its SEC1 or PKCS#8 DER (as OpenSSL writes it).
    package init(ecPrivateKeyDER der: Data) throws(KeychainError) {
        for curve in [Curve.p256, .p384, .p521] {
            if let x963 = try? curve.ops.x963(fromDER: der) {
                self.init(type: .ec, keyClass: .privateKey, bytes: x963, sizeInBits: curve.bits)
                return
            }
        }
        throw KeychainError(code: .invalidParameter, message: "The data is not a P-256, P-384 or P-521 private key in SEC1 or PKCS#8 DER.")
    }

    private init(type: KeyType, keyClass: KeyClass, bytes: Data, sizeInBits: Int) {
        self.type = type
        self.keyClass = keyClass
        self.bytes = bytes
        self.sizeInBits = sizeInBits
    }

    /// The public half (itself for a public key).
    package func publicKey() throws(KeychainError) -> KeyMaterial {
        guard keyClass == .privateKey else { return self }
        switch type {
        case .ec:
            let coordinates = (bytes.count - 1) / 3
            return KeyMaterial(type: .ec, keyClass: .publicKey, bytes: Data(bytes.prefix(1 + 2 * coordinates)), sizeInBits: sizeInBits)
        case .rsa:
            let key = try rsaPrivate()
            return KeyMaterial(type: .rsa, keyClass: .publicKey, bytes: key.publicKey.pkcs1DERRepresentation, sizeInBits: sizeInBits)
        }
    }

    /// `kSecAttrApplicationLabel`: the SHA-1 of the public key's bytes (the X9.63 point for EC, the PKCS#1 DER for
    /// RSA), as Apple computes it, and so equal to the `pkhh` of a certificate for the same key.
    package func applicationLabel() throws(KeychainError) -> Data {
        Data(Insecure.SHA1.hash(data: try publicKey().bytes))
    }

    /// `SecKeyGetBlockSize`: the modulus length for RSA, the coordinate length for EC, in bytes.
    package var blockSize: Int { (sizeInBits + 7) / 8 }

    /// Apple's attribute dictionary for a key (`SecKeyCopyAttributeDictionary`), over `extra`: class, type, sizes,
    /// the application label, the capabilities of its class, `perm` (0 unless given), and its data — what a
    /// `kSecClassKey` item stores for it.
    package func itemAttributes(_ extra: [String: PlistValue] = [:]) throws(KeychainError) -> [String: PlistValue] {
        let isPrivate = keyClass == .privateKey
        var d = extra
        d["kcls"] = .int(keyClass.rawValue)
        d["type"] = .int(type.rawValue)
        d["bsiz"] = .int(Int64(sizeInBits))
        d["esiz"] = .int(Int64(sizeInBits))
        d["klbl"] = .data(try applicationLabel())
        d["v_Data"] = .data(bytes)
        d.merge(KeyMaterial.capabilities(isPrivate: isPrivate)) { $1 }
        if d["perm"] == nil { d["perm"] = .int(0) }
        return d
    }

    /// The capability attributes of a private or public key (`kcls` and `kSecAttrCan…`).
    package static func capabilities(isPrivate: Bool) -> [String: PlistValue] {
        var d: [String: PlistValue] = ["kcls": .int(isPrivate ? KeyClass.privateKey.rawValue : KeyClass.publicKey.rawValue)]
        for (code, privateCapability) in [
            ("sign", true), ("decr", true), ("unwp", true), ("drve", true),
            ("vrfy", false), ("encr", false), ("wrap", false),
        ] {
            d[code] = .int(privateCapability == isPrivate ? 1 : 0)
        }
        return d
    }

    /// A key from DER as files carry it: an EC private key (SEC1 or PKCS#8), an RSA private key (PKCS#1 or
    /// PKCS#8), or a public key (SubjectPublicKeyInfo, or PKCS#1 for RSA).
    package init(derRepresentation der: Data, keyClass: KeyClass) throws(KeychainError) {
        if keyClass == .privateKey {
            if let key = try? KeyMaterial(ecPrivateKeyDER: der) { self = key; return }
            if let key = try? KeyMaterial(externalRepresentation: der, type: .rsa, keyClass: .privateKey) { self = key; return }
        } else {
            for curve in [Curve.p256, .p384, .p521] {
                if let point = try? curve.ops.x963(fromPublicDER: der) {
                    self.init(type: .ec, keyClass: .publicKey, bytes: point, sizeInBits: curve.bits)
                    return
                }
            }
            if let key = try? KeyMaterial(externalRepresentation: der, type: .rsa, keyClass: .publicKey) { self = key; return }
        }
        throw KeychainError(code: .invalidParameter, message: "The data is not an EC (P-256, P-384, P-521) or RSA \(keyClass == .privateKey ? "private" : "public") key in DER.")
    }

    /// The public key as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) ending in a newline, as openssl and
    /// `security export -t pubKeys` write it.
    package func publicKeyPEM() throws(KeychainError) -> String {
        let pub = try publicKey()
        do {
            switch type {
            case .ec: return try Curve(bits: sizeInBits).require().ops.publicPEM(fromX963: pub.bytes) + "\n"
            case .rsa: return try _RSA.Signing.PublicKey(derRepresentation: pub.bytes).pemRepresentation + "\n"
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .corruptData, message: "A stored public key does not encode.", cause: error)
        }
    }

    /// The private key as DER files carry it: PKCS#8 for EC, PKCS#1 for RSA (what `PKCS12.make` packs).
    package func privateKeyDER() throws(KeychainError) -> Data {
        guard keyClass == .privateKey else {
            throw KeychainError(code: .invalidParameter, message: "A public key has no private key to export.")
        }
        switch type {
        case .rsa: return bytes
        case .ec:
            do { return try Curve(bits: sizeInBits).require().ops.privateDER(fromX963: bytes) } catch let error as KeychainError {
                throw error
            } catch {
                throw KeychainError(code: .corruptData, message: "A stored EC private key does not encode.", cause: error)
            }
        }
    }

    // MARK: Operations

    /// Whether this key can do `operation` with `algorithm`.
    package func supports(_ operation: KeyOperation, _ algorithm: KeyAlgorithm) -> Bool {
        guard algorithm.operations.contains(operation), algorithm.isEC == (type == .ec) else { return false }
        switch operation {
        case .sign, .decrypt, .keyExchange: return keyClass == .privateKey
        case .verify, .encrypt: return keyClass == .publicKey
        }
    }

    private func require(_ operation: KeyOperation, _ algorithm: KeyAlgorithm, _ identifier: String) throws(KeychainError) {
        guard supports(operation, algorithm) else {
            throw KeychainError(code: .invalidParameter, message: "Algorithm \(identifier) is not supported for this \(keyClass == .privateKey ? "private" : "public") key's \(operation) operation.")
        }
    }

    /// `SecKeyCreateSignature`.
    package func sign(_ algorithm: KeyAlgorithm, identifier: String, _ data: Data) throws(KeychainError) -> Data {
        try require(.sign, algorithm, identifier)
        do {
            switch algorithm {
            case .ecdsaDigest(let hash, let raw):
                try checkDigest(data, hash, identifier)
                return try Curve(bits: sizeInBits).require().ops.sign(bytes, digest: data, raw: raw)
            case .ecdsaMessage(let hash, let raw):
                return try Curve(bits: sizeInBits).require().ops.sign(bytes, digest: try hash.digest(data), raw: raw)
            case .rsaSignature(let padding, let hash, let message):
                let input = try rsaSignatureInput(data, hash, message, padding, identifier)
                return try SystemRSA.run(
                    .sign, padding.system, digest: hash, key: bytes, input: input,
                    outputCapacity: blockSize, identifier: identifier)
            default:
                throw KeychainError(code: .invalidParameter, message: "Algorithm \(identifier) does not sign.")
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .invalidParameter, message: "Signing with \(identifier) failed.", cause: error)
        }
    }

    /// `SecKeyVerifySignature`: `errSecVerifyFailed` when the signature does not match.
    package func verify(_ algorithm: KeyAlgorithm, identifier: String, _ data: Data, signature: Data) throws(KeychainError) {
        try require(.verify, algorithm, identifier)
        let valid: Bool
        switch algorithm {
        case .ecdsaDigest(let hash, let raw):
            try checkDigest(data, hash, identifier)
            valid = try Curve(bits: sizeInBits).require().ops.verify(bytes, digest: data, signature: signature, raw: raw)
        case .ecdsaMessage(let hash, let raw):
            valid = try Curve(bits: sizeInBits).require().ops.verify(bytes, digest: try hash.digest(data), signature: signature, raw: raw)
        case .rsaSignature(.none, _, _):
            // Apple's raw verify: the signature raised to the public exponent, without its leading zeros, is the input.
            let recovered = try? SystemRSA.run(
                .recover, .none, digest: nil, key: try publicKey().bytes, input: Data(),
                signature: signature, outputCapacity: blockSize, identifier: identifier)
            valid = recovered.map { Data($0.drop(while: { $0 == 0 })) == data } ?? false
        case .rsaSignature(let padding, let hash, let message):
            let input = try rsaSignatureInput(data, hash, message, padding, identifier)
            do {
                _ = try SystemRSA.run(
                    .verify, padding.system, digest: hash, key: try publicKey().bytes, input: input,
                    signature: signature, outputCapacity: 0, identifier: identifier)
                valid = true
            } catch  where error.code == .verifyFailed || error.code == .invalidParameter {
                valid = false
            }
        default:
            valid = false
        }
        guard valid else {
            throw KeychainError(code: .verifyFailed, message: "The \(identifier) signature does not match the data and key.")
        }
    }

    /// `SecKeyCreateEncryptedData` (with the public key).
    package func encrypt(_ algorithm: KeyAlgorithm, identifier: String, _ plaintext: Data) throws(KeychainError) -> Data {
        try require(.encrypt, algorithm, identifier)
        do {
            switch algorithm {
            case .rsaEncryption(let padding, aesGCM: false):
                return try rsaEncrypt(padding, plaintext, identifier)
            case .rsaEncryption(let padding, aesGCM: true):
                // Apple's hybrid: a random AES key (256 bits for keys of 4096 bits or more, else 128) encrypted with
                // the padding, then AES-GCM under it with a zero nonce and the public key as associated data.
                let sessionKey = SymmetricKey(size: sizeInBits >= 4096 ? .bits256 : .bits128)
                let wrapped = try rsaEncrypt(padding, sessionKey.withUnsafeBytes { Data($0) }, identifier)
                let box = try AES.GCM.seal(
                    plaintext, using: sessionKey, nonce: try AES.GCM.Nonce(data: Data(count: 16)),
                    authenticating: bytes)
                return wrapped + box.ciphertext + box.tag
            case .ecies(_, let hash, let variableIV):
                let ops = try Curve(bits: sizeInBits).require().ops
                let ephemeral = ops.generate()
                let ephemeralPublic = ephemeral.prefix(ephemeral.count - (ephemeral.count - 1) / 3)
                let secret = try ops.sharedSecret(ephemeral, bytes)
                let (key, nonce) = try eciesKey(secret, hash, sharedInfo: ephemeralPublic, variableIV: variableIV)
                let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce)
                return ephemeralPublic + box.ciphertext + box.tag
            default:
                throw KeychainError(code: .invalidParameter, message: "Algorithm \(identifier) does not encrypt.")
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .invalidParameter, message: "Encrypting with \(identifier) failed: the plaintext may be too long for the key.", cause: error)
        }
    }

    /// `SecKeyCreateDecryptedData` (with the private key).
    package func decrypt(_ algorithm: KeyAlgorithm, identifier: String, _ ciphertext: Data) throws(KeychainError) -> Data {
        try require(.decrypt, algorithm, identifier)
        do {
            switch algorithm {
            case .rsaEncryption(let padding, aesGCM: false):
                return try SystemRSA.run(
                    .decrypt, padding.system, digest: padding.hash, key: bytes, input: ciphertext,
                    outputCapacity: blockSize, identifier: identifier)
            case .rsaEncryption(let padding, aesGCM: true):
                guard ciphertext.count >= blockSize + 16 else {
                    throw KeychainError(
                        code: .invalidParameter, message: "The \(identifier) ciphertext is too short: it starts with an encrypted key of \(blockSize) bytes and ends with a 16-byte tag.")
                }
                let sessionKey = try SystemRSA.run(
                    .decrypt, padding.system, digest: padding.hash, key: bytes,
                    input: Data(ciphertext.prefix(blockSize)), outputCapacity: blockSize, identifier: identifier)
                guard sessionKey.count == (sizeInBits >= 4096 ? 32 : 16) else {
                    throw KeychainError(code: .invalidParameter, message: "The \(identifier) ciphertext holds a key of the wrong size: it was not made for this key.")
                }
                let body = ciphertext.dropFirst(blockSize)
                let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: Data(count: 16)), ciphertext: body.dropLast(16), tag: body.suffix(16))
                return try AES.GCM.open(box, using: SymmetricKey(data: sessionKey), authenticating: try publicKey().bytes)
            case .ecies(_, let hash, let variableIV):
                let ops = try Curve(bits: sizeInBits).require().ops
                let pointLength = 1 + 2 * ops.coordinateBytes
                guard ciphertext.count >= pointLength + 16 else {
                    throw KeychainError(code: .invalidParameter, message: "The \(identifier) ciphertext is too short.")
                }
                let ephemeralPublic = Data(ciphertext.prefix(pointLength))
                let secret = try ops.sharedSecret(bytes, ephemeralPublic)
                let (key, nonce) = try eciesKey(secret, hash, sharedInfo: ephemeralPublic, variableIV: variableIV)
                let body = ciphertext.dropFirst(pointLength)
                let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: body.dropLast(16), tag: body.suffix(16))
                return try AES.GCM.open(box, using: key)
            default:
                throw KeychainError(code: .invalidParameter, message: "Algorithm \(identifier) does not decrypt.")
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .invalidParameter, message: "Decrypting with \(identifier) failed: the data was not encrypted for this key, or was changed.", cause: error)
        }
    }

    /// `SecKeyCopyKeyExchangeResult`: the raw ECDH secret, or with a KDF algorithm `requestedSize` bytes of ANSI
    /// X9.63 output over it and `sharedInfo`.
    package func keyExchange(
        _ algorithm: KeyAlgorithm, identifier: String, peer: KeyMaterial,
        requestedSize: Int?, sharedInfo: Data
    ) throws(KeychainError) -> Data {
        try require(.keyExchange, algorithm, identifier)
        guard case .ecdh(_, let kdf) = algorithm else {
            throw KeychainError(code: .invalidParameter, message: "Algorithm \(identifier) is not a key exchange.")
        }
        guard peer.type == .ec, peer.sizeInBits == sizeInBits else {
            throw KeychainError(code: .invalidParameter, message: "The other party's key must be an EC public key on the same curve.")
        }
        do {
            let secret = try Curve(bits: sizeInBits).require().ops.sharedSecret(bytes, try peer.publicKey().bytes)
            guard let kdf else { return secret.withUnsafeBytes { Data($0) } }
            guard let requestedSize, (1...1 << 16).contains(requestedSize) else {
                throw KeychainError(code: .invalidParameter, message: "\(identifier) needs kSecKeyKeyExchangeParameterRequestedSize (1 to 65536 bytes).")
            }
            return try kdf.x963(secret, sharedInfo: sharedInfo, outputByteCount: requestedSize).withUnsafeBytes { Data($0) }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .invalidParameter, message: "The key exchange with \(identifier) failed.", cause: error)
        }
    }

    // MARK: Helpers

    private func checkDigest(_ data: Data, _ hash: KeyHash?, _ identifier: String) throws(KeychainError) {
        guard let hash else { return }
        guard data.count == hash.byteCount else {
            throw KeychainError(code: .invalidParameter, message: "Bad digest size for signing with algorithm \(identifier): \(data.count) bytes, expected \(hash.byteCount).")
        }
    }

    /// What an RSA signature covers: the digest of a message (hashed here), a digest the caller computed (of the
    /// algorithm's length), or for raw RSA the input left-padded to the modulus length.
    private func rsaSignatureInput(
        _ data: Data, _ hash: KeyHash?, _ message: Bool, _ padding: RSASignaturePadding,
        _ identifier: String
    ) throws(KeychainError) -> Data {
        if message, let hash { return try hash.digest(data) }
        try checkDigest(data, hash, identifier)
        guard padding == .none else { return data }
        guard data.count <= blockSize else {
            throw KeychainError(code: .invalidParameter, message: "\(identifier) signs at most \(blockSize) bytes with this key; got \(data.count).")
        }
        return Data(count: blockSize - data.count) + data
    }

    /// RSA encryption with the public key (raw input left-padded to the modulus length).
    private func rsaEncrypt(_ padding: RSAEncryptionPadding, _ plaintext: Data, _ identifier: String) throws(KeychainError) -> Data {
        var input = plaintext
        if padding == .none {
            guard plaintext.count <= blockSize else {
                throw KeychainError(code: .invalidParameter, message: "\(identifier) encrypts at most \(blockSize) bytes with this key; got \(plaintext.count).")
            }
            input = Data(count: blockSize - plaintext.count) + plaintext
        }
        return try SystemRSA.run(
            .encrypt, padding.system, digest: padding.hash, key: try publicKey().bytes, input: input,
            outputCapacity: blockSize, identifier: identifier)
    }

    private func rsaPrivate() throws(KeychainError) -> _RSA.Signing.PrivateKey {
        do { return try _RSA.Signing.PrivateKey(derRepresentation: bytes) } catch {
            throw KeychainError(code: .corruptData, message: "A stored RSA private key does not parse.", cause: error)
        }
    }

    /// Apple's ECIES key schedule: X9.63 KDF over the shared secret and the ephemeral public key, giving an AES key
    /// (16 bytes for keys up to 256 bits, else 32) and, with a variable IV, a 16-byte nonce after it.
    private func eciesKey(_ secret: SharedSecret, _ hash: KeyHash, sharedInfo: Data, variableIV: Bool) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let keyLength = sizeInBits <= 256 ? 16 : 32
        let material = try hash.x963(secret, sharedInfo: sharedInfo, outputByteCount: keyLength + (variableIV ? 16 : 0))
            .withUnsafeBytes { Data($0) }
        let nonce = variableIV ? material.suffix(16) : Data(count: 16)
        return (SymmetricKey(data: material.prefix(keyLength)), try AES.GCM.Nonce(data: nonce))
    }
}

extension Optional where Wrapped == Curve {
    /// The curve of a key whose size was checked when it was made.
    fileprivate func require() throws(KeychainError) -> Curve {
        guard let self else { throw KeychainError(code: .internal, message: "An EC key of an unknown size reached an EC operation.") }
        return self
    }
}

/// The NIST curves swift-crypto implements.
enum Curve: Sendable {
    case p256, p384, p521

    init?(bits: Int) {
        switch bits {
        case 256: self = .p256
        case 384: self = .p384
        case 521: self = .p521
        default: return nil
        }
    }

    init?(coordinateBytes: Int) {
        switch coordinateBytes {
        case 32: self = .p256
        case 48: self = .p384
        case 66: self = .p521
        default: return nil
        }
    }

    var bits: Int {
        switch self {
        case .p256: 256
        case .p384: 384
        case .p521: 521
        }
    }

    var ops: any CurveOperations {
        switch self {
        case .p256: NISTCurve<P256.Signing.PrivateKey, P256.KeyAgreement.PrivateKey>(coordinateBytes: 32)
        case .p384: NISTCurve<P384.Signing.PrivateKey, P384.KeyAgreement.PrivateKey>(coordinateBytes: 48)
        case .p521: NISTCurve<P521.Signing.PrivateKey, P521.KeyAgreement.PrivateKey>(coordinateBytes: 66)
        }
    }
}

/// The operations each curve's swift-crypto types give, over X9.63 bytes, so the key code is written once.
protocol CurveOperations {
    var coordinateBytes: Int { get }
    func generate() -> Data
    func x963(fromDER der: Data) throws -> Data
    func x963(fromPublicDER der: Data) throws -> Data
    func publicPEM(fromX963 x963: Data) throws -> String
    func privateDER(fromX963 x963: Data) throws -> Data
    func validate(_ x963: Data, privateKey: Bool) throws
    func sign(_ privateX963: Data, digest: Data, raw: Bool) throws -> Data
    func verify(_ x963: Data, digest: Data, signature: Data, raw: Bool) -> Bool
    func sharedSecret(_ privateX963: Data, _ publicX963: Data) throws -> SharedSecret
}

/// A digest the caller computed, signed as its bytes.
struct CallerDigest: Digest {
    static var byteCount: Int { 0 }
    let bytes: [UInt8]
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
    func makeIterator() -> [UInt8].Iterator { bytes.makeIterator() }
    var description: String { "CallerDigest(\(bytes.count) bytes)" }
}

/// swift-crypto's NIST curves (P-256, P-384, P-521) give each curve its own key types with the same shape; these
/// protocols name that shape so the curve operations are written once, in ``NISTCurve``.
protocol ECSignatureRepresentable {
    init(rawRepresentation: Data) throws
    init(derRepresentation: Data) throws
    var rawRepresentation: Data { get }
    var derRepresentation: Data { get }
}

protocol ECSigningPublicKey {
    associatedtype Signature: ECSignatureRepresentable
    init(x963Representation: Data) throws
    init(derRepresentation: Data) throws
    var x963Representation: Data { get }
    var pemRepresentation: String { get }
    func isValidSignature<D: Digest>(_ signature: Signature, for digest: D) -> Bool
}

protocol ECSigningPrivateKey {
    associatedtype PublicKey: ECSigningPublicKey
    init(compactRepresentable: Bool)
    init(x963Representation: Data) throws
    init(derRepresentation: Data) throws
    var x963Representation: Data { get }
    var derRepresentation: Data { get }
    var publicKey: PublicKey { get }
    func signature<D: Digest>(for digest: D) throws -> PublicKey.Signature
}

protocol ECAgreementPublicKey {
    init(x963Representation: Data) throws
}

protocol ECAgreementPrivateKey {
    associatedtype PublicKey: ECAgreementPublicKey
    init(x963Representation: Data) throws
    func sharedSecretFromKeyAgreement(with publicKeyShare: PublicKey) throws -> SharedSecret
}

/// A curve, by its swift-crypto key types: every operation of ``CurveOperations`` follows from them.
struct NISTCurve<SigningKey: ECSigningPrivateKey, AgreementKey: ECAgreementPrivateKey>: CurveOperations {
    /// The length of one coordinate (and of the private scalar) in bytes.
    let coordinateBytes: Int

    func generate() -> Data { SigningKey(compactRepresentable: true).x963Representation }
    func x963(fromDER der: Data) throws -> Data { try SigningKey(derRepresentation: der).x963Representation }
    func x963(fromPublicDER der: Data) throws -> Data { try SigningKey.PublicKey(derRepresentation: der).x963Representation }
    func publicPEM(fromX963 x963: Data) throws -> String { try SigningKey.PublicKey(x963Representation: x963).pemRepresentation }
    func privateDER(fromX963 x963: Data) throws -> Data { try SigningKey(x963Representation: x963).derRepresentation }
    func validate(_ x963: Data, privateKey: Bool) throws {
        if privateKey { _ = try SigningKey(x963Representation: x963) } else { _ = try SigningKey.PublicKey(x963Representation: x963) }
    }
    func sign(_ privateX963: Data, digest: Data, raw: Bool) throws -> Data {
        let signature = try SigningKey(x963Representation: privateX963).signature(for: CallerDigest(bytes: Array(digest)))
        return raw ? signature.rawRepresentation : signature.derRepresentation
    }
    func verify(_ x963: Data, digest: Data, signature: Data, raw: Bool) -> Bool {
        typealias Signature = SigningKey.PublicKey.Signature
        guard let parsed = try? (raw ? Signature(rawRepresentation: signature) : Signature(derRepresentation: signature)) else { return false }
        guard let key = try? SigningKey.PublicKey(x963Representation: x963.prefix(1 + 2 * coordinateBytes)) else { return false }
        return key.isValidSignature(parsed, for: CallerDigest(bytes: Array(digest)))
    }
    func sharedSecret(_ privateX963: Data, _ publicX963: Data) throws -> SharedSecret {
        try AgreementKey(x963Representation: privateX963).sharedSecretFromKeyAgreement(with: AgreementKey.PublicKey(x963Representation: publicX963))
    }
}

// swift-crypto's key types, each with the shape the protocols above name.
extension P256.Signing.ECDSASignature: ECSignatureRepresentable {}
extension P256.Signing.PublicKey: ECSigningPublicKey {}
extension P256.Signing.PrivateKey: ECSigningPrivateKey {}
extension P256.KeyAgreement.PublicKey: ECAgreementPublicKey {}
extension P256.KeyAgreement.PrivateKey: ECAgreementPrivateKey {}
extension P384.Signing.ECDSASignature: ECSignatureRepresentable {}
extension P384.Signing.PublicKey: ECSigningPublicKey {}
extension P384.Signing.PrivateKey: ECSigningPrivateKey {}
extension P384.KeyAgreement.PublicKey: ECAgreementPublicKey {}
extension P384.KeyAgreement.PrivateKey: ECAgreementPrivateKey {}
extension P521.Signing.ECDSASignature: ECSignatureRepresentable {}
extension P521.Signing.PublicKey: ECSigningPublicKey {}
extension P521.Signing.PrivateKey: ECSigningPrivateKey {}
extension P521.KeyAgreement.PublicKey: ECAgreementPublicKey {}
extension P521.KeyAgreement.PrivateKey: ECAgreementPrivateKey {}

extension RSASignaturePadding {
    /// OpenSSL's padding mode.
    var system: SystemRSA.Padding {
        switch self {
        case .none: .none
        case .pkcs1v15: .pkcs1
        case .pss: .pss
        }
    }
}

extension RSAEncryptionPadding {
    /// OpenSSL's padding mode.
    var system: SystemRSA.Padding {
        switch self {
        case .none: .none
        case .pkcs1: .pkcs1
        case .oaep: .oaep
        }
    }

    /// OAEP's hash.
    var hash: KeyHash? {
        if case .oaep(let hash) = self { return hash }
        return nil
    }
}

extension KeyHash {
    /// The digest of `data` (SHA-224 by the system's libcrypto, which swift-crypto lacks).
    func digest(_ data: Data) throws(KeychainError) -> Data {
        switch self {
        case .sha1: Data(Insecure.SHA1.hash(data: data))
        case .sha224: try SystemRSA.digest(.sha224, data)
        case .sha256: Data(SHA256.hash(data: data))
        case .sha384: Data(SHA384.hash(data: data))
        case .sha512: Data(SHA512.hash(data: data))
        }
    }

    /// ANSI X9.63 KDF output over a shared secret: the digests of secret ‖ counter (32-bit big-endian, from 1) ‖
    /// shared info, concatenated and cut to `outputByteCount`.
    func x963(_ secret: SharedSecret, sharedInfo: Data, outputByteCount: Int) throws(KeychainError) -> SymmetricKey {
        let z = secret.withUnsafeBytes { Data($0) }
        var output = Data()
        var counter: UInt32 = 1
        while output.count < outputByteCount {
            output += try digest(z + withUnsafeBytes(of: counter.bigEndian) { Data($0) } + sharedInfo)
            counter += 1
        }
        return SymmetricKey(data: output.prefix(outputByteCount))
    }
}
