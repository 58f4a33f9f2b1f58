import Foundation
import KeychainClient
@testable import KeychainCore
import KeychainServices
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A Unix-socket proxy in the test process between a client and keychaind that records every byte both ways.
/// keychaind sees the proxy's (this process's) credentials, so the client's identity is unchanged.
final class RecordingProxy: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var stopped = false

    init(to daemonSocket: String, at path: String) throws {
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        let bound = withUnixAddress(path, fd, bind)
        guard bound == 0, listen(fd, 16) == 0 else { throw KeyTestError("proxy cannot listen at \(path)") }
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                guard let upstream = RawConnection(path: daemonSocket) else { close(client); continue }
                pump(from: client, to: upstream.fd)
                pump(from: upstream.fd, to: client)
            }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if n <= 0 { shutdown(destination, Int32(SHUT_WR)); return }
                lock.withLock { bytes += buffer[0..<n] }
                var sent = 0
                while sent < n {
                    let m = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                    if m <= 0 { return }
                    sent += m
                }
            }
        }
    }

    /// Everything that crossed so far, both directions.
    var recorded: Data { lock.withLock { Data(bytes) } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}

func tokenKey(_ tag: String) -> SecKey? {
    var error: Unmanaged<CFError>?
    return SecKeyCreateRandomKey(
        [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
            kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: true,
                kSecAttrApplicationTag as String: Data(tag.utf8),
            ],
        ] as CFDictionary, &error)
}

