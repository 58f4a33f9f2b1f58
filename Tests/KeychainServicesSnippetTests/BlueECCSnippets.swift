// BlueECC snippets
// Project: Kitura/BlueECC — https://github.com/Kitura/BlueECC
// Read at commit e5faf7ce81c762ed8e266e35ad6c00cc5bfccf52
// (Sources/CryptorECC/ECPrivateKey.swift, ECPublicKey.swift, ECSignable.swift, ECSignature.swift,
//  ECEncryptable.swift, ECDecryptable.swift, EllipticCurve.swift).
// BlueECC itself uses OpenSSL under `#if os(Linux)`; these snippets reproduce its Apple (`#else`) branch.
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - `[NSObject: Any]` parameters with kSecAttrKeyTypeECSECPrimeRandom + kSecAttrKeySizeInBits (256 / 384), no
//     kSecAttrIsPermanent (so nothing may be stored in the keychain)
//   - `guard let privKey = SecKeyCreateRandomKey(…), let pubKey = SecKeyCopyPublicKey(privKey) else { error?.takeRetainedValue() }`
//   - reusing the same `error` variable (`error = nil`) before SecKeyCopyExternalRepresentation
//   - private external representation 04‖X‖Y‖K split with `dropFirst(keySize)` / `dropLast(count - keySize)`
//   - SecKeyCreateWithData with a dictionary literal cast directly: `[kSecAttrKeyType: …, kSecAttrKeyClass: …] as CFDictionary`
//   - `throw secError` where secError is the CFError from `takeRetainedValue()`
//   - SecKeyCreateSignature / SecKeyVerifySignature with .ecdsaSignatureDigestX962SHA256 / SHA384 over a digest
//     (the project hashes with CommonCrypto first; here the digest is given)
//   - SecKeyCreateEncryptedData / SecKeyCreateDecryptedData with .eciesEncryptionStandardVariableIVX963SHA256AESGCM

import Foundation
import KeychainServices
import Testing

enum BlueECCLikeError: Error { case failedNativeKeyCreation, failedSigningAlgorithm, failedEncryptionAlgorithm, failedDecryptionAlgorithm }

