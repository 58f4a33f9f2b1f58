import Foundation
import KeychainServices
import Testing

/// `SecItemExport`'s key parameters with a passphrase.
func exportParameters(_ passphrase: AnyObject?) -> SecItemImportExportKeyParameters {
    var parameters = SecItemImportExportKeyParameters()
    parameters.version = UInt32(SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION)
    parameters.passphrase = passphrase.map { Unmanaged.passUnretained($0) }
    return parameters
}

/// Runs `SecItemExport`; the status and the bytes.
func export(_ items: AnyObject, _ format: SecExternalFormat, _ flags: SecItemImportExportFlags = [], passphrase: AnyObject?) -> (OSStatus, Data?) {
    var parameters = exportParameters(passphrase)
    var data: CFData?
    let status = withExtendedLifetime(passphrase) { SecItemExport(items, format, flags, &parameters, &data) }
    return (status, data as Data?)
}

@Suite struct PKCS12ExportTests {
    @Test(arguments: [("ec", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]), ("rsa", ["-newkey", "rsa:2048"])])
    func identitiesExportAsPKCS12ThatOpenSSLAndSecPKCS12ImportRead(name: String, key: [String]) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLIdentity(bench, name, key: key, legacy: false)
        let ca = try OpenSSLCertificate.make(bench, name: "ca", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], subject: "/CN=Extra CA")
        let identity = try #require(importPKCS12(try made.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        let extra = try #require(SecCertificateCreateWithData(nil, ca.der as CFData))

        let (status, exported) = export([identity, extra] as NSArray, .formatPKCS12, passphrase: "export secret" as NSString)
        #expect(status == errSecSuccess)
        let p12 = try #require(exported)
        try bench.write("out.p12", p12)
        try bench.write("pw", Data("export secret\n".utf8))

        // openssl opens it with the password from a file: OpenSSL 3's default profile, the same key and certificates.
        let info = try bench.openssl("pkcs12", "-in", "out.p12", "-passin", "file:pw", "-info", "-nodes", "-out", "info.pem")
        #expect(info.status == 0, "\(info.output)")
        #expect(info.output.contains("MAC: sha256, Iteration 2048"), "\(info.output)")
        #expect(info.output.contains("PKCS7 Encrypted data: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256"), "\(info.output)")
        #expect(info.output.contains("Shrouded Keybag: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256"), "\(info.output)")
        #expect(try bench.openssl("pkcs12", "-in", "out.p12", "-passin", "file:pw", "-nodes", "-nocerts", "-out", "key.pem").status == 0)
        #expect(try bench.openssl("pkey", "-in", "key.pem", "-pubout").output == (try bench.openssl("pkey", "-in", "\(name).key", "-pubout").output))
        #expect(try bench.openssl("pkcs12", "-in", "out.p12", "-passin", "file:pw", "-nokeys", "-clcerts", "-out", "leaf.pem").status == 0)
        #expect(try bench.openssl("x509", "-in", "leaf.pem", "-outform", "DER", "-out", "leaf.der").status == 0)
        #expect(try bench.read("leaf.der") == (try made.certificateDER))
        #expect(try bench.openssl("pkcs12", "-in", "out.p12", "-passin", "file:pw", "-nokeys", "-cacerts", "-out", "ca.pem").status == 0)
        #expect(try bench.openssl("x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca-back.der").status == 0)
        #expect(try bench.read("ca-back.der") == ca.der)
        // The friendly name: the key's label, else the certificate's subject summary.
        #expect(try bench.read("leaf.pem").range(of: Data("friendlyName: \(name).example".utf8)) != nil)

        // SecPKCS12Import reads it back: the same key and certificate, the extra certificate in the chain.
        let (back, items) = importPKCS12(p12, "export secret")
        #expect(back == errSecSuccess)
        let again = try #require(items.first?[kSecImportItemIdentity as String] as? SecIdentity)
        var originalKey: SecKey?, backKey: SecKey?, backCertificate: SecCertificate?
        #expect(SecIdentityCopyPrivateKey(identity, &originalKey) == errSecSuccess)
        #expect(SecIdentityCopyPrivateKey(again, &backKey) == errSecSuccess)
        #expect(try external(try #require(backKey)) == (try external(try #require(originalKey))))
        #expect(SecIdentityCopyCertificate(again, &backCertificate) == errSecSuccess)
        #expect(SecCertificateCopyData(try #require(backCertificate)) as Data == (try made.certificateDER))
        #expect((items.first?[kSecImportItemCertChain as String] as? [SecCertificate])?.count == 2)
        #expect(items.first?[kSecImportItemLabel as String] as? String == "\(name).example")
        // A wrong password: errSecAuthFailed; openssl refuses it too.
        #expect(importPKCS12(p12, "wrong").0 == errSecAuthFailed)
        try bench.write("wrong", Data("wrong\n".utf8))
        #expect(try bench.openssl("pkcs12", "-in", "out.p12", "-passin", "file:wrong", "-nodes", "-noout").status != 0)
        // The passphrase may be UTF-8 data.
        let fromData = export(identity, .formatPKCS12, passphrase: Data("export secret".utf8) as NSData)
        #expect(fromData.0 == errSecSuccess)
        #expect(importPKCS12(try #require(fromData.1), "export secret").0 == errSecSuccess)
    }

    /// Several identities in one file (as SecItemExport writes them) come back from SecPKCS12Import whole: one
    /// dictionary per identity, in the file's order, each chain holding every certificate of the file, its own first.
    @Test func severalIdentitiesComeBackFromSecPKCS12Import() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let ec = try OpenSSLIdentity(bench, "first", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], legacy: false)
        let rsa = try OpenSSLIdentity(bench, "second", key: ["-newkey", "rsa:2048"], legacy: false)
        let first = try #require(importPKCS12(try ec.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        let second = try #require(importPKCS12(try rsa.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        let (status, exported) = export([first, second] as NSArray, .formatPKCS12, passphrase: "both" as NSString)
        #expect(status == errSecSuccess)

        let (back, items) = importPKCS12(try #require(exported), "both")
        #expect(back == errSecSuccess)
        #expect(items.count == 2)
        for (item, made) in zip(items, [ec, rsa]) {
            let identity = try #require(item[kSecImportItemIdentity as String] as? SecIdentity)
            var certificate: SecCertificate?
            #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
            #expect(SecCertificateCopyData(try #require(certificate)) as Data == (try made.certificateDER))
            let chain = try #require(item[kSecImportItemCertChain as String] as? [SecCertificate])
            #expect(chain.count == 2)
            #expect(chain.first.map { SecCertificateCopyData($0) as Data } == (try made.certificateDER))
        }
    }

    /// The reader's limits (32 private keys, 64 certificates in one file) hold at their edge, and a file past either
    /// is refused whole with errSecParam: never read in part, the rest silently dropped.
    @Test func aFilePastTheReadersLimitsIsRefusedWhole() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        var identities: [SecIdentity] = []
        for index in 0..<33 {
            let made = try OpenSSLIdentity(bench, "id\(index)", key: ec, legacy: false)
            identities.append(try #require(importPKCS12(try made.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity))
        }
        // Extra certificates, all signed by one key: one openssl run each.
        #expect(try bench.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "extra.key").status == 0)
        var extras: [SecCertificate] = []
        for index in 0..<33 {
            #expect(
                try bench.openssl(
                    "req", "-x509", "-new", "-key", "extra.key", "-subj", "/CN=extra \(index)", "-days", "2",
                    "-outform", "DER", "-out", "extra\(index).der"
                ).status == 0)
            extras.append(try #require(SecCertificateCreateWithData(nil, try bench.read("extra\(index).der") as CFData)))
        }
        func exported(_ items: [AnyObject]) throws -> Data {
            let (status, data) = export(items as NSArray, .formatPKCS12, passphrase: "many" as NSString)
            #expect(status == errSecSuccess)
            return try #require(data)
        }
        let keysAtTheLimit = Array(identities.prefix(32))

        // 32 keys and 32 + 32 = 64 certificates: everything comes back.
        let full = importPKCS12(try exported(keysAtTheLimit + Array(extras.prefix(32))), "many")
        #expect(full.0 == errSecSuccess)
        #expect(full.1.count == 32)
        #expect(full.1.first.flatMap { $0[kSecImportItemCertChain as String] as? [SecCertificate] }?.count == 64)
        // A 33rd key, or a 65th certificate: nothing comes back.
        let keyTooMany = importPKCS12(try exported(identities), "many")
        #expect(keyTooMany.0 == errSecParam)
        #expect(keyTooMany.1.isEmpty)
        let certificateTooMany = importPKCS12(try exported(keysAtTheLimit + extras), "many")
        #expect(certificateTooMany.0 == errSecParam)
        #expect(certificateTooMany.1.isEmpty)
    }

    @Test func exportFormatsAndRefusalsHaveApplesCodes() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLIdentity(bench, "formats", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], legacy: false)
        let identity = try #require(importPKCS12(try made.p12, "p12 secret").1.first?[kSecImportItemIdentity as String] as? SecIdentity)
        var certificate: SecCertificate?, privateKey: SecKey?
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
        let cert = try #require(certificate), key = try #require(privateKey)
        let publicKey = try #require(SecKeyCopyPublicKey(key))

        // PKCS#12 needs a passphrase: errSecPassphraseRequired (-25260); so does the default for an identity.
        #expect(export(identity, .formatPKCS12, passphrase: nil).0 == errSecPassphraseRequired)
        #expect(export(identity, .formatUnknown, passphrase: nil).0 == errSecPassphraseRequired)
        #expect(export(identity, .formatPKCS12, passphrase: NSNumber(value: 1)).0 == errSecParam)
        // One certificate as DER, or PEM with kSecItemPemArmour; certificates as a PEM sequence.
        #expect(export(cert, .formatX509Cert, passphrase: nil).1 == (try made.certificateDER))
        #expect(export(cert, .formatUnknown, passphrase: nil).1 == (try made.certificateDER))
        #expect(export(identity, .formatX509Cert, passphrase: nil).1 == (try made.certificateDER))
        let pem = try #require(export(cert, .formatX509Cert, .pemArmour, passphrase: nil).1)
        #expect(pem == (try bench.read("formats.crt")))
        #expect(export([cert, cert] as NSArray, .formatPEMSequence, passphrase: nil).1 == pem + pem)
        #expect(export([cert, cert] as NSArray, .formatX509Cert, passphrase: nil).0 == errSecParam)
        // A public key in OpenSSL's format: its SubjectPublicKeyInfo, as openssl writes it.
        #expect(export(publicKey, .formatOpenSSL, passphrase: nil).1 == (try bench.read("formats.pub")))
        #expect(
            export(publicKey, .formatOpenSSL, .pemArmour, passphrase: nil).1
                == Data((try bench.openssl("pkey", "-in", "formats.key", "-pubout").output).utf8))
        // A bare private key does not leave this way: errSecUnimplemented (-4).
        #expect(export(key, .formatOpenSSL, passphrase: nil).0 == errSecUnimplemented)
        #expect(export(key, .formatPKCS12, passphrase: "pw" as NSString).0 == errSecUnimplemented)
        // Formats not written here: errSecUnsupportedFormat (-25256); items that are not keychain objects: errSecParam.
        #expect(export(cert, .formatPKCS7, passphrase: nil).0 == errSecUnsupportedFormat)
        #expect(export(cert, .formatWrappedPKCS8, passphrase: nil).0 == errSecUnsupportedFormat)
        #expect(export("text" as NSString, .formatX509Cert, passphrase: nil).0 == errSecParam)
        #expect(export([] as NSArray, .formatPEMSequence, passphrase: nil).0 == errSecParam)
    }
}
