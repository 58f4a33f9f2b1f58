import CKeychainPKCS12
import Crypto
import CryptoExtras
import Foundation
@testable import KeychainSecretService
@testable import KeychainSecretServiceClient
import Testing

/// RFC 2409 section 6.2's prime, as the RFC prints it (independent of the table in OakleyGroup2).
let rfc2409Prime =
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF"

/// A hex fixture that does not parse.
struct BadHex: Error {
    /// The text.
    let text: String
}

/// The bytes a hex string spells.
func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { throw BadHex(text: text) }
    var bytes = [UInt8]()
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
            throw BadHex(text: text)
        }
        bytes.append(byte)
    }
    return bytes
}

/// Lower-case hex of `bytes`.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// The raw bytes of a key.
func keyBytes(_ key: SymmetricKey?) -> [UInt8]? {
    key?.withUnsafeBytes { Array($0) }
}

/// A client's side of the exchange written from the specification, sharing only the C exponentiation with the service.
struct SpecificationClient {
    /// Why the client's exponentiation failed.
    struct Failure: Error {
        /// ckeychain_dh_modexp's text.
        let reason: String
    }

    /// The client's private exponent (128 random bytes, as secretstorage draws it).
    let exponent: [UInt8]
    /// 2^exponent mod p, with its leading zero bytes stripped as libsecret and secretstorage send it.
    let publicKey: [UInt8]

    init(exponent: [UInt8]) throws {
        self.exponent = exponent
        publicKey = Array(try Self.power([2], exponent).drop { $0 == 0 })
    }

    init() throws {
        var generator = SystemRandomNumberGenerator()
        try self.init(exponent: (0..<128).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// base^exponent mod p, 128 bytes.
    static func power(_ base: [UInt8], _ exponent: [UInt8]) throws -> [UInt8] {
        let prime = try hexBytes(rfc2409Prime)
        var out = [UInt8](repeating: 0, count: prime.count)
        var error = [CChar](repeating: 0, count: 256)
        let status = ckeychain_dh_modexp(base, base.count, exponent, exponent.count, prime, prime.count, &out, &error, error.count)
        guard status == 0 else { throw Failure(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        return out
    }

    /// The shared secret with the server's public key (128 bytes, left-padded).
    func sharedSecret(serverPublicKey: [UInt8]) throws -> [UInt8] {
        try Self.power(serverPublicKey, exponent)
    }

    /// The AES-128 key: HKDF-SHA256, empty salt and info, over the padded shared secret.
    func key(serverPublicKey: [UInt8]) throws -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: try sharedSecret(serverPublicKey: serverPublicKey)), outputByteCount: 16)
    }
}

/// A vector found by search (a one-off script with Python's `cryptography`): client and server exponents whose shared
/// secret begins with a zero byte, so a server that strips it derives `keyWithoutPadding` and fails with every client.
enum LeadingZeroVector {
    static let clientExponent = "da1c4ec9110e3083d281abdd79151dc1676ffe0627265a0ac48da867a9790187"
    static let serverExponent = "054e52cd3ed674e5bfa936ec87a986d5c1dc12fdc4b0635f634efec7d9677d8e"
    static let clientPublicKey =
        "e45b214d2f03d6690da37836d2d12117460b61f7d32cb3cd3d28e53a24ac1eae8f80f1d96137216076b3bc989d19adc989b158b64b811ab74038c1443302d3c5c462c3b346c8ffa40528792b139687140a0a579bee5c11ca91560c4fb1e0d281f0b3a4cee7605098801b6d766738ffce4d25b97b5ea1cc47cf8058eddae56cf0"
    static let serverPublicKey =
        "d1fac62870f28db85bf051eea3a444017423c58f9357e1db813e8dd95390c7a81b4c5ed20782b210093f8abd5a4355fd22c5f44ce6a963d60086ac6266090afb071a6ef1a9df6c3780fbf5996583c535ebe324c431424167717eaabdd1a9d4f1ffa127b78c2052fc2723f7991f98c08fcc1b264e0e64fb317718c9ed3fe7773b"
    static let sharedSecret =
        "00bd8690530e108b57544b54a7ddd7863015c68461ce70ad1e4b58753f974750c81c3f49d5ebc0ba467706d3955d4bbd316a0664f3441271b269f1b240de48b4c9d06764233e6fa692a42f65322e15edf8eeaea33c9b22e12c33637ee213e4eda65e553c681f0f815bccbe9a9e233213b720f2edbbe4c5a75f1e7600460ec9dd"
    static let aesKey = "ef94b1ce9b3848711a83a2ff08e25a01"
    static let keyWithoutPadding = "89c4b3b4e61435682c049a1de506323d"
    static let iv = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
    static let plaintext = "correct horse battery staple"
    static let ciphertext = "86f2bee5d1abeffc305c0fcdd350814ee7f75a7cee569029aa2ff9d507285e5a"
}

/// Opens a `dh-ietf1024-sha256-aes128-cbc-pkcs7` session for a client public key.
func openDH(_ clientPublicKey: [UInt8]) throws -> (SecretSessionCrypto, output: [UInt8]) {
    try SecretSessionCrypto.open(algorithm: .dhIETF1024SHA256AES128CBCPKCS7, input: clientPublicKey)
}

@Suite struct SecretTransferTests {
    @Test func theGroupIsRFC2409sSecondOakleyGroup() throws {
        #expect(OakleyGroup2.prime == (try hexBytes(rfc2409Prime)))
        #expect(OakleyGroup2.primeMinusOne.last == 0xFE)
        #expect(OakleyGroup2.primeMinusOne.dropLast() == OakleyGroup2.prime.dropLast())
    }

