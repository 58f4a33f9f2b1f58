import Crypto
import Foundation
import KeychainClient
import KeychainCore
import KeychainServices
import KeychainTestSupport
import Testing

/// The keys and certificates of the test process's SoftHSM token (``SoftHSMToken``) through SecItemCopyMatching,
/// as Apple shows CryptoTokenKit items: in `com.apple.token`, with `kSecAttrTokenID`, never written.
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
            #expect(attributes[kSecAttrKeyClass as String] as? Int == 1)
            // Its public key is the token's.
            #expect(try external(try #require(SecKeyCopyPublicKey(privateKey))) == fixture.rsaPublicKeyPKCS1)
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
