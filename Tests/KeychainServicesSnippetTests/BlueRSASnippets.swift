// BlueRSA snippets
// Project: Kitura/BlueRSA — https://github.com/Kitura/BlueRSA
// Read at commit f40325520344a966523b214394aa350132a6af68
// (Sources/CryptorRSA/CryptorRSAKey.swift, CryptorRSA.swift, CryptorRSAUtilities.swift, CryptorRSADigest.swift).
// BlueRSA itself uses OpenSSL under `#if os(Linux)`; these snippets reproduce its Apple (`#else`) branch, which is
// what an app written against Security does. Our own code, written in the project's shape (nothing copied).
// Shapes covered:
//   - `[NSObject: Any]` key-generation parameters with nested kSecPublicKeyAttrs / kSecPrivateKeyAttrs
//     `[kSecAttrIsPermanent: true]`, chosen by `#if targetEnvironment(simulator) … #else` (Linux compiles `#else`)
//   - SecKeyCreateRandomKey(parameters as CFDictionary, &error) + SecKeyCopyPublicKey in one `guard let … , let …`
//   - `var error: Unmanaged<CFError>? = nil`, `error?.takeRetainedValue()`, `if response != nil { throw }` after
//     SecKeyCreateEncryptedData / SecKeyCreateDecryptedData / SecKeyCreateSignature / SecKeyVerifySignature
//   - SecKeyCopyExternalRepresentation → `keyBytes as Data` → PEM; SecKeyCreateWithData with `[CFString: Any]`
//     (kSecAttrKeyType, kSecAttrKeyClass, kSecAttrKeySizeInBits as NSNumber — BlueRSA passes the *byte* count)
//   - algorithms .rsaEncryptionOAEPSHA1AESGCM, .rsaSignatureMessagePKCS1v15SHA256, .rsaSignatureMessagePSSSHA256
//   - certificate: SecCertificateCreateWithData(nil, data as CFData), then a `(SecCertificate) -> SecKey?` function
//     value set to SecCertificateCopyKey under `if #available(iOS 12.0, watchOS 5.0, *)`, else
//     SecCertificateCopyPublicKey (the non-macOS `#else` branch, compiled on Linux)

import Foundation
import KeychainServices
import Testing

struct BlueRSALikeError: Error {
    let reason: String
    var underlying: CFError? = nil
}