// Shape: Kitura/BlueECC Sources/CryptorECC/EllipticCurve.swift — EllipticCurve.p256 / p384 (Apple branch)
struct BlueECCLikeCurve {
    let signingAlgorithm: SecKeyAlgorithm
    let encryptionAlgorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
    let keySize: Int
    let bits: Int
    static var p256: BlueECCLikeCurve { BlueECCLikeCurve(signingAlgorithm: .ecdsaSignatureDigestX962SHA256, keySize: 65, bits: 256) }
    static var p384: BlueECCLikeCurve { BlueECCLikeCurve(signingAlgorithm: .ecdsaSignatureDigestX962SHA384, keySize: 97, bits: 384) }
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECPrivateKey.swift — ECPrivateKey.init(for:) (private; reached via ECPrivateKey.make(for:), Apple branch)
func blueECCMakeKey(curve: BlueECCLikeCurve) throws -> (nativeKey: SecKey, pubKeyBytes: Data) {
    let parameters: [NSObject: Any] = [
        kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits: curve.bits,
    ]
    var error: Unmanaged<CFError>?
    guard let privKey = SecKeyCreateRandomKey(parameters as CFDictionary, &error),
        let pubKey = SecKeyCopyPublicKey(privKey)
    else {
        guard let error = error?.takeRetainedValue() else { throw BlueECCLikeError.failedNativeKeyCreation }
        throw error
    }
    error = nil
    guard let pubBytes = SecKeyCopyExternalRepresentation(pubKey, &error) else {
        guard let error = error?.takeRetainedValue() else { throw BlueECCLikeError.failedNativeKeyCreation }
        throw error
    }
    return (privKey, pubBytes as Data)
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECPrivateKey.swift — ECPrivateKey.decodeToPEM(nativeKey:curve:) (Apple branch, up to the ASN.1 step)
func blueECCSplitPrivateKey(nativeKey: SecKey, curve: BlueECCLikeCurve) throws -> (privateKeyData: Data, publicKeyData: Data) {
    var error: Unmanaged<CFError>? = nil
    guard let keyBytes = SecKeyCopyExternalRepresentation(nativeKey, &error) else {
        guard let error = error?.takeRetainedValue() else { throw BlueECCLikeError.failedNativeKeyCreation }
        throw error
    }
    let keyData = keyBytes as Data
    let privateKeyData = keyData.dropFirst(curve.keySize)
    let publicKeyData = Data(count: 1) + keyData.dropLast(keyData.count - curve.keySize)
    return (Data(privateKeyData), publicKeyData)
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECPrivateKey.swift — ECPrivateKey.bytesToNativeKey(privateKeyData:publicKeyData:curve:) (Apple branch)
func blueECCBytesToNativeKey(privateKeyData: Data, publicKeyData: Data) throws -> SecKey {
    let keyData = publicKeyData + privateKeyData
    var error: Unmanaged<CFError>? = nil
    guard
        let secKey = SecKeyCreateWithData(
            keyData as CFData,
            [
                kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeyClass: kSecAttrKeyClassPrivate,
            ] as CFDictionary,
            &error)
    else {
        if let secError = error?.takeRetainedValue() { throw secError }
        throw BlueECCLikeError.failedNativeKeyCreation
    }
    return secKey
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECPublicKey.swift — ECPublicKey.init(der:) (native-key creation, Apple branch)
func blueECCPublicKey(keyData: Data) throws -> SecKey {
    var error: Unmanaged<CFError>? = nil
    guard
        let secKey = SecKeyCreateWithData(
            keyData as CFData,
            [
                kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeyClass: kSecAttrKeyClassPublic,
            ] as CFDictionary,
            &error)
    else {
        if let secError = error?.takeRetainedValue() { throw secError }
        throw BlueECCLikeError.failedNativeKeyCreation
    }
    return secKey
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECSignable.swift — extension Data: ECSignable, sign(with:) (Apple branch)
func blueECCSign(digest hash: Data, with key: SecKey, curve: BlueECCLikeCurve) throws -> Data {
    var error: Unmanaged<CFError>? = nil
    guard let cfSignature = SecKeyCreateSignature(key, curve.signingAlgorithm, hash as CFData, &error) else {
        if let thrownError = error?.takeRetainedValue() { throw thrownError }
        throw BlueECCLikeError.failedSigningAlgorithm
    }
    return cfSignature as Data
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECSignature.swift — ECSignature.verify(plaintext: Data, using:) (Apple branch)
func blueECCVerify(digest hash: Data, asn1: Data, with publicKey: SecKey, curve: BlueECCLikeCurve) -> Bool {
    var error: Unmanaged<CFError>? = nil
    return SecKeyVerifySignature(publicKey, curve.signingAlgorithm, hash as CFData, asn1 as CFData, &error)
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECEncryptable.swift — extension Data: ECEncryptable, encrypt(with:) (Apple branch)
func blueECCEncrypt(_ plaintext: Data, with publicKey: SecKey, curve: BlueECCLikeCurve) throws -> Data {
    var error: Unmanaged<CFError>? = nil
    guard let eData = SecKeyCreateEncryptedData(publicKey, curve.encryptionAlgorithm, plaintext as CFData, &error) else {
        guard let error = error?.takeRetainedValue() else { throw BlueECCLikeError.failedEncryptionAlgorithm }
        throw error
    }
    return eData as Data
}

// Shape: Kitura/BlueECC Sources/CryptorECC/ECDecryptable.swift — extension Data, decrypt(with:) (Apple branch)
func blueECCDecrypt(_ ciphertext: Data, with privateKey: SecKey, curve: BlueECCLikeCurve) throws -> Data {
    var error: Unmanaged<CFError>? = nil
    guard let dData = SecKeyCreateDecryptedData(privateKey, curve.encryptionAlgorithm, ciphertext as CFData, &error) else {
        guard let error = error?.takeRetainedValue() else { throw BlueECCLikeError.failedDecryptionAlgorithm }
        throw error
    }
    return dData as Data
}

// MARK: - Tests

@Suite struct BlueECCSnippets {
    private func digest(_ count: Int, seed: UInt8 = 1) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: Int($0) &* 7 &+ Int(seed)) }) }

    @Test(arguments: Mode.allCases) func generatedKeyIsNotStored(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let (nativeKey, pubKeyBytes) = try blueECCMakeKey(curve: .p256)
            #expect(pubKeyBytes.count == 65)
            #expect(pubKeyBytes.first == 0x04)
            let attributes = try #require(SecKeyCopyAttributes(nativeKey) as? [String: Any])
            #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 256)
            // No kSecAttrIsPermanent: the key must not land in the keychain.
            #expect(SecItemCopyMatching([kSecClass as String: kSecClassKey] as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func privateKeyBytesRoundTrip(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let curve = BlueECCLikeCurve.p256
            let (nativeKey, pubKeyBytes) = try blueECCMakeKey(curve: curve)
            let (privateKeyData, publicKeyData) = try blueECCSplitPrivateKey(nativeKey: nativeKey, curve: curve)
            #expect(privateKeyData.count == 32)
            #expect(publicKeyData.count == 66 && publicKeyData.first == 0x00)
            #expect(publicKeyData.dropFirst() == pubKeyBytes)
            let rebuilt = try blueECCBytesToNativeKey(privateKeyData: privateKeyData, publicKeyData: Data(publicKeyData.dropFirst()))
            let rebuiltPublic = try #require(SecKeyCopyPublicKey(rebuilt))
            #expect(SecKeyCopyExternalRepresentation(rebuiltPublic, nil) as Data? == pubKeyBytes)
            #expect(throws: (any Error).self) { try blueECCPublicKey(keyData: Data([0x04, 0x01, 0x02])) }
        }
    }

    @Test(arguments: Mode.allCases) func signAndVerifyDigestP256(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let curve = BlueECCLikeCurve.p256
            let (nativeKey, pubKeyBytes) = try blueECCMakeKey(curve: curve)
            let publicKey = try blueECCPublicKey(keyData: pubKeyBytes)
            let hash = digest(32)
            let signature = try blueECCSign(digest: hash, with: nativeKey, curve: curve)
            #expect(signature.first == 0x30)  // DER SEQUENCE { r, s }
            #expect(blueECCVerify(digest: hash, asn1: signature, with: publicKey, curve: curve))
            #expect(blueECCVerify(digest: digest(32, seed: 2), asn1: signature, with: publicKey, curve: curve) == false)
            var error: Unmanaged<CFError>?
            #expect(SecKeyVerifySignature(publicKey, curve.signingAlgorithm, digest(32, seed: 2) as CFData, signature as CFData, &error) == false)
            let cfError = try #require(error?.takeRetainedValue())
            #expect(CFErrorGetCode(cfError) == Int(errSecVerifyFailed))
        }
    }

    @Test(arguments: Mode.allCases) func eciesRoundTrip(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let curve = BlueECCLikeCurve.p256
            let (nativeKey, pubKeyBytes) = try blueECCMakeKey(curve: curve)
            let publicKey = try blueECCPublicKey(keyData: pubKeyBytes)
            let plaintext = Data("attack at dawn".utf8)
            let ciphertext = try blueECCEncrypt(plaintext, with: publicKey, curve: curve)
            #expect(ciphertext.count == 65 + plaintext.count + 16)  // ephemeral key ‖ ciphertext ‖ GCM tag
            #expect(try blueECCDecrypt(ciphertext, with: nativeKey, curve: curve) == plaintext)
            var tampered = ciphertext
            tampered[tampered.count - 1] ^= 0xFF
            #expect(throws: (any Error).self) { try blueECCDecrypt(tampered, with: nativeKey, curve: curve) }
        }
    }

    @Test(arguments: Mode.allCases) func signAndVerifyDigestP384(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let curve = BlueECCLikeCurve.p384
            let (nativeKey, pubKeyBytes) = try blueECCMakeKey(curve: curve)
            #expect(pubKeyBytes.count == 97)
            let (privateKeyData, _) = try blueECCSplitPrivateKey(nativeKey: nativeKey, curve: curve)
            #expect(privateKeyData.count == 48)
            let publicKey = try blueECCPublicKey(keyData: pubKeyBytes)
            let signature = try blueECCSign(digest: digest(48), with: nativeKey, curve: curve)
            #expect(blueECCVerify(digest: digest(48), asn1: signature, with: publicKey, curve: curve))
        }
    }
}
