import Crypto
import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// PKCS#11 tokens through p11-kit's registry, against a real SoftHSM token (``SoftHSMToken``: one per test process,
/// which is why the suite is serialised) and checked with the real `openssl` and `pkcs11-tool`.
@Suite(
    .serialized,
    .enabled(
        if: SoftHSMToken.available,
        "needs SoftHSM and its p11-kit module (Debian: softhsm2), OpenSC's pkcs11-tool (opensc), openssl and libp11-kit0")
)
final class PKCS11Tests {
    let fixture: SoftHSMToken
    let registry: PKCS11Registry
    let scratch: String

    init() throws {
        // The token first: it sets SOFTHSM2_CONF, which SoftHSM reads when the registry loads it.
        fixture = try SoftHSMToken.shared()
        registry = PKCS11Registry()
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("pkcs11-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// The fixture's token, as the registry lists it.
    func token() throws -> PKCS11Token {
        try #require(registry.tokens().first { $0.module == "softhsm2" && $0.serial == fixture.serial })
    }

    /// Runs the real openssl in the scratch folder.
    func openssl(_ arguments: [String]) throws -> ProgramRun {
        try ProgramRun.run(try #require(SoftHSMToken.program("openssl")), arguments, environment: fixture.environment, directory: scratch, scratch: scratch)
    }

    func write(_ data: Data, _ name: String) throws -> String {
        let path = scratch + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// An object's class, CKA_ID and label, for comparing listings.
    struct Listed: Hashable {
        var kind: String
        var id: Data
        var label: String
    }

    static func listed(_ objects: [PKCS11Object]) -> Set<Listed> {
        // Only the fixture's own objects: other tests generate keys with other CKA_IDs on the shared token.
        Set(
            objects.compactMap { object in
                guard object.id == SoftHSMToken.rsaKeyID || object.id == SoftHSMToken.ecKeyID else { return nil }
                let kind =
                    switch object {
                    case .certificate: "certificate"
                    case .privateKey: "private"
                    case .publicKey: "public"
                    }
                return Listed(kind: kind, id: object.id, label: object.label)
            })
    }

    static func key(_ objects: [PKCS11Object], private wantPrivate: Bool, id: Data) throws -> PKCS11Key {
        let keys = objects.compactMap { object -> PKCS11Key? in
            switch object {
            case .privateKey(let key) where wantPrivate && key.id == id: key
            case .publicKey(let key) where !wantPrivate && key.id == id: key
            default: nil
            }
        }
        #expect(keys.count == 1)
        return try #require(keys.first)
    }

    /// SHA-256's DigestInfo prefix (RFC 8017, section 9.2, note 1).
    static let sha256DigestInfoPrefix = Data([0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20])

    static let message = Data("a message signed on a PKCS#11 token".utf8)

    // MARK: Tokens and objects

    @Test func theTokenIsListedWithItsLabelAndSerial() throws {
        let softhsm = try registry.tokens().filter { $0.module == "softhsm2" }
        // SoftHSM's free slot holds an uninitialised token: not listed.
        #expect(softhsm.count == 1)
        let token = try token()
        #expect(token.label == SoftHSMToken.label)
        #expect(token.serial == fixture.serial)
        #expect(token.manufacturer == "SoftHSM project")
        #expect(token.model == "SoftHSM v2")
        #expect(token.loginRequired)
        #expect(token.flags.isSuperset(of: [.loginRequired, .initialized, .userPINInitialized]))
        #expect(!token.flags.contains(.userPINLocked))
        #expect(token.identifier == "softhsm2:\(fixture.serial)")
        #expect(try registry.token(identifier: token.identifier) == token)
    }

    @Test func theRegistryUsesSoftHSMAndSkipsTheTrustStore() throws {
        let modules = try registry.modules()
        #expect(modules.contains(PKCS11Module(name: "softhsm2", state: .usable)))
        // p11-kit-trust holds the system's anchors, not keys: loaded but never initialised or listed.
        let trustConfigured = FileManager.default.fileExists(atPath: "/usr/share/p11-kit/modules/p11-kit-trust.module")
        #expect(modules.contains(PKCS11Module(name: "p11-kit-trust", state: .trustStore)) == trustConfigured)
        #expect(!modules.contains { $0.name == "p11-kit-trust" && $0.state == .usable })
    }

    @Test func withoutLoginTheCertificateAndPublicKeysAreListed() throws {
        let objects = try registry.objects(on: token())
        #expect(
            Self.listed(objects) == [
                Listed(kind: "certificate", id: SoftHSMToken.rsaKeyID, label: SoftHSMToken.certificateLabel),
                Listed(kind: "public", id: SoftHSMToken.rsaKeyID, label: SoftHSMToken.rsaLabel),
                Listed(kind: "public", id: SoftHSMToken.ecKeyID, label: SoftHSMToken.ecLabel),
            ])
        let certificates = objects.compactMap { object -> PKCS11Certificate? in
            if case .certificate(let certificate) = object, certificate.id == SoftHSMToken.rsaKeyID { return certificate }
            return nil
        }
        #expect(certificates.map(\.der) == [fixture.certificateDER])

        let rsa = try Self.key(objects, private: false, id: SoftHSMToken.rsaKeyID)
        #expect(rsa.type == .rsa)
        #expect(rsa.publicKey?.type == .rsa)
        #expect(rsa.publicKey?.bytes == fixture.rsaPublicKeyPKCS1)
        #expect(rsa.sizeInBits == 2048)
        #expect(rsa.usage.contains(.verify))
        #expect(!rsa.usage.contains(.private))

        let ec = try Self.key(objects, private: false, id: SoftHSMToken.ecKeyID)
        #expect(ec.type == .ec)
        // CKA_EC_POINT comes as a DER OCTET STRING; the key is the bare X9.63 point pkcs11-tool exported.
        #expect(ec.publicKey?.bytes == fixture.ecPublicKeyX963)
        #expect(ec.sizeInBits == 256)
    }

    @Test func afterLoginThePrivateKeysAreListedToo() throws {
        let objects = try registry.objects(on: token(), pin: SoftHSMToken.pin)
        #expect(
            Self.listed(objects) == [
                Listed(kind: "certificate", id: SoftHSMToken.rsaKeyID, label: SoftHSMToken.certificateLabel),
                Listed(kind: "public", id: SoftHSMToken.rsaKeyID, label: SoftHSMToken.rsaLabel),
                Listed(kind: "public", id: SoftHSMToken.ecKeyID, label: SoftHSMToken.ecLabel),
                Listed(kind: "private", id: SoftHSMToken.rsaKeyID, label: SoftHSMToken.rsaLabel),
                Listed(kind: "private", id: SoftHSMToken.ecKeyID, label: SoftHSMToken.ecLabel),
            ])
        let rsa = try Self.key(objects, private: true, id: SoftHSMToken.rsaKeyID)
        #expect(rsa.type == .rsa)
        #expect(rsa.usage.isSuperset(of: [.sign, .decrypt, .private, .sensitive]))
        #expect(!rsa.usage.contains(.extractable))
        // From the private key's own CKA_MODULUS and CKA_PUBLIC_EXPONENT.
        #expect(rsa.publicKey?.bytes == fixture.rsaPublicKeyPKCS1)
        let ec = try Self.key(objects, private: true, id: SoftHSMToken.ecKeyID)
        #expect(ec.type == .ec)
        #expect(ec.usage.isSuperset(of: [.sign, .derive, .private, .sensitive]))
        // A private EC key has no CKA_EC_POINT: taken from the public key with its CKA_ID.
        #expect(ec.publicKey?.bytes == fixture.ecPublicKeyX963)
        #expect(ec.sizeInBits == 256)
    }

    @Test func anAbsentTokenIsItemNotFound() throws {
        let absent = PKCS11Token(module: "softhsm2", label: "gone", serial: "0000000000000000")
        let error = expectKeychainError(.itemNotFound, status: .itemNotFound) { try registry.objects(on: absent) }
        #expect((error?.cause as? PKCS11Failure)?.kind == .tokenNotFound)
        let unknown = expectKeychainError(.itemNotFound, status: .itemNotFound) { try registry.token(identifier: "softhsm2:0000000000000000") }
        #expect(unknown?.message.contains("softhsm2:0000000000000000") == true)
    }

    // MARK: PINs

    @Test func aWrongPINIsErrSecAuthFailed() throws {
        let token = try token()
        let wrong = "987123"
        let error = expectKeychainError(.authenticationFailed, status: .authFailed) { try registry.verifyPIN(wrong, on: token) }
        #expect(error?.status.rawValue == -25293)
        let failure = try #require(error?.cause as? PKCS11Failure)
        #expect(failure.kind == .pinIncorrect)
        #expect(failure.returnValue == 0xA0)  // CKR_PIN_INCORRECT
        #expect(failure.message == "C_Login: CKR_PIN_INCORRECT (0xa0)")
        #expect(error?.message.contains(wrong) == false)
        // The same through an operation; the right PIN still works afterwards.
        let signing = expectKeychainError(.authenticationFailed, status: .authFailed) {
            try registry.sign(Data(SHA256.hash(data: Self.message)), keyID: SoftHSMToken.ecKeyID, on: token, mechanism: .ecdsa, pin: wrong)
        }
        #expect((signing?.cause as? PKCS11Failure)?.kind == .pinIncorrect)
        try registry.verifyPIN(SoftHSMToken.pin, on: token)
    }

    @Test func signingWithoutThePINNeedsIt() throws {
        let error = expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            try registry.sign(Data(SHA256.hash(data: Self.message)), keyID: SoftHSMToken.ecKeyID, on: token(), mechanism: .ecdsa, pin: nil)
        }
        #expect((error?.cause as? PKCS11Failure)?.kind == .notLoggedIn)
        // With the PIN, a key that is not there is not found.
        let missing = expectKeychainError(.itemNotFound, status: .itemNotFound) {
            try registry.sign(Data(SHA256.hash(data: Self.message)), keyID: Data([0x7f]), on: token(), mechanism: .ecdsa, pin: SoftHSMToken.pin)
        }
        #expect((missing?.cause as? PKCS11Failure)?.kind == .objectNotFound)
    }

    // MARK: Signatures, checked by openssl

    @Test func anRSAPKCS1SignatureVerifiesWithOpenSSL() throws {
        let digestInfo = Self.sha256DigestInfoPrefix + Data(SHA256.hash(data: Self.message))
        let signature = try registry.sign(digestInfo, keyID: SoftHSMToken.rsaKeyID, on: token(), mechanism: .rsaPKCS1, pin: SoftHSMToken.pin)
        #expect(signature.count == 256)
        let messagePath = try write(Self.message, "message")
        let signaturePath = try write(signature, "signature")
        let verified = try openssl(["dgst", "-sha256", "-verify", fixture.rsaPublicKeyPEMPath, "-signature", signaturePath, messagePath])
        #expect(verified.status == 0)
        #expect(verified.stdout == "Verified OK\n")
        // The check is not vacuous: another message does not verify.
        let otherPath = try write(Self.message + Data("!".utf8), "other")
        let refused = try openssl(["dgst", "-sha256", "-verify", fixture.rsaPublicKeyPEMPath, "-signature", signaturePath, otherPath])
        #expect(refused.status == 1)
        #expect(refused.stdout == "Verification failure\n")
    }

    @Test func anRSAPSSSignatureVerifiesWithOpenSSL() throws {
        let signature = try registry.sign(
            Data(SHA256.hash(data: Self.message)), keyID: SoftHSMToken.rsaKeyID, on: token(), mechanism: .rsaPSS(hash: .sha256, saltLength: 32),
            pin: SoftHSMToken.pin)
        let messagePath = try write(Self.message, "message")
        let signaturePath = try write(signature, "signature")
        let verified = try openssl([
            "dgst", "-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32", "-verify", fixture.rsaPublicKeyPEMPath, "-signature",
            signaturePath, messagePath,
        ])
        #expect(verified.status == 0)
        #expect(verified.stdout == "Verified OK\n")
    }

    @Test func anECDSASignatureVerifiesWithOpenSSL() throws {
        let raw = try registry.sign(Data(SHA256.hash(data: Self.message)), keyID: SoftHSMToken.ecKeyID, on: token(), mechanism: .ecdsa, pin: SoftHSMToken.pin)
        // CKM_ECDSA gives r‖s; openssl reads the DER of X9.62.
        #expect(raw.count == 64)
        let der = try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation
        let messagePath = try write(Self.message, "message")
        let signaturePath = try write(der, "signature")
        let verified = try openssl(["dgst", "-sha256", "-verify", fixture.ecPublicKeyPEMPath, "-signature", signaturePath, messagePath])
        #expect(verified.status == 0)
        #expect(verified.stdout == "Verified OK\n")
        let otherPath = try write(Self.message + Data("!".utf8), "other")
        let refused = try openssl(["dgst", "-sha256", "-verify", fixture.ecPublicKeyPEMPath, "-signature", signaturePath, otherPath])
        #expect(refused.status == 1)
    }

    // MARK: Decryption and ECDH

    @Test func decryptsWhatOpenSSLEncrypted() throws {
        let plaintext = Data("a secret for the token".utf8)
        let plainPath = try write(plaintext, "plain")
        let pkcs1 = try openssl(["pkeyutl", "-encrypt", "-pubin", "-inkey", fixture.rsaPublicKeyPEMPath, "-in", plainPath, "-out", "pkcs1.bin"])
        #expect(pkcs1.status == 0)
        let oaep = try openssl([
            "pkeyutl", "-encrypt", "-pubin", "-inkey", fixture.rsaPublicKeyPEMPath, "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha1",
            "-in", plainPath, "-out", "oaep.bin",
        ])
        #expect(oaep.status == 0)
        let token = try token()
        let fromPKCS1 = try registry.decrypt(
            Data(contentsOf: URL(fileURLWithPath: scratch + "/pkcs1.bin")), keyID: SoftHSMToken.rsaKeyID, on: token, mechanism: .rsaPKCS1, pin: SoftHSMToken.pin)
        #expect(fromPKCS1 == plaintext)
        let fromOAEP = try registry.decrypt(
            Data(contentsOf: URL(fileURLWithPath: scratch + "/oaep.bin")), keyID: SoftHSMToken.rsaKeyID, on: token, mechanism: .rsaOAEP(.sha1),
            pin: SoftHSMToken.pin)
        #expect(fromOAEP == plaintext)
    }

    @Test func ecdhAgreesWithSoftwareKeyAgreement() throws {
        let peer = P256.KeyAgreement.PrivateKey()
        let secret = try registry.deriveECDH(
            keyID: SoftHSMToken.ecKeyID, on: token(), peerPublicKey: peer.publicKey.x963Representation, pin: SoftHSMToken.pin)
        let expected = try peer.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: fixture.ecPublicKeyX963))
        #expect(secret.count == 32)
        #expect(secret == expected.withUnsafeBytes { Data($0) })
    }

    // MARK: Key generation

    @Test func aGeneratedKeyPairIsListed() throws {
        let token = try token()
        let ecID = Data([0x20]), rsaID = Data([0x21])
        let ec = try registry.generateKeyPair(type: .ec, sizeInBits: 256, label: "Generated EC", id: ecID, on: token, pin: SoftHSMToken.pin)
        #expect(ec.privateKey.id == ecID && ec.publicKey.id == ecID)
        #expect(ec.privateKey.label == "Generated EC" && ec.publicKey.label == "Generated EC")
        #expect(ec.privateKey.usage.isSuperset(of: [.sign, .derive, .private, .sensitive]))
        #expect(!ec.privateKey.usage.contains(.extractable))
        let ecPublic = try #require(ec.publicKey.publicKey)
        #expect(ecPublic.sizeInBits == 256)
        #expect(ec.privateKey.publicKey == ecPublic)

        let rsa = try registry.generateKeyPair(type: .rsa, sizeInBits: 2048, label: "Generated RSA", id: rsaID, on: token, pin: SoftHSMToken.pin)
        #expect(rsa.privateKey.usage.isSuperset(of: [.sign, .decrypt, .private, .sensitive]))
        #expect(rsa.publicKey.sizeInBits == 2048)

        // Both pairs are on the token: public keys without login, private keys after.
        let anyone = try registry.objects(on: token)
        #expect(try Self.key(anyone, private: false, id: ecID).publicKey == ecPublic)
        #expect(try Self.key(anyone, private: false, id: rsaID).label == "Generated RSA")
        #expect(!anyone.contains { if case .privateKey(let key) = $0 { key.id == ecID || key.id == rsaID } else { false } })
        let loggedIn = try registry.objects(on: token, pin: SoftHSMToken.pin)
        #expect(try Self.key(loggedIn, private: true, id: ecID).label == "Generated EC")
        #expect(try Self.key(loggedIn, private: true, id: rsaID).sizeInBits == 2048)

        // The new key signs, and the signature verifies with its public key.
        let digest = SHA256.hash(data: Self.message)
        let raw = try registry.sign(Data(digest), keyID: ecID, on: token, mechanism: .ecdsa, pin: SoftHSMToken.pin)
        let verifier = try P256.Signing.PublicKey(x963Representation: ecPublic.bytes)
        #expect(verifier.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: raw), for: digest))

        // A second pair with the same CKA_ID is refused.
        let duplicate = expectKeychainError(.duplicateItem, status: .duplicateItem) {
            try registry.generateKeyPair(type: .ec, sizeInBits: 256, label: "Again", id: ecID, on: token, pin: SoftHSMToken.pin)
        }
        #expect((duplicate?.cause as? PKCS11Failure)?.kind == .duplicate)
    }
}