enum BlueRSALikeKeyType { case publicType, privateType }

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSAKey.swift — CryptorRSA.makeKeyPair(_:) (Apple branch)
func blueRSAMakeKeyPair(bits: Int) throws -> (privateKey: SecKey, publicKey: SecKey) {
    #if targetEnvironment(simulator)
    let publicKeyAttributes: [NSObject: Any] = [:]
    let privateKeyAttributes: [NSObject: Any] = [:]
    #else
    let publicKeyAttributes: [NSObject: Any] = [kSecAttrIsPermanent: true]
    let privateKeyAttributes: [NSObject: Any] = [kSecAttrIsPermanent: true]
    #endif
    let parameters: [NSObject: Any] = [
        kSecAttrKeyType: kSecAttrKeyTypeRSA,
        kSecAttrKeySizeInBits: bits,
        kSecPublicKeyAttrs: publicKeyAttributes,
        kSecPrivateKeyAttrs: privateKeyAttributes,
    ]
    var error: Unmanaged<CFError>?
    guard let privKey = SecKeyCreateRandomKey(parameters as CFDictionary, &error),
        let pubKey = SecKeyCopyPublicKey(privKey)
    else {
        throw BlueRSALikeError(reason: "Could not generate rsa pair for \(bits) bits", underlying: error?.takeRetainedValue())
    }
    return (privKey, pubKey)
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSAKey.swift — CryptorRSA.RSAKey.getPEMString(reference:type:) (+ CryptorRSAUtilities.swift convertDerToPem(from:type:))
func blueRSAPEMString(reference: SecKey, type: BlueRSALikeKeyType) throws -> String {
    var error: Unmanaged<CFError>? = nil
    guard let keyBytes = SecKeyCopyExternalRepresentation(reference, &error) else {
        guard let error = error?.takeRetainedValue() else { throw BlueRSALikeError(reason: "Couldn't read PEM String") }
        throw error
    }
    let base64 = (keyBytes as Data).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
    let body = base64.trimmingCharacters(in: .newlines)
    return type == .publicType
        ? "-----BEGIN RSA PUBLIC KEY-----\n" + body + "\n-----END RSA PUBLIC KEY-----"
        : "-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----"
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSAUtilities.swift — CryptorRSA.createKey(from:type:) (Apple branch)
func blueRSACreateKey(from keyData: Data, type: BlueRSALikeKeyType) throws -> SecKey {
    let keyClass = type == .publicType ? kSecAttrKeyClassPublic : kSecAttrKeyClassPrivate
    let sizeInBits = keyData.count * MemoryLayout<UInt8>.size
    let keyDict: [CFString: Any] = [
        kSecAttrKeyType: kSecAttrKeyTypeRSA,
        kSecAttrKeyClass: keyClass,
        kSecAttrKeySizeInBits: NSNumber(value: sizeInBits),
    ]
    guard let key = SecKeyCreateWithData(keyData as CFData, keyDict as CFDictionary, nil) else {
        throw BlueRSALikeError(reason: "Couldn't create key reference from key data")
    }
    return key
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSA.swift — CryptorRSA.RSAData.encrypted(with:algorithm:) (Apple branch)
func blueRSAEncrypted(_ data: Data, with key: SecKey, algorithm: SecKeyAlgorithm = .rsaEncryptionOAEPSHA1AESGCM) throws -> Data {
    var response: Unmanaged<CFError>? = nil
    let eData = SecKeyCreateEncryptedData(key, algorithm, data as CFData, &response)
    if response != nil {
        guard let error = response?.takeRetainedValue() else { throw BlueRSALikeError(reason: "Encryption failed.") }
        throw BlueRSALikeError(reason: "Encryption failed with error: \(error)", underlying: error)
    }
    return eData! as Data
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSA.swift — CryptorRSA.RSAData.decrypted(with:algorithm:) (Apple branch)
func blueRSADecrypted(_ data: Data, with key: SecKey, algorithm: SecKeyAlgorithm = .rsaEncryptionOAEPSHA1AESGCM) throws -> Data {
    var response: Unmanaged<CFError>? = nil
    let pData = SecKeyCreateDecryptedData(key, algorithm, data as CFData, &response)
    if response != nil {
        guard let error = response?.takeRetainedValue() else { throw BlueRSALikeError(reason: "Decryption failed.") }
        throw BlueRSALikeError(reason: "Decryption failed with error: \(error)", underlying: error)
    }
    return pData! as Data
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSA.swift — CryptorRSA.RSAData.signed(with:algorithm:usePSS:) (Apple branch)
func blueRSASigned(_ data: Data, with key: SecKey, usePSS: Bool = false) throws -> Data {
    let signingAlgorithm: SecKeyAlgorithm
    if usePSS, #available(macOS 10.13, iOS 11.0, watchOS 4.0, *) {
        signingAlgorithm = .rsaSignatureMessagePSSSHA256
    } else {
        signingAlgorithm = .rsaSignatureMessagePKCS1v15SHA256
    }
    var response: Unmanaged<CFError>? = nil
    let sData = SecKeyCreateSignature(key, signingAlgorithm, data as CFData, &response)
    if response != nil {
        guard let error = response?.takeRetainedValue() else { throw BlueRSALikeError(reason: "Signing failed.") }
        throw BlueRSALikeError(reason: "Signing failed with error: \(error)", underlying: error)
    }
    return sData! as Data
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSA.swift — CryptorRSA.RSAData.verify(with:signature:algorithm:usePSS:) (Apple branch)
func blueRSAVerify(_ data: Data, with key: SecKey, signature: Data, usePSS: Bool = false) throws -> Bool {
    let signingAlgorithm: SecKeyAlgorithm = usePSS ? .rsaSignatureMessagePSSSHA256 : .rsaSignatureMessagePKCS1v15SHA256
    var response: Unmanaged<CFError>? = nil
    let result = SecKeyVerifySignature(key, signingAlgorithm, data as CFData, signature as CFData, &response)
    if response != nil {
        guard let error = response?.takeRetainedValue() else { throw BlueRSALikeError(reason: "Signature verification failed.") }
        throw BlueRSALikeError(reason: "Signature verification failed with error: \(error)", underlying: error)
    }
    return result
}

// Shape: Kitura/BlueRSA Sources/CryptorRSA/CryptorRSAKey.swift — CryptorRSA.createPublicKey(extractingFrom:) (Apple, non-macOS branch)
func blueRSAPublicKey(extractingFrom data: Data) throws -> SecKey {
    guard let certData = SecCertificateCreateWithData(nil, data as CFData) else {
        throw BlueRSALikeError(reason: "Unable to create certificate from certificate data.")
    }
    var key: SecKey? = nil
    #if os(macOS)
    key = SecCertificateCopyKey(certData)
    #else
    let copyKey: (SecCertificate) -> SecKey?
    if #available(iOS 12.0, watchOS 5.0, *) {
        copyKey = SecCertificateCopyKey
    } else {
        copyKey = SecCertificateCopyPublicKey
    }
    key = copyKey(certData)
    #endif
    guard let createdKey = key else { throw BlueRSALikeError(reason: "Unable to extract public key from data.") }
    return createdKey
}

// MARK: - Tests

@Suite struct BlueRSASnippets {
    // Self-signed RSA-2048 test certificate (generated for this test with openssl; CN=swift-keychain snippet).
    static let certificateBase64 = """
        MIIDRzCCAi+gAwIBAgIUFCiX+JwX1wN7MLZQFYunnXpww30wDQYJKoZIhvcNAQELBQAwMzEfMB0GA1UEAwwWc3dpZnQta2V5Y2hh
        aW4gc25pcHBldDEQMA4GA1UECgwHRXhhbXBsZTAeFw0yNjExMjcyMzQ3MDlaFw0zNjExMjQyMzQ3MDlaMDMxHzAdBgNVBAMMFnN3
        aWZ0LWtleWNoYWluIHNuaXBwZXQxEDAOBgNVBAoMB0V4YW1wbGUwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCwfqVt
        +ruAEV/Ic9zW8xfbdbHdUivyoyHHPb0U+LLa2+Get7L5C1Oi1gbRa0ztM3fs8i5bKaUDemxevVnzpKrkcLEkqGCos0hAfxRDFaCO
        2UXEKD4bF1exTlaZ03LVZTVCJhkC7/bqxTFlCJ9DTFpmLvbkJGe847oRgblEDNxm52sWVMw761DFXJ3GVZg+cZvAc1ukhMOmJPma
        kCD5DdjZLoedpbn+PaT1t6ZzxcGInr62p8bAxaeXuCbPA5XTIQA50V1JW+sF+kzfA9ZvoqoLAzp0+oJvlyJeo414diT6KlcykdpW
        BlwCRm8tkmhgd5x7Ny9YtOraBaiSclJUpEA3AgMBAAGjUzBRMB0GA1UdDgQWBBRvLzc6oq0n7Fo9RjkbblJzt8ZnmDAfBgNVHSME
        GDAWgBRvLzc6oq0n7Fo9RjkbblJzt8ZnmDAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3DQEBCwUAA4IBAQBWCBu+jHzIirNN5bm1
        Kss+QCINrg0Wfk3XXtYWkG9cpoRnT5qoiEqMGfmAHSbhUwq6J0NOkoGwh8P3QsSp1pYSuk6Zx/8i7mUE51efI4xeYIKnsGoXf12e
        XicDG09cQKvcu3wJMhe/AdpzmukRGDFG+Ae3iK5Psdg17PAUmAOBoHgGd1aT8jyleBwRo6Pl79uxKS531UVm0KCudQLo1Tzu7duj
        JlfDGO6/+Oqy401jL9omIuoSJw3NSWJvAnAExx49DqgiiubQ21cxofxITSUWmvRh91sEvD3Bb3xsZlVQyhWwDJYueTCp22GFn+zM
        JbfGyhwEd4PTbhGaHdx9GJn2
        """
    // Its public key as PKCS#1 RSAPublicKey DER (what SecKeyCopyExternalRepresentation returns for an RSA public key).
    static let publicKeyPKCS1Base64 = """
        MIIBCgKCAQEAsH6lbfq7gBFfyHPc1vMX23Wx3VIr8qMhxz29FPiy2tvhnrey+QtTotYG0WtM7TN37PIuWymlA3psXr1Z86Sq5HCx
        JKhgqLNIQH8UQxWgjtlFxCg+GxdXsU5WmdNy1WU1QiYZAu/26sUxZQifQ0xaZi725CRnvOO6EYG5RAzcZudrFlTMO+tQxVydxlWY
        PnGbwHNbpITDpiT5mpAg+Q3Y2S6HnaW5/j2k9bemc8XBiJ6+tqfGwMWnl7gmzwOV0yEAOdFdSVvrBfpM3wPWb6KqCwM6dPqCb5ci
        XqONeHYk+ipXMpHaVgZcAkZvLZJoYHecezcvWLTq2gWoknJSVKRANwIDAQAB
        """

    @Test(arguments: Mode.allCases) func makeKeyPairStoresBothHalves(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let (privateKey, publicKey) = try blueRSAMakeKeyPair(bits: 2048)
            #expect(SecKeyGetBlockSize(publicKey) == 256)
            let attributes = try #require(SecKeyCopyAttributes(publicKey) as? [String: Any])
            #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 2048)
            #expect(attributes[kSecAttrKeyType as String] as? String == kSecAttrKeyTypeRSA as String)
            let all: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            ]
            var result: AnyObject?
            #expect(SecItemCopyMatching(all as CFDictionary, &result) == errSecSuccess)
            #expect((result as? [[String: Any]])?.count == 2)
            let privateQuery: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecReturnRef as String: true,
            ]
            var ref: CFTypeRef?
            #expect(SecItemCopyMatching(privateQuery as CFDictionary, &ref) == errSecSuccess)
            #expect(CFGetTypeID(ref) == SecKeyGetTypeID())
            // Apple's documentation casts with as! after this check; a conditional cast keeps a failure a test failure.
            let stored = try #require(ref as? SecKey)
            #expect(SecKeyCopyExternalRepresentation(stored, nil) as Data? == SecKeyCopyExternalRepresentation(privateKey, nil) as Data?)
            #expect(SecItemDelete([kSecClass as String: kSecClassKey] as CFDictionary) == errSecSuccess)
            #expect(SecItemCopyMatching(all as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func pemExportAndReimport(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let (privateKey, publicKey) = try blueRSAMakeKeyPair(bits: 2048)
            let pem = try blueRSAPEMString(reference: publicKey, type: .publicType)
            #expect(pem.hasPrefix("-----BEGIN RSA PUBLIC KEY-----\nMIIBCgKCAQEA"))
            let publicDER = try #require(SecKeyCopyExternalRepresentation(publicKey, nil) as Data?)
            #expect(publicDER.count == 270)
            let reimportedPublic = try blueRSACreateKey(from: publicDER, type: .publicType)
            #expect(SecKeyCopyExternalRepresentation(reimportedPublic, nil) as Data? == publicDER)
            let privateDER = try #require(SecKeyCopyExternalRepresentation(privateKey, nil) as Data?)
            let reimportedPrivate = try blueRSACreateKey(from: privateDER, type: .privateType)
            let message = Data("reimported".utf8)
            #expect(try blueRSAVerify(message, with: publicKey, signature: blueRSASigned(message, with: reimportedPrivate)))
            let notAKey = #expect(throws: BlueRSALikeError.self) { try blueRSACreateKey(from: Data("not a key".utf8), type: .publicType) }
            #expect(notAKey?.reason == "Couldn't create key reference from key data")
        }
    }

    @Test(arguments: Mode.allCases) func encryptDecryptOAEP(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let (privateKey, publicKey) = try blueRSAMakeKeyPair(bits: 2048)
            #expect(SecKeyIsAlgorithmSupported(publicKey, .encrypt, .rsaEncryptionOAEPSHA1AESGCM))
            #expect(SecKeyIsAlgorithmSupported(privateKey, .decrypt, .rsaEncryptionOAEPSHA1AESGCM))
            let plaintext = Data(repeating: 0x42, count: 1000)  // larger than one RSA block: the AES-GCM variant handles it
            let ciphertext = try blueRSAEncrypted(plaintext, with: publicKey)
            #expect(ciphertext != plaintext)
            #expect(try blueRSADecrypted(ciphertext, with: privateKey) == plaintext)
            let (otherPrivate, _) = try blueRSAMakeKeyPair(bits: 2048)
            let wrongKey = #expect(throws: BlueRSALikeError.self) { try blueRSADecrypted(ciphertext, with: otherPrivate) }
            #expect(wrongKey?.underlying.map { CFErrorGetCode($0) } == Int(errSecParam))
        }
    }

    @Test(arguments: Mode.allCases) func signAndVerifyPKCS1AndPSS(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let (privateKey, publicKey) = try blueRSAMakeKeyPair(bits: 2048)
            let message = Data("hello, keychain".utf8)
            let signature = try blueRSASigned(message, with: privateKey)
            #expect(signature.count == 256)
            #expect(try blueRSAVerify(message, with: publicKey, signature: signature))
            let pss = try blueRSASigned(message, with: privateKey, usePSS: true)
            #expect(try blueRSAVerify(message, with: publicKey, signature: pss, usePSS: true))
            do {
                _ = try blueRSAVerify(Data("tampered".utf8), with: publicKey, signature: signature)
                Issue.record("verification of a tampered message must fail")
            } catch let error as BlueRSALikeError {
                let cfError = try #require(error.underlying)
                #expect(CFErrorGetCode(cfError) == Int(errSecVerifyFailed))
                #expect(CFErrorGetDomain(cfError) as String == kCFErrorDomainOSStatus as String)
            }
            #expect(SecKeyIsAlgorithmSupported(privateKey, .sign, .ecdsaSignatureMessageX962SHA256) == false)
        }
    }

    @Test(arguments: Mode.allCases) func publicKeyFromCertificate(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let der = try #require(Data(base64Encoded: Self.certificateBase64, options: .ignoreUnknownCharacters))
            let expected = try #require(Data(base64Encoded: Self.publicKeyPKCS1Base64, options: .ignoreUnknownCharacters))
            let key = try blueRSAPublicKey(extractingFrom: der)
            #expect(SecKeyCopyExternalRepresentation(key, nil) as Data? == expected)
            #expect(SecKeyGetBlockSize(key) == 256)
            let notACertificate = #expect(throws: BlueRSALikeError.self) { try blueRSAPublicKey(extractingFrom: Data("garbage".utf8)) }
            #expect(notACertificate?.reason == "Unable to create certificate from certificate data.")
        }
    }
}
