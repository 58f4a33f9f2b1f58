import Foundation
import KeychainServices
import Testing

/// A key and certificate openssl made, exported as PKCS#12.
struct OpenSSLIdentity {
    let bench: Workbench
    let name: String

    /// `openssl req -x509` for the key, then `openssl pkcs12 -export` (with `-legacy` for 3DES/RC2).
    init(_ bench: Workbench, _ name: String, key: [String], legacy: Bool) throws {
        self.bench = bench
        self.name = name
        _ = try OpenSSLCertificate.make(bench, name: name, key: key, subject: "/CN=\(name).example/O=Example")
        #expect(try bench.openssl("x509", "-inform", "DER", "-in", "\(name).der", "-out", "\(name).crt").status == 0)
        var export = [
            "pkcs12", "-export", "-inkey", "\(name).key", "-in", "\(name).crt", "-name", "\(name) identity",
            "-passout", "pass:p12 secret", "-out", "\(name).p12",
        ]
        if legacy { export.append("-legacy") }
        let made = try bench.run("openssl", export)
        #expect(made.status == 0, "\(made.output)")
    }

    var p12: Data { get throws { try bench.read("\(name).p12") } }
    var certificateDER: Data { get throws { try bench.read("\(name).der") } }
}

func importPKCS12(_ data: Data, _ password: String?) -> (OSStatus, [[String: Any]]) {
    var items: CFArray?
    var options: [String: Any] = [:]
    if let password { options[kSecImportExportPassphrase as String] = password }
    let status = SecPKCS12Import(data as CFData, options as CFDictionary, &items)
    return (status, (items as? [[String: Any]]) ?? [])
}

@Suite struct SecIdentityTests {
    @Test(arguments: [
        ("ec", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], false),
        ("ec-legacy", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], true),
        ("rsa", ["-newkey", "rsa:2048"], false),
        ("rsa-legacy", ["-newkey", "rsa:2048"], true),
    ])
    func pkcs12FilesFromOpenSSLImport(name: String, key: [String], legacy: Bool) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLIdentity(bench, name, key: key, legacy: legacy)
        let (status, items) = importPKCS12(try made.p12, "p12 secret")
        #expect(status == errSecSuccess)
        let item = try #require(items.first)
        #expect(item[kSecImportItemLabel as String] as? String == "\(name) identity")
        let identity = try #require(item[kSecImportItemIdentity as String] as? SecIdentity)
        var certificate: SecCertificate?
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        #expect(SecCertificateCopyData(try #require(certificate)) as Data == (try made.certificateDER))
        #expect((item[kSecImportItemCertChain as String] as? [SecCertificate])?.count == 1)
        var privateKey: SecKey?
        #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
        let keyRef = try #require(privateKey)
        // The key is the certificate's: the key ID is the public key hash, and a signature openssl checks.
        let attributes = try #require(SecKeyCopyAttributes(keyRef) as? [String: Any])
        #expect(item[kSecImportItemKeyID as String] as? Data == attributes[kSecAttrApplicationLabel as String] as? Data)
        let message = Data("signed with an imported key".utf8)
        let algorithm: SecKeyAlgorithm = name.hasPrefix("ec") ? .ecdsaSignatureMessageX962SHA256 : .rsaSignatureMessagePKCS1v15SHA256
        var error: Unmanaged<CFError>?
        try bench.write("msg", message)
        try bench.write("sig", try #require(SecKeyCreateSignature(keyRef, algorithm, message as CFData, &error) as Data?))
        #expect(try bench.openssl("x509", "-in", "\(name).crt", "-pubkey", "-noout", "-out", "pub.pem").status == 0)
        #expect(try bench.openssl("dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig", "msg").output.contains("Verified OK"))
    }

    @Test func badPKCS12FilesGetApplesCodes() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLIdentity(bench, "bad", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], legacy: false)
        let data = try made.p12
        #expect(importPKCS12(data, "wrong").0 == errSecAuthFailed)
        #expect(importPKCS12(data, nil).0 == errSecParam)
        #expect(importPKCS12(data.prefix(data.count / 2), "p12 secret").0 == errSecDecode)
        #expect(importPKCS12(Data(), "p12 secret").0 == errSecDecode)
        #expect(importPKCS12(Data("not pkcs12".utf8), "p12 secret").0 == errSecDecode)
        // Every truncation fails cleanly.
        for length in stride(from: 0, to: data.count, by: 7) {
            #expect(importPKCS12(data.prefix(length), "p12 secret").0 != errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases)
    func identitiesAreACertificateWithItsKey(_ backend: Backend) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLIdentity(bench, "id", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], legacy: false)
        let identity = try #require(importPKCS12(try made.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        let kc = try TestKeychain(backend)
        try kc.run {
            #expect(copy([kSecClass as String: kSecClassIdentity]).0 == errSecItemNotFound)
            #expect(add([kSecValueRef as String: identity, kSecAttrLabel as String: "my identity"]) == errSecSuccess)
            // Both halves are in the keychain.
            #expect(copy([kSecClass as String: kSecClassCertificate]).0 == errSecSuccess)
            #expect(copy([kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]).0 == errSecSuccess)
            let (status, found) = copy([kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true])
            #expect(status == errSecSuccess)
            let stored = try #require(found as? SecIdentity)
            var certificate: SecCertificate?
            _ = SecIdentityCopyCertificate(stored, &certificate)
            #expect(SecCertificateCopyData(try #require(certificate)) as Data == (try made.certificateDER))
            var key: SecKey?
            _ = SecIdentityCopyPrivateKey(stored, &key)
            var error: Unmanaged<CFError>?
            let privateKey = try #require(key)
            let storedCertificate = try #require(certificate)
            let publicKey = try #require(SecCertificateCopyKey(storedCertificate))
            let signature = try #require(SecKeyCreateSignature(privateKey, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, signature as CFData, &error))
            // Found by a certificate attribute, with attributes; the same identity again is a duplicate.
            let (byLabel, attributes) = copy([
                kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "my identity",
                kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            #expect(byLabel == errSecSuccess)
            #expect((attributes as? [[String: Any]])?.count == 1)
            #expect(add([kSecValueRef as String: identity]) == errSecDuplicateItem)
            // The identity object finds exactly its item; deleting it deletes its certificate and its key.
            #expect(copy([kSecValueRef as String: stored]).0 == errSecSuccess)
            #expect(SecItemDelete([kSecValueRef as String: stored] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecClass as String: kSecClassCertificate]).0 == errSecItemNotFound)
            #expect(copy([kSecClass as String: kSecClassKey]).0 == errSecItemNotFound)
            #expect(SecItemDelete([kSecValueRef as String: identity] as CFDictionary) == errSecItemNotFound)
            // A certificate alone is no identity.
            #expect(add([kSecValueRef as String: try #require(certificate)]) == errSecSuccess)
            #expect(copy([kSecClass as String: kSecClassIdentity]).0 == errSecItemNotFound)
        }
    }
}