@Suite struct TokenKeyTests {
    @Test(arguments: Backend.allCases)
    func tokenKeysWorkButNeverExport(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let key = try #require(tokenKey("token-key"))
            var error: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
            #expect(cfError(error) == -4)
            let attributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
            #expect(attributes[kSecAttrTokenID as String] as? String == "com.apple.setoken")
            #expect(attributes[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String)
            #expect(attributes[kSecValueData as String] == nil)
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(try external(publicKey).count == 65)

            // Sign, decrypt and exchange run where the key is; the public key checks them.
            let message = Data("token message".utf8)
            let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            let sealed = try #require(SecKeyCreateEncryptedData(publicKey, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, message as CFData, &error) as Data?)
            #expect(SecKeyCreateDecryptedData(key, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, sealed as CFData, &error) as Data? == message)
            let other = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
            let otherPublic = try #require(SecKeyCopyPublicKey(other))
            let mine = try #require(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, otherPublic, [:] as CFDictionary, &error) as Data?)
            #expect(SecKeyCopyKeyExchangeResult(other, .ecdhKeyExchangeStandard, publicKey, [:] as CFDictionary, &error) as Data? == mine)
            // A private key does not verify or encrypt; SecKeyIsAlgorithmSupported agrees.
            #expect(!SecKeyVerifySignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            #expect(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256))
            #expect(!SecKeyIsAlgorithmSupported(key, .encrypt, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM))

            // Found again as a ref, still a token key.
            let (status, found) = copy([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("token-key".utf8), kSecReturnRef as String: true])
            #expect(status == errSecSuccess)
            let stored = try #require(found as? SecKey)
            #expect(SecKeyCopyExternalRepresentation(stored, &error) == nil)
            let again = try #require(SecKeyCreateSignature(stored, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, again as CFData, &error))
            // Only P-256 keys live in the token.
            #expect(
                SecKeyCreateRandomKey(
                    [
                        kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 2048,
                        kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                    ] as CFDictionary, &error) == nil)
            #expect(cfError(error) == -50)
            // Deleted, its ref stops working.
            #expect(SecItemDelete([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("token-key".utf8)] as CFDictionary) == errSecSuccess)
            #expect(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) == nil)
            #expect(cfError(error) == -25300)
        }
    }

    @Test(arguments: Backend.allCases)
    func anIdentityWithATokenKeyKeepsTheKeyInTheToken(_ backend: Backend) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let kc = try TestKeychain(backend)
        try kc.run {
            let key = try #require(tokenKey("identity-token"))
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            // openssl issues a certificate for the token key's public key (signed by a key of its own).
            try bench.write("pub.der", spki(ecPoint: try external(publicKey)))
            #expect(try bench.openssl("pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-out", "pub.pem").status == 0)
            #expect(
                try bench.openssl(
                    "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", "issuer.key", "-subj", "/CN=token identity", "-out", "token.csr"
                ).status == 0)
            #expect(
                try bench.openssl(
                    "x509", "-req", "-in", "token.csr", "-signkey", "issuer.key", "-force_pubkey", "pub.pem",
                    "-days", "30", "-outform", "DER", "-out", "token.der"
                ).status == 0)
            let certificate = try #require(SecCertificateCreateWithData(nil, try bench.read("token.der") as CFData))
            #expect(add([kSecValueRef as String: certificate]) == errSecSuccess)

            let (status, found) = copy([kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true])
            #expect(status == errSecSuccess)
            var identityKey: SecKey?
            #expect(SecIdentityCopyPrivateKey(try #require(found as? SecIdentity), &identityKey) == errSecSuccess)
            let privateKey = try #require(identityKey)
            // The identity's key is the token key: not exportable, and it signs where it lives.
            var error: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(privateKey, &error) == nil)
            #expect(cfError(error) == -4)
            let message = Data("identity".utf8)
            let signature = try #require(SecKeyCreateSignature(privateKey, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            // Nor does it leave in a PKCS#12 export: errSecUnimplemented (-4), nothing written.
            let identity = try #require(found as? SecIdentity)
            let (exportStatus, exported) = export(identity, .formatPKCS12, passphrase: "pw" as NSString)
            #expect(exportStatus == errSecUnimplemented)
            #expect(exported == nil)
            // Its certificate still exports.
            #expect(export(identity, .formatX509Cert, passphrase: nil).1 == (try bench.read("token.der")))
        }
    }

    @Test(arguments: Backend.allCases)
    func tokenKeysDoEveryP256Algorithm(_ backend: Backend) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let kc = try TestKeychain(backend)
        try kc.run {
            let key = try #require(tokenKey("token-sha224"))
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            var error: Unmanaged<CFError>?
            // ECDSA over SHA-224, checked by openssl.
            let message = Data("SHA-224 in the token".utf8)
            try bench.write("msg", message)
            try bench.write("pub.der", spki(ecPoint: try external(publicKey)))
            #expect(try bench.openssl("pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-out", "pub.pem").status == 0)
            let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA224, message as CFData, &error) as Data?)
            try bench.write("sig", signature)
            #expect(try bench.openssl("dgst", "-sha224", "-verify", "pub.pem", "-signature", "sig", "msg").output.contains("Verified OK"))
            #expect(try bench.openssl("dgst", "-sha224", "-binary", "-out", "digest", "msg").status == 0)
            let raw = try #require(SecKeyCreateSignature(key, .ecdsaSignatureDigestRFC4754SHA224, try bench.read("digest") as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageRFC4754SHA224, message as CFData, raw as CFData, &error))
            // ECIES and ECDH with the SHA-224 KDF.
            for algorithm in [SecKeyAlgorithm.eciesEncryptionStandardX963SHA224AESGCM, .eciesEncryptionCofactorVariableIVX963SHA224AESGCM] {
                let sealed = try #require(SecKeyCreateEncryptedData(publicKey, algorithm, message as CFData, &error) as Data?)
                #expect(SecKeyCreateDecryptedData(key, algorithm, sealed as CFData, &error) as Data? == message, "\(algorithm.rawValue)")
                #expect(SecKeyIsAlgorithmSupported(key, .decrypt, algorithm))
            }
            let other = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
            let otherPublic = try #require(SecKeyCopyPublicKey(other))
            let parameters = [kSecKeyKeyExchangeParameterRequestedSize as String: 32] as CFDictionary
            let mine = try #require(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeCofactorX963SHA224, otherPublic, parameters, &error) as Data?)
            #expect(SecKeyCopyKeyExchangeResult(other, .ecdhKeyExchangeCofactorX963SHA224, publicKey, parameters, &error) as Data? == mine)
            #expect(mine.count == 32)
            // RSA algorithms are not the token's.
            #expect(!SecKeyIsAlgorithmSupported(key, .sign, .rsaSignatureMessagePKCS1v15SHA224))
            #expect(SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA224, message as CFData, &error) == nil)
            #expect(cfError(error) == -50)
        }
    }

    @Test func theClientNeverReceivesATokenKeysPrivateKey() throws {
        let kc = try TestKeychain(.daemon)
        let daemon = try #require(kc.daemon)
        let proxy = try RecordingProxy(to: daemon.socketPath, at: kc.home + "-proxy.sock")
        defer { proxy.stop() }
        let context = DaemonKeychain(client: DaemonClient(socketPath: proxy.path), claim: ["com.example.app"])
        let publicPoint = try KeychainConnector.$override.withValue(context) { () throws -> Data in
            let key = try #require(tokenKey("watched"))
            var error: Unmanaged<CFError>?
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            let message = Data("over the socket".utf8)
            let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            let sealed = try #require(SecKeyCreateEncryptedData(publicKey, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, message as CFData, &error) as Data?)
            #expect(SecKeyCreateDecryptedData(key, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, sealed as CFData, &error) as Data? == message)
            let (status, found) = copy([
                kSecClass as String: kSecClassKey, kSecReturnRef as String: true, kSecReturnAttributes as String: true,
                kSecReturnPersistentRef as String: true,
            ])
            #expect(status == errSecSuccess)
            #expect((found as? [String: Any])?[kSecValueRef as String] is SecKey)
            // Even asking for the data directly gives nothing that holds the key.
            let (dataStatus, data) = copy([kSecClass as String: kSecClassKey, kSecReturnData as String: true])
            #expect(dataStatus == errSecSuccess)
            #expect((data as? Data)?.isEmpty == true)
            return try external(publicKey)
        }
        // The private scalar, read from the keychain files by the engine in this process.
        var query = ItemQuery(itemClass: .key)
        query.returns.data = true
        query.sync = .any
        let privateBytes = try #require(try kc.engine.findStored(query, caller: .unrestricted(defaultGroup: "x")).first?.data)
        #expect(privateBytes.count == 97)
        let scalar = privateBytes.suffix(32)
        let traffic = proxy.recorded
        #expect(traffic.range(of: publicPoint) != nil, "the recording saw the public key")
        #expect(traffic.range(of: scalar) == nil, "the private key crossed the socket")
    }
}