/// Public keys from PKCS#11 attributes, without a token.
@Suite struct PKCS11PublicKeyEncodingTests {
    static let p256 = Data([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07])

    @Test func anECPointIsReadWrappedInAnOctetStringOrBare() throws {
        let point = P256.Signing.PrivateKey().publicKey.x963Representation
        let wrapped = Data([0x04, 0x41]) + point
        #expect(PKCS11PublicKeyEncoding.ec(parameters: Self.p256, point: wrapped)?.bytes == point)
        #expect(PKCS11PublicKeyEncoding.ec(parameters: Self.p256, point: point)?.bytes == point)
        // Another curve's parameters (secp256k1), or a point off the curve: no key.
        #expect(PKCS11PublicKeyEncoding.ec(parameters: Data([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a]), point: wrapped) == nil)
        var off = point
        off[64] ^= 1
        #expect(PKCS11PublicKeyEncoding.ec(parameters: Self.p256, point: off) == nil)
    }

    @Test func anRSAKeyIsPKCS1DER() throws {
        let key = try RSAPublicKeyParts.make()
        let encoded = try #require(PKCS11PublicKeyEncoding.rsa(modulus: key.modulus, exponent: key.exponent))
        #expect(encoded.bytes == key.pkcs1)
        #expect(encoded.sizeInBits == 2048)
        // Leading zero bytes of CKA_MODULUS are not part of the INTEGER's value.
        #expect(PKCS11PublicKeyEncoding.rsa(modulus: Data([0, 0]) + key.modulus, exponent: key.exponent)?.bytes == key.pkcs1)
    }
}

/// A 2048-bit RSA public key's parts and PKCS#1 DER, taken apart by hand from a key KeychainCore made.
enum RSAPublicKeyParts {
    static func make() throws -> (modulus: Data, exponent: Data, pkcs1: Data) {
        let pkcs1 = try KeyMaterial.generate(type: .rsa, sizeInBits: 2048).publicKey().bytes
        // SEQUENCE (30 82 01 0a) { INTEGER (02 82 01 01) 00‖n, INTEGER (02 03) e }.
        let bytes = [UInt8](pkcs1)
        try #require(bytes.count == 270 && bytes[0] == 0x30 && bytes[4] == 0x02 && bytes[5] == 0x82 && bytes[8] == 0x00)
        let modulus = Data(bytes[9..<265])
        try #require(bytes[265] == 0x02 && bytes[266] == 0x03)
        return (modulus, Data(bytes[267..<270]), pkcs1)
    }
}
