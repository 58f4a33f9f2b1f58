import Crypto
import Foundation
import KeychainClient
import KeychainCore
import KeychainServices
import KeychainTestSupport
import LocalAuthentication
import Testing

/// The keys and certificates of the test process's SoftHSM token (``SoftHSMToken``) through SecItemCopyMatching,
/// as Apple shows CryptoTokenKit items: in `com.apple.token`, with `kSecAttrTokenID`, never written; and their
/// private keys used through SecKey with the PIN from `LAContext`, checked with the real `openssl`.
@Suite(
    .serialized,
    .enabled(
        if: SoftHSMToken.available,
        "needs SoftHSM and its p11-kit module (Debian: softhsm2), OpenSC's pkcs11-tool (opensc), openssl and libp11-kit0")
)
final class PKCS11ItemTests {
    let fixture: SoftHSMToken
    let home: String
    let engine: KeychainEngine

    init() throws {
        // The token first: it sets SOFTHSM2_CONF, which SoftHSM reads when the registry loads it.
        fixture = try SoftHSMToken.shared()
        home = FileManager.default.temporaryDirectory.appendingPathComponent("pkcs11-items-\(UUID().uuidString)").path
        engine = try KeychainEngine(location: KeychainLocation(home: home), pkcs11: .shared)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: home)
    }

    var tokenID: String { "softhsm2:\(fixture.serial)" }

    /// Runs `body` with SecItem calls from a caller with `groups`.
    func run<T>(groups: [String], _ body: () throws -> T) rethrows -> T {
        try KeychainConnector.$override.withValue(InProcessKeychain(engine: engine, caller: AccessPolicy(groups: groups)), operation: body)
    }

    static let tokenGroups = ["com.example.app", "com.apple.token"]

    func sha1(_ data: Data) -> Data { Data(Insecure.SHA1.hash(data: data)) }

    @Test("certificates and keys of a token are found in com.apple.token, with Apple's attributes")
    func tokenItemsAreFound() throws {
        try run(groups: Self.tokenGroups) {
            let (status, found) = copy([
                kSecClass as String: kSecClassCertificate, kSecAttrTokenID as String: tokenID, kSecReturnAttributes as String: true,
                kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            #expect(status == errSecSuccess)
            let certificates = try #require(found as? [[String: Any]])
            #expect(certificates.count == 1)
            let certificate = try #require(certificates.first)
            #expect(certificate[kSecValueData as String] as? Data == fixture.certificateDER)
            #expect(certificate[kSecAttrLabel as String] as? String == SoftHSMToken.certificateLabel)
            #expect(certificate[kSecAttrAccessGroup as String] as? String == "com.apple.token")
            #expect(certificate[kSecAttrTokenID as String] as? String == tokenID)
            #expect(certificate[kSecAttrPublicKeyHash as String] as? Data == sha1(fixture.rsaPublicKeyPKCS1))

            // Private keys, known without the PIN by their public keys and certificate.
            let (keyStatus, keys) = copy([
                kSecClass as String: kSecClassKey, kSecAttrTokenID as String: tokenID, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            #expect(keyStatus == errSecSuccess)
            let privateKeys = try #require(keys as? [[String: Any]])
            let rsa = try #require(privateKeys.first { $0[kSecAttrLabel as String] as? String == SoftHSMToken.rsaLabel })
            #expect(rsa[kSecAttrKeyType as String] as? Int == 42)
            #expect(rsa[kSecAttrKeySizeInBits as String] as? Int == 2048)
            #expect(rsa[kSecAttrKeyClass as String] as? Int == 1)
            #expect(rsa[kSecAttrApplicationLabel as String] as? Data == sha1(fixture.rsaPublicKeyPKCS1))
            #expect(rsa[kSecAttrAccessGroup as String] as? String == "com.apple.token")
            let ec = try #require(privateKeys.first { $0[kSecAttrLabel as String] as? String == SoftHSMToken.ecLabel })
            #expect(ec[kSecAttrKeyType as String] as? Int == 73)
            #expect(ec[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(ec[kSecAttrApplicationLabel as String] as? Data == sha1(fixture.ecPublicKeyX963))
            #expect(privateKeys.allSatisfy { $0[kSecAttrKeyClass as String] as? Int == 1 && $0[kSecAttrTokenID as String] as? String == tokenID })

            // By label too; the public key comes back with its bytes.
            let (publicStatus, publicKey) = copy([
                kSecClass as String: kSecClassKey, kSecAttrLabel as String: SoftHSMToken.ecLabel, kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                kSecAttrAccessGroup as String: kSecAttrAccessGroupToken, kSecReturnData as String: true,
            ])
            #expect(publicStatus == errSecSuccess)
            #expect(publicKey as? Data == fixture.ecPublicKeyX963)
        }
    }

    @Test("the RSA certificate and private key come back as one SecIdentity")
    func tokenIdentity() throws {
        try run(groups: Self.tokenGroups) {
            let (status, found) = copy([kSecClass as String: kSecClassIdentity, kSecAttrTokenID as String: tokenID, kSecReturnRef as String: true])
            #expect(status == errSecSuccess)
            let identity = try #require(found as? SecIdentity)
            var certificate: SecCertificate?
            #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
            #expect(certificate.map { SecCertificateCopyData($0) as Data } == fixture.certificateDER)
            var key: SecKey?
            #expect(SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess)
            let privateKey = try #require(key)
            let attributes = try #require(SecKeyCopyAttributes(privateKey) as? [String: Any])
            #expect(attributes[kSecAttrTokenID as String] as? String == tokenID)
            #expect(attributes[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String)
            // Its public key is the token's.
            #expect(try external(try #require(SecKeyCopyPublicKey(privateKey))) == fixture.rsaPublicKeyPKCS1)
        }
    }

    /// Runs the real openssl in the token's folder.
    func openssl(_ arguments: [String]) throws -> ProgramRun {
        try ProgramRun.run(
            try #require(SoftHSMToken.program("openssl")), arguments, environment: fixture.environment, directory: fixture.directory, scratch: fixture.directory)
    }

    func write(_ data: Data) throws -> String {
        let path = fixture.directory + "/\(UUID().uuidString).bin"
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The token's private key labelled `label`, found with `context` (which carries the PIN, or not).
    func tokenPrivateKey(_ label: String, context: LAContext) throws -> SecKey {
        let (status, found) = copy([
            kSecClass as String: kSecClassKey, kSecAttrTokenID as String: tokenID, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            kSecAttrLabel as String: label, kSecReturnRef as String: true, kSecUseAuthenticationContext as String: context,
        ])
        #expect(status == errSecSuccess)
        return try #require(found as? SecKey)
    }

    func pinContext() -> LAContext {
        let context = LAContext()
        #expect(context.setCredential(Data(SoftHSMToken.pin.utf8), type: .smartCardPIN))
        return context
    }

    @Test("token keys sign with the PIN from LAContext; openssl verifies the signatures")
    func tokenKeysSign() throws {
        try run(groups: Self.tokenGroups) {
            let message = Data("signed on the token".utf8)
            let messagePath = try write(message)
            var error: Unmanaged<CFError>?

            let rsa = try tokenPrivateKey(SoftHSMToken.rsaLabel, context: pinContext())
            for (algorithm, options) in [
                (SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, [String]()),
                (.rsaSignatureMessagePSSSHA256, ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]),
            ] {
                let signature = try #require(SecKeyCreateSignature(rsa, algorithm, message as CFData, &error) as Data?, "\(algorithm): \(String(describing: cfError(error)))")
                #expect(signature.count == 256)
                let verified = try openssl(["dgst", "-sha256", "-verify", fixture.rsaPublicKeyPEMPath] + options + ["-signature", try write(signature), messagePath])
                #expect(verified.status == 0, "\(algorithm): \(verified.stdout)\(verified.stderr)")
                #expect(verified.stdout == "Verified OK\n")
            }
            // A digest signed as given, in a DigestInfo.
            let digest = Data(SHA256.hash(data: message))
            let digestSignature = try #require(SecKeyCreateSignature(rsa, .rsaSignatureDigestPKCS1v15SHA256, digest as CFData, &error) as Data?)
            #expect(try openssl(["dgst", "-sha256", "-verify", fixture.rsaPublicKeyPEMPath, "-signature", try write(digestSignature), messagePath]).status == 0)

            // ECDSA: the token's raw r‖s comes back as X9.62 DER.
            let ec = try tokenPrivateKey(SoftHSMToken.ecLabel, context: pinContext())
            let ecSignature = try #require(SecKeyCreateSignature(ec, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            #expect(ecSignature.first == 0x30)
            let ecVerified = try openssl(["dgst", "-sha256", "-verify", fixture.ecPublicKeyPEMPath, "-signature", try write(ecSignature), messagePath])
            #expect(ecVerified.status == 0, "\(ecVerified.stdout)\(ecVerified.stderr)")
            #expect(ecVerified.stdout == "Verified OK\n")
            // Our own verification agrees, with the public key SecKeyCopyPublicKey gives.
            let ecPublic = try #require(SecKeyCopyPublicKey(ec))
            #expect(try external(ecPublic) == fixture.ecPublicKeyX963)
            #expect(SecKeyVerifySignature(ecPublic, .ecdsaSignatureMessageX962SHA256, message as CFData, ecSignature as CFData, &error))
        }
    }

    @Test("without the PIN a token key fails with errSecInteractionNotAllowed; a wrong PIN with errSecAuthFailed")
    func tokenKeysNeedThePIN() throws {
        try run(groups: Self.tokenGroups) {
            let message = Data("no PIN".utf8) as CFData
            var error: Unmanaged<CFError>?
            let withoutPIN = try tokenPrivateKey(SoftHSMToken.ecLabel, context: LAContext())
            #expect(SecKeyCreateSignature(withoutPIN, .ecdsaSignatureMessageX962SHA256, message, &error) == nil)
            #expect(cfError(error) == Int(errSecInteractionNotAllowed))
            let wrong = LAContext()
            #expect(wrong.setCredential(Data("000000".utf8), type: .smartCardPIN))
            let withWrongPIN = try tokenPrivateKey(SoftHSMToken.ecLabel, context: wrong)
            #expect(SecKeyCreateSignature(withWrongPIN, .ecdsaSignatureMessageX962SHA256, message, &error) == nil)
            #expect(cfError(error) == Int(errSecAuthFailed))
        }
    }

    @Test("token keys decrypt (RSA PKCS#1 and OAEP-SHA1) and agree keys (ECDH)")
    func tokenKeysDecryptAndAgree() throws {
        try run(groups: Self.tokenGroups) {
            var error: Unmanaged<CFError>?
            let secret = Data("for the token only".utf8)
            let rsa = try tokenPrivateKey(SoftHSMToken.rsaLabel, context: pinContext())
            let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
            #expect(try external(rsaPublic) == fixture.rsaPublicKeyPKCS1)
            // openssl encrypts with PKCS#1 v1.5; we encrypt with OAEP-SHA1 (the one OAEP hash SoftHSM takes).
            let plainPath = try write(secret), sealedPath = fixture.directory + "/\(UUID().uuidString).sealed"
            let encrypted = try openssl(["pkeyutl", "-encrypt", "-pubin", "-inkey", fixture.rsaPublicKeyPEMPath, "-in", plainPath, "-out", sealedPath])
            #expect(encrypted.status == 0, "\(encrypted.stderr)")
            let sealed = try Data(contentsOf: URL(fileURLWithPath: sealedPath))
            #expect(SecKeyCreateDecryptedData(rsa, .rsaEncryptionPKCS1, sealed as CFData, &error) as Data? == secret)
            let oaep = try #require(SecKeyCreateEncryptedData(rsaPublic, .rsaEncryptionOAEPSHA1, secret as CFData, &error) as Data?)
            #expect(SecKeyCreateDecryptedData(rsa, .rsaEncryptionOAEPSHA1, oaep as CFData, &error) as Data? == secret)

            let ec = try tokenPrivateKey(SoftHSMToken.ecLabel, context: pinContext())
            let other = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
            let otherPublic = try #require(SecKeyCopyPublicKey(other))
            let ours = try #require(SecKeyCopyKeyExchangeResult(ec, .ecdhKeyExchangeStandard, otherPublic, [:] as CFDictionary, &error) as Data?)
            let ecPublic = try #require(SecKeyCopyPublicKey(ec))
            let theirs = try #require(SecKeyCopyKeyExchangeResult(other, .ecdhKeyExchangeStandard, ecPublic, [:] as CFDictionary, &error) as Data?)
            #expect(ours == theirs)
            #expect(ours.count == 32)
        }
    }

    @Test("persistent references of token items are stable and find the item again")
    func persistentReferences() throws {
        try run(groups: Self.tokenGroups) {
            let query: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecAttrTokenID as String: tokenID, kSecReturnPersistentRef as String: true,
            ]
            let (status, first) = copy(query)
            #expect(status == errSecSuccess)
            let reference = try #require(first as? Data)
            #expect(copy(query).1 as? Data == reference)
            let (again, data) = copy([kSecClass as String: kSecClassCertificate, kSecValuePersistentRef as String: reference, kSecReturnData as String: true])
            #expect(again == errSecSuccess)
            #expect(data as? Data == fixture.certificateDER)
        }
    }

    @Test("a caller without com.apple.token does not see token items")
    func invisibleWithoutTheGroup() {
        run(groups: ["com.example.app"]) {
            #expect(copy([kSecClass as String: kSecClassCertificate, kSecAttrTokenID as String: tokenID]).0 == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassKey, kSecAttrLabel as String: SoftHSMToken.rsaLabel]).0 == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassCertificate, kSecAttrAccessGroup as String: kSecAttrAccessGroupToken]).0 == errSecMissingEntitlement)
        }
    }

    @Test("token items are read-only: writes to com.apple.token fail with errSecMissingEntitlement")
    func tokenItemsAreNeverWritten() {
        run(groups: Self.tokenGroups) {
            #expect(
                SecItemAdd(
                    [
                        kSecClass as String: kSecClassCertificate, kSecValueData as String: fixture.certificateDER,
                        kSecAttrAccessGroup as String: kSecAttrAccessGroupToken,
                    ] as CFDictionary, nil) == errSecMissingEntitlement)
            #expect(
                SecItemUpdate(
                    [kSecClass as String: kSecClassKey, kSecAttrAccessGroup as String: kSecAttrAccessGroupToken] as CFDictionary,
                    [kSecAttrLabel as String: "renamed"] as CFDictionary) == errSecMissingEntitlement)
            #expect(SecItemDelete([kSecClass as String: kSecClassKey, kSecAttrAccessGroup as String: kSecAttrAccessGroupToken] as CFDictionary) == errSecMissingEntitlement)
            // Without the group, a delete sees only the stored items: nothing of the token's.
            #expect(SecItemDelete([kSecClass as String: kSecClassCertificate, kSecAttrTokenID as String: tokenID] as CFDictionary) == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassCertificate, kSecAttrTokenID as String: tokenID]).0 == errSecSuccess)
        }
    }
}