    @Test func algorithmNamesAreTheSpecificationsAndExact() throws {
        #expect(SecretTransferAlgorithm(rawValue: "plain") == .plain)
        #expect(SecretTransferAlgorithm(rawValue: "dh-ietf1024-sha256-aes128-cbc-pkcs7") == .dhIETF1024SHA256AES128CBCPKCS7)
        for name in ["PLAIN", "dh-ietf1024-sha256-aes128-cbc-pkcs7 ", "dh-ietf2048-sha256-aes128-cbc-pkcs7", ""] {
            #expect(throws: SecretTransferError.unsupportedAlgorithm(name)) {
                try SecretSessionCrypto.open(algorithm: name, input: [])
            }
        }
        let error = SecretTransferError.unsupportedAlgorithm("dh-ietf2048-sha256-aes128-cbc-pkcs7")
        #expect(error.dbusErrorName == "org.freedesktop.DBus.Error.NotSupported")
        #expect(error.message.contains("'dh-ietf2048-sha256-aes128-cbc-pkcs7' is not supported"))
    }

    @Test func plainPassesSecretsAsTheyAre() throws {
        let (session, output) = try SecretSessionCrypto.open(algorithm: "plain", input: nil)
        #expect(output.isEmpty)
        #expect(session.algorithm == .plain)
        let sealed = try session.seal(Array("hunter2".utf8))
        #expect(sealed.parameters.isEmpty)
        #expect(sealed.value == Array("hunter2".utf8))
        #expect(try session.open(parameters: [], value: [0, 1, 2]) == [0, 1, 2])
        #expect(try session.open(parameters: [], value: []) == [])
        #expect(throws: SecretTransferError.malformedParameters(algorithm: .plain, byteCount: 16)) {
            try session.open(parameters: [UInt8](repeating: 0, count: 16), value: [1])
        }
    }

    @Test func aClientWrittenFromTheSpecificationExchangesSecrets() throws {
        for _ in 0..<8 {
            let client = try SpecificationClient()
            let (server, serverPublicKey) = try openDH(client.publicKey)
            #expect(server.algorithm == .dhIETF1024SHA256AES128CBCPKCS7)
            #expect(serverPublicKey.count == 128)
            let key = try client.key(serverPublicKey: serverPublicKey)
            #expect(keyBytes(server.key) == keyBytes(key))

            for length in [0, 1, 15, 16, 17, 100] {
                let secret = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
                // Client → service.
                let iv = AES._CBC.IV()
                let value = try AES._CBC.encrypt(secret, using: key, iv: iv)
                #expect(try server.open(parameters: Array(iv), value: Array(value)) == secret)
                // Service → client.
                let sealed = try server.seal(secret)
                #expect(sealed.parameters.count == 16)
                #expect(sealed.value.count == (length / 16 + 1) * 16)
                let opened = try AES._CBC.decrypt(sealed.value, using: key, iv: AES._CBC.IV(ivBytes: sealed.parameters))
                #expect(Array(opened) == secret)
            }
            // A fresh IV for every secret.
            #expect(try server.seal([1]).parameters != server.seal([1]).parameters)
        }
    }

    @Test func eachSessionDrawsAFreshPrivateExponent() throws {
        let client = try SpecificationClient()
        let (first, firstOutput) = try openDH(client.publicKey)
        let (second, secondOutput) = try openDH(client.publicKey)
        #expect(firstOutput != secondOutput)
        #expect(keyBytes(first.key) != keyBytes(second.key))
        let exponent = OakleyGroup2.randomPrivateExponent()
        #expect(exponent.count == 32)
        #expect(OakleyGroup2.isAboveOne(exponent))
    }

    @Test func aSharedSecretWhoseFirstByteIsZeroIsPaddedBeforeHKDF() throws {
        typealias V = LeadingZeroVector
        let (server, output) = try SecretSessionCrypto.openDiffieHellman(
            clientPublicKey: try hexBytes(V.clientPublicKey), privateExponent: try hexBytes(V.serverExponent))
        #expect(hex(output) == V.serverPublicKey)

        // The client's side of the same exchange.
        let client = try SpecificationClient(exponent: try hexBytes(V.clientExponent))
        #expect(hex(OakleyGroup2.leftPadded(client.publicKey)) == V.clientPublicKey)
        let shared = try client.sharedSecret(serverPublicKey: output)
        #expect(hex(shared) == V.sharedSecret)
        #expect(shared.first == 0)

        #expect(hex(keyBytes(server.key) ?? []) == V.aesKey)
        #expect(hex(keyBytes(SecretSessionCrypto.aesKey(sharedSecret: Array(shared.dropFirst()))) ?? []) == V.aesKey)
        // What a server that strips the zero byte derives, and so what this vector guards against.
        let stripped = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: shared.dropFirst()), outputByteCount: 16)
        #expect(hex(keyBytes(stripped) ?? []) == V.keyWithoutPadding)

        let sealed = try server.seal(Array(V.plaintext.utf8), iv: AES._CBC.IV(ivBytes: try hexBytes(V.iv)))
        #expect(hex(sealed.parameters) == V.iv)
        #expect(hex(sealed.value) == V.ciphertext)
        #expect(try server.open(parameters: try hexBytes(V.iv), value: try hexBytes(V.ciphertext)) == Array(V.plaintext.utf8))

        // The client key with its leading zeros, or with more than 128 bytes of them, is the same key.
        let padded = [UInt8](repeating: 0, count: 5) + (try hexBytes(V.clientPublicKey))
        let (again, _) = try SecretSessionCrypto.openDiffieHellman(clientPublicKey: padded, privateExponent: try hexBytes(V.serverExponent))
        #expect(hex(keyBytes(again.key) ?? []) == V.aesKey)
    }

    @Test func publicKeysOutsideTwoToPMinusTwoAreRefused() throws {
        let prime = try hexBytes(rfc2409Prime)
        let primeMinusOne = Array(prime.dropLast()) + [0xFE]
        var abovePrime = prime
        abovePrime[8] += 1
        let outOfRange: [[UInt8]] = [
            [], [0], [0, 0, 0], [1], [0, 1], [UInt8](repeating: 0, count: 127) + [1],
            primeMinusOne, [0, 0] + primeMinusOne, prime, [0] + prime, abovePrime, [UInt8](repeating: 0xFF, count: 128),
        ]
        for key in outOfRange {
            #expect(throws: SecretTransferError.invalidPublicKey(.outOfRange), "\(hex(key))") { try openDH(key) }
        }
        #expect(throws: SecretTransferError.invalidPublicKey(.tooLong(byteCount: 129))) { try openDH([1] + prime) }
        #expect(throws: SecretTransferError.invalidPublicKey(.tooLong(byteCount: 129))) { try openDH([0, 0, 1] + [UInt8](repeating: 0, count: 128)) }
        #expect(throws: SecretTransferError.invalidPublicKey(.tooLong(byteCount: 200))) { try openDH([UInt8](repeating: 2, count: 200)) }
        #expect(throws: SecretTransferError.invalidPublicKey(.missing)) {
            try SecretSessionCrypto.open(algorithm: "dh-ietf1024-sha256-aes128-cbc-pkcs7", input: nil)
        }
        // The edges that are allowed: 2 and p − 2.
        #expect(throws: Never.self) { try openDH([2]) }
        #expect(throws: Never.self) { try openDH(Array(prime.dropLast()) + [0xFD]) }

        for error in [SecretTransferError.invalidPublicKey(.outOfRange), .invalidPublicKey(.tooLong(byteCount: 129)), .invalidPublicKey(.missing)] {
            #expect(error.dbusErrorName == "org.freedesktop.DBus.Error.InvalidArgs")
        }
    }

    @Test func malformedSecretsAreRefusedWithTheirOwnError() throws {
        let client = try SpecificationClient()
        let (server, output) = try openDH(client.publicKey)
        let key = try client.key(serverPublicKey: output)
        let iv = [UInt8](repeating: 7, count: 16)
        let good = Array(try AES._CBC.encrypt(Array("secret".utf8), using: key, iv: AES._CBC.IV(ivBytes: iv)))
        #expect(try server.open(parameters: iv, value: good) == Array("secret".utf8))

        for length in [0, 8, 15, 17, 32] {
            #expect(throws: SecretTransferError.malformedParameters(algorithm: .dhIETF1024SHA256AES128CBCPKCS7, byteCount: length)) {
                try server.open(parameters: [UInt8](repeating: 7, count: length), value: good)
            }
        }
        for length in [0, 1, 15, 17, 31, 33] {
            #expect(throws: SecretTransferError.malformedCiphertext(byteCount: length)) {
                try server.open(parameters: iv, value: [UInt8](repeating: 0x42, count: length))
            }
        }
        // A block under the right key whose last byte is not valid padding (0 and 17 are never valid).
        for last: UInt8 in [0, 17, 0xFF] {
            let block = Array(try AES._CBC.encrypt([UInt8](repeating: 3, count: 15) + [last], using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
            #expect(throws: SecretTransferError.badPadding) { try server.open(parameters: iv, value: block) }
        }
        // Inconsistent padding bytes: …, 1, 2 claims two bytes of 2.
        let inconsistent = Array(try AES._CBC.encrypt([UInt8](repeating: 9, count: 14) + [1, 2], using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        #expect(throws: SecretTransferError.badPadding) { try server.open(parameters: iv, value: inconsistent) }
        // Another session's key (almost always bad padding; a wrong key can decrypt to valid padding one time in ~256).
        let other = try SpecificationClient()
        let (_, otherOutput) = try openDH(other.publicKey)
        let otherKey = try other.key(serverPublicKey: otherOutput)
        let foreign = Array(try AES._CBC.encrypt([UInt8](repeating: 1, count: 16), using: otherKey, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        let lastByte = try AES._CBC.decrypt(foreign, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true).last
        if lastByte != 1 {
            #expect(throws: SecretTransferError.badPadding) { try server.open(parameters: iv, value: foreign) }
        }

        for error in [
            SecretTransferError.malformedParameters(algorithm: .dhIETF1024SHA256AES128CBCPKCS7, byteCount: 8), .malformedCiphertext(byteCount: 15), .badPadding, .cryptoLibraryUnavailable("x"),
        ] {
            #expect(error.dbusErrorName == "org.freedesktop.DBus.Error.InvalidArgs")
        }
        #expect(SecretTransferError.cryptoFailed("x").dbusErrorName == "org.freedesktop.DBus.Error.Failed")
    }

    @Test func theExponentiationChecksItsModulus() throws {
        #expect(throws: SecretTransferError.cryptoFailed("the modulus is even")) {
            try OakleyGroup2.modularPower(base: [2], exponent: [3], modulus: [10])
        }
        #expect(throws: SecretTransferError.cryptoFailed("an operand is too long, or the modulus is empty")) {
            try OakleyGroup2.modularPower(base: [2], exponent: [3], modulus: [])
        }
        #expect(try OakleyGroup2.modularPower(base: [3], exponent: [5], modulus: [0, 101]) == [0, 243 % 101])
    }
}
