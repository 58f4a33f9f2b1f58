import Foundation
import KeychainTestSupport
import KeychainServices
import Testing

/// A certificate openssl made in a workbench, with what openssl says about it.
struct OpenSSLCertificate {
    let der: Data
    /// The subjectPublicKey bytes (X9.63 point or PKCS#1 DER), from openssl's SubjectPublicKeyInfo.
    let publicKeyBytes: Data
    let serialHex: String

    /// A self-signed certificate (`-x509`) with the given subject and extra `-addext` lines.
    static func make(_ bench: Workbench, name: String, key: [String], subject: String, extensions: [String] = []) throws -> OpenSSLCertificate {
        var arguments = ["req", "-x509", "-nodes", "-days", "30", "-keyout", "\(name).key", "-out", "\(name).der", "-outform", "DER", "-subj", subject]
        arguments += key
        for e in extensions { arguments += ["-addext", e] }
        let made = try bench.run("openssl", arguments)
        guard made.status == 0 else { throw KeyTestError("openssl req failed: \(made.output)") }
        #expect(try bench.openssl("pkey", "-in", "\(name).key", "-pubout", "-outform", "DER", "-out", "\(name).pub").status == 0)
        let spkiBytes = try bench.read("\(name).pub")
        // An EC point is the last 65 bytes of a P-256 SPKI; an RSA key's PKCS#1 form comes from openssl itself.
        var publicKey = spkiBytes.suffix(65)
        if key.contains("rsa:2048") {
            #expect(try bench.openssl("rsa", "-pubin", "-inform", "DER", "-in", "\(name).pub", "-RSAPublicKey_out", "-outform", "DER", "-out", "\(name).pkcs1").status == 0)
            publicKey = try bench.read("\(name).pkcs1")
        }
        let serial = try bench.openssl("x509", "-inform", "DER", "-in", "\(name).der", "-noout", "-serial").output
        return OpenSSLCertificate(
            der: try bench.read("\(name).der"), publicKeyBytes: Data(publicKey),
            serialHex: String(serial.dropFirst("serial=".count)).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

func sha1(_ bench: Workbench, _ data: Data) throws -> Data {
    try bench.write("to-hash", data)
    return hex(try bench.openssl("dgst", "-sha1", "-r", "to-hash").output.prefix(40).description)
}

func hexString(_ data: Data) -> String { data.map { String(format: "%02X", $0) }.joined() }

@Suite struct SecCertificateTests {
    @Test func certificatesReadAsAppleReadsThem() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLCertificate.make(
            bench, name: "alice", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
            subject: "/CN=Alice  Example/O=Example Org/emailAddress=alice@example.com",
            extensions: ["subjectAltName=email:alice@example.org"])
        let certificate = try #require(SecCertificateCreateWithData(nil, made.der as CFData))
        #expect(SecCertificateCopyData(certificate) as Data == made.der)
        #expect(SecCertificateCopySubjectSummary(certificate) as String? == "Alice  Example")
        var commonName: CFString?
        #expect(SecCertificateCopyCommonName(certificate, &commonName) == errSecSuccess)
        #expect(commonName as String? == "Alice  Example")
        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(certificate, &emails) == errSecSuccess)
        #expect(emails as? [String] == ["alice@example.com", "alice@example.org"])
        var error: Unmanaged<CFError>?
        let serial = try #require(SecCertificateCopySerialNumberData(certificate, &error) as Data?)
        #expect(hexString(serial).hasSuffix(made.serialHex.uppercased()))
        let key = try #require(SecCertificateCopyKey(certificate))
        #expect(try external(key) == made.publicKeyBytes)
        // Normalized names: one space, upper case, UTF8String.
        let subject = try #require(SecCertificateCopyNormalizedSubjectSequence(certificate) as Data?)
        #expect(subject.first == 0x30)
        #expect(subject.range(of: Data("ALICE EXAMPLE".utf8)) != nil)
        #expect(subject.range(of: Data("Alice".utf8)) == nil)
        #expect(SecCertificateCopyNormalizedIssuerSequence(certificate) as Data? == subject, "self-signed")
    }

    @Test(arguments: Backend.allCases)
    func addingACertificateDerivesApplesAttributes(_ backend: Backend) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLCertificate.make(
            bench, name: "rsa", key: ["-newkey", "rsa:2048"], subject: "/CN=rsa.example.com/O=Example",
            extensions: ["subjectKeyIdentifier=hash"])
        let certificate = try #require(SecCertificateCreateWithData(nil, made.der as CFData))
        let kc = try TestKeychain(backend)
        try kc.run {
            #expect(add([kSecValueRef as String: certificate, kSecAttrLabel as String: "first"]) == errSecSuccess)
            // The same certificate under another label is a duplicate (class, issuer and serial number).
            #expect(
                add([
                    kSecClass as String: kSecClassCertificate, kSecValueRef as String: certificate,
                    kSecAttrLabel as String: "second",
                ]) == errSecDuplicateItem)
            // A key is not a certificate.
            #expect(add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: try #require(SecCertificateCopyKey(certificate))]) == errSecParam)

            let (status, found) = copy([
                kSecClass as String: kSecClassCertificate, kSecReturnAttributes as String: true,
                kSecReturnRef as String: true, kSecReturnData as String: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = try #require(found as? [String: Any])
            #expect(attributes[kSecAttrCertificateType as String] as? Int == 3)
            #expect(attributes[kSecAttrCertificateEncoding as String] as? Int == 3)
            #expect(attributes[kSecAttrLabel as String] as? String == "first")
            #expect(attributes[kSecValueData as String] as? Data == made.der)
            let serial = try #require(attributes[kSecAttrSerialNumber as String] as? Data)
            #expect(hexString(serial).hasSuffix(made.serialHex.uppercased()))
            #expect(attributes[kSecAttrPublicKeyHash as String] as? Data == (try sha1(bench, made.publicKeyBytes)))
            #expect((attributes[kSecAttrSubjectKeyID as String] as? Data)?.count == 20)
            #expect(attributes[kSecAttrSubject as String] as? Data == attributes[kSecAttrIssuer as String] as? Data)
            let ref = try #require(attributes[kSecValueRef as String] as? SecCertificate)
            #expect(SecCertificateCopyData(ref) as Data == made.der)

            // The public key hash is the application label of the key: the same SHA-1 as SecKey computes.
            let key = try #require(SecCertificateCopyKey(certificate))
            let keyAttributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
            #expect(keyAttributes[kSecAttrApplicationLabel as String] as? Data == attributes[kSecAttrPublicKeyHash as String] as? Data)

            // Found by the derived attributes, returned as a SecCertificate.
            let (byIssuer, refOnly) = copy([
                kSecClass as String: kSecClassCertificate, kSecAttrIssuer as String: try #require(attributes[kSecAttrIssuer as String]),
                kSecAttrSerialNumber as String: serial, kSecReturnRef as String: true,
            ])
            #expect(byIssuer == errSecSuccess)
            #expect((refOnly as? SecCertificate).map { SecCertificateCopyData($0) as Data } == made.der)
            #expect(SecItemDelete([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "first"] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecClass as String: kSecClassCertificate]).0 == errSecItemNotFound)
        }
    }

    @Test func malformedAndMutatedCertificatesNeverCrash() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let made = try OpenSSLCertificate.make(
            bench, name: "fuzz", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
            subject: "/CN=fuzz.example/emailAddress=f@example.com", extensions: ["subjectAltName=DNS:fuzz.example,email:g@example.com"])
        for garbage in [Data(), Data([0x30]), Data([0x30, 0x82, 0xFF, 0xFF]), made.der.prefix(made.der.count / 2), Data("not a certificate".utf8)] {
            #expect(SecCertificateCreateWithData(nil, garbage as CFData) == nil)
        }
        var rng = SeededGenerator(seed: 10_000)
        var parsed = 0
        for _ in 0..<10_000 {
            var bytes = [UInt8](made.der)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: i)
                default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: i)
                }
            }
            guard let certificate = SecCertificateCreateWithData(nil, Data(bytes) as CFData) else { continue }
            parsed += 1
            // Everything that reads a parsed certificate copes with what the mutation left.
            _ = SecCertificateCopySubjectSummary(certificate)
            _ = SecCertificateCopyKey(certificate)
            _ = SecCertificateCopyNormalizedSubjectSequence(certificate)
            _ = SecCertificateCopyNormalizedIssuerSequence(certificate)
            var emails: CFArray?
            _ = SecCertificateCopyEmailAddresses(certificate, &emails)
        }
        #expect(parsed > 0, "some mutations (inside strings, say) still parse")
        #expect(parsed < 10_000)
    }
}
