import Foundation
import Testing

extension Sandbox {
    /// Runs openssl with file names relative to the sandbox root; fails the test when openssl does.
    @discardableResult
    func openssl(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let absolute = arguments.map { $0.hasPrefix("@") ? root + "/" + $0.dropFirst() : $0 }
        let result = try launch("/usr/bin/env", ["openssl"] + absolute)
        #expect(result.status == 0, "openssl \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    func file(_ name: String) throws -> String { try String(contentsOfFile: root + "/" + name, encoding: .utf8) }
    func bytes(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: root + "/" + name)) }
}

/// The hex of an openssl `-fingerprint` line, without colons.
func fingerprint(_ line: String) -> String {
    String(line.split(separator: "=").last ?? "").replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite("security: certificates, identities, import and export of PEM/DER/PKCS#12, verify-cert")
struct CertificateToolTests {
    /// A self-signed P-256 certificate and its key, as PEM files `cert.pem` and `key.pem`.
    func makeCertificate(_ kc: Sandbox) throws {
        try kc.openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30",
            "-keyout", "@key.pem", "-out", "@cert.pem", "-subj", "/CN=Tool Test/emailAddress=tool@example.com")
    }

    @Test(arguments: ToolMode.allCases) func certificatesAreAddedFoundExportedAndDeleted(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try makeCertificate(kc)
            try kc.succeed(["add-certificates", kc.root + "/cert.pem"])
            let again = try kc.run(["add-certificates", kc.root + "/cert.pem"])
            #expect(again.status == 45)
            #expect(again.stderr == "security: SecCertificateAddToKeychain: The specified item already exists in the keychain.\n")

            // -p prints the PEM openssl wrote, byte for byte.
            let pem = try kc.run(["find-certificate", "-c", "Tool", "-p"])
            #expect(pem.status == 0)
            #expect(pem.stdout == (try kc.file("cert.pem")))
            // -Z prints both hashes, as openssl computes them, then the attributes.
            let sha256 = fingerprint(try kc.openssl("x509", "-in", "@cert.pem", "-noout", "-fingerprint", "-sha256"))
            let sha1 = fingerprint(try kc.openssl("x509", "-in", "@cert.pem", "-noout", "-fingerprint", "-sha1"))
            let found = try kc.run(["find-certificate", "-e", "TOOL@example.com", "-Z"])
            #expect(found.status == 0)
            #expect(found.stdout.hasPrefix("SHA-256 hash: \(sha256)\nSHA-1 hash: \(sha1)\nkeychain: \"\(kc.home)/keychain-2.db\"\nversion: 512\nclass: 0x80001000 \nattributes:\n"))
            #expect(found.stdout.contains("    \"labl\"<blob>=\"Tool Test\"\n"))
            #expect(found.stdout.contains("    \"ctyp\"<uint32>=0x00000003 \n"))
            let missing = try kc.run(["find-certificate", "-c", "nobody"])
            #expect(missing.status == 44)
            #expect(missing.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")

            // export: PEM (the default) and one DER certificate.
            try kc.succeed(["export", "-t", "certs", "-o", kc.root + "/out.pem"])
            #expect(try kc.file("out.pem") == (try kc.file("cert.pem")))
            try kc.succeed(["export", "-t", "certs", "-f", "x509", "-o", kc.root + "/out.der"])
            try kc.openssl("x509", "-in", "@cert.pem", "-outform", "DER", "-out", "@cert.der")
            #expect(try kc.bytes("out.der") == (try kc.bytes("cert.der")))

            // delete-certificate by name, and a second delete finds nothing.
            try kc.succeed(["delete-certificate", "-c", "Tool Test"])
            #expect(try kc.run(["find-certificate", "-c", "Tool"]).status == 44)
            #expect(try kc.run(["delete-certificate", "-Z", sha1]).status == 44)
            // A DER certificate imports too, then deletes by its SHA-1.
            let imported = try kc.run(["import", kc.root + "/cert.der"])
            #expect(imported.stdout == "1 certificate imported.\n")
            try kc.succeed(["delete-certificate", "-Z", sha1.lowercased()])
        }
    }

    @Test(arguments: ToolMode.allCases) func pkcs12IdentitiesAndKeysImportAndListAsOnMacOS(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try makeCertificate(kc)
            try kc.openssl("pkcs12", "-export", "-inkey", "@key.pem", "-in", "@cert.pem", "-passout", "pass:p12 pw", "-out", "@id.p12")
            let wrong = try kc.run(["import", kc.root + "/id.p12", "-P", "nope"])
            #expect(wrong.status == 51)
            #expect(wrong.stderr.hasPrefix("security: SecKeychainItemImport: The user name or passphrase you entered is not correct.\n"))
            #expect(try kc.run(["import", kc.root + "/id.p12"], detached: true).status == 36, "no passphrase and no terminal")
            let imported = try kc.run(["import", kc.root + "/id.p12", "-P", "p12 pw", "-f", "pkcs12"])
            #expect(imported.status == 0)
            #expect(imported.stdout == "1 identity imported.\n")

            let sha1 = fingerprint(try kc.openssl("x509", "-in", "@cert.pem", "-noout", "-fingerprint", "-sha1"))
            let identities = try kc.run(["find-identity"])
            #expect(
                identities.stdout == """
                    Policy: X.509 Basic
                      Matching identities
                      1) \(sha1) "Tool Test" (CSSMERR_TP_NOT_TRUSTED)
                         1 identities found

                      Valid identities only
                         0 valid identities found

                    """)
            #expect(try kc.run(["find-identity", "-v", "-p", "ssl-server", "-s", "tool.example"]).stdout == "     0 valid identities found\n")

            // The public key exports as openssl derives it; private keys do not export.
            let publicKey = try kc.run(["export", "-t", "pubKeys"])
            #expect(publicKey.status == 0)
            #expect(publicKey.stdout == (try kc.openssl("pkey", "-in", "@key.pem", "-pubout")))
            #expect(try kc.run(["export", "-t", "privKeys", "-o", kc.root + "/k"]).status == 88)

            // The identity exports as PKCS#12 (the passphrase on standard input, never on the command line);
            // openssl reads back the same private key and certificate, with the password from a file.
            let exported = try kc.launch(
                kc.tool, ["export", "-t", "identities", "-f", "pkcs12", "--passphrase-stdin", "-o", kc.root + "/out.p12"],
                input: Data("export pw\n".utf8))
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(exported.stdout == "" && exported.stderr == "")
            try Data("export pw\n".utf8).write(to: URL(fileURLWithPath: kc.root + "/pw"))
            try kc.openssl("pkcs12", "-in", "@out.p12", "-passin", "file:" + kc.root + "/pw", "-nodes", "-out", "@back.pem")
            #expect(try kc.openssl("pkey", "-in", "@back.pem", "-pubout") == (try kc.openssl("pkey", "-in", "@key.pem", "-pubout")))
            #expect(fingerprint(try kc.openssl("x509", "-in", "@back.pem", "-noout", "-fingerprint", "-sha1")) == sha1)
            #expect(try kc.file("back.pem").contains("friendlyName: Tool Test"))
            // With -P (where other users can read it), and with no passphrase and no terminal to ask on (exit 36).
            #expect(try kc.run(["export", "-t", "identities", "-f", "pkcs12", "-P", "flag pw", "-o", kc.root + "/flag.p12"]).status == 0)
            try Data("flag pw\n".utf8).write(to: URL(fileURLWithPath: kc.root + "/flag-pw"))
            try kc.openssl("pkcs12", "-in", "@flag.p12", "-passin", "file:" + kc.root + "/flag-pw", "-nodes", "-nocerts", "-out", "@flag-key.pem")
            #expect(try kc.openssl("pkey", "-in", "@flag-key.pem", "-pubout") == (try kc.openssl("pkey", "-in", "@key.pem", "-pubout")))
            #expect(try kc.run(["export", "-t", "identities", "-f", "pkcs12", "-o", kc.root + "/none.p12"], detached: true).status == 36)
            #expect(!FileManager.default.fileExists(atPath: kc.root + "/none.p12"))
            // A wrong password does not open it; the tool imports it back into another keychain.
            try Data("wrong\n".utf8).write(to: URL(fileURLWithPath: kc.root + "/wrong"))
            #expect(try kc.launch("/usr/bin/env", ["openssl", "pkcs12", "-in", kc.root + "/out.p12", "-passin", "file:" + kc.root + "/wrong", "-nodes"]).status != 0)
            try withKeychain { other in
                try FileManager.default.copyItem(atPath: kc.root + "/out.p12", toPath: other.root + "/out.p12")
                let back = try other.launch(other.tool, ["import", other.root + "/out.p12", "--passphrase-stdin"], input: Data("export pw\n".utf8))
                #expect(back.stdout == "1 identity imported.\n", "\(back.stderr)")
            }

            // A PEM private key imports into another keychain as a key.
            try withKeychain { other in
                try FileManager.default.copyItem(atPath: kc.root + "/key.pem", toPath: other.root + "/key.pem")
                let key = try other.run(["import", other.root + "/key.pem"])
                #expect(key.stdout == "1 key imported.\n")
                #expect(try other.run(["export", "-t", "pubKeys"]).stdout == publicKey.stdout)
            }
        }
    }

    /// A PKCS#12 file with several identities (as `export -t identities -f pkcs12` writes) imports whole: every key,
    /// each with its certificate, and the CA certificate once; a key the keychain cannot hold fails the import
    /// with errSecUnsupportedFormat rather than being left out.
    @Test(arguments: ToolMode.allCases) func pkcs12WithSeveralIdentitiesImportsWhole(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            // A CA and two leaves it signed, one EC and one RSA.
            try kc.openssl(
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30",
                "-keyout", "@ca.key", "-out", "@ca.pem", "-subj", "/CN=Several CA")
            for (name, algorithm) in [("first", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]), ("second", ["-newkey", "rsa:2048"])] {
                let request = ["req", "-new"] + algorithm + ["-nodes", "-keyout", "@\(name).key", "-out", "@\(name).csr", "-subj", "/CN=Several \(name)"]
                let made = try kc.launch("/usr/bin/env", ["openssl"] + request.map { $0.hasPrefix("@") ? kc.root + "/" + $0.dropFirst() : $0 })
                #expect(made.status == 0, "\(made.stderr)")
                try kc.openssl("x509", "-req", "-in", "@\(name).csr", "-CA", "@ca.pem", "-CAkey", "@ca.key", "-days", "30", "-out", "@\(name).pem")
                try kc.openssl(
                    "pkcs12", "-export", "-inkey", "@\(name).key", "-in", "@\(name).pem", "-certfile", "@ca.pem",
                    "-passout", "pass:pw", "-out", "@\(name).p12")
                // The second file's CA certificate is already in the keychain: kept, not a duplicate.
                let imported = try kc.run(["import", kc.root + "/\(name).p12", "-P", "pw"])
                #expect(imported.status == 0, "\(imported.stderr)")
                #expect(imported.stdout == "1 identity imported.\n1 certificate imported.\n")
            }
            // The same identity again: its key is a duplicate (errSecDuplicateItem, exit 45).
            let again = try kc.run(["import", kc.root + "/first.p12", "-P", "pw"])
            #expect(again.status == 45)
            #expect(again.stderr.hasPrefix("security: SecKeychainItemImport: The specified item already exists in the keychain.\n"))
            let exported = try kc.run(["export", "-t", "identities", "-f", "pkcs12", "-P", "both", "-o", kc.root + "/both.p12"])
            #expect(exported.status == 0, "\(exported.stderr)")
            // openssl sees both keys and the three certificates.
            try Data("both\n".utf8).write(to: URL(fileURLWithPath: kc.root + "/both-pw"))
            let pem = try kc.openssl("pkcs12", "-in", "@both.p12", "-passin", "file:" + kc.root + "/both-pw", "-nodes")
            #expect(pem.components(separatedBy: "-----BEGIN PRIVATE KEY-----").count - 1 == 2)
            #expect(pem.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1 == 3)

            try withKeychain(mode) { other in
                try FileManager.default.copyItem(atPath: kc.root + "/both.p12", toPath: other.root + "/both.p12")
                let imported = try other.run(["import", other.root + "/both.p12", "-P", "both"])
                #expect(imported.status == 0, "\(imported.stderr)")
                #expect(imported.stdout == "2 identities imported.\n1 certificate imported.\n")
                let identities = try other.run(["find-identity"])
                #expect(identities.stdout.contains("\"Several first\""))
                #expect(identities.stdout.contains("\"Several second\""))
                #expect(identities.stdout.contains("2 identities found"))
                #expect(try other.run(["find-certificate", "-c", "Several CA"]).status == 0)
            }

            // An Ed25519 identity: refused whole, with the key's type named; nothing is added.
            try kc.openssl("req", "-x509", "-newkey", "ed25519", "-nodes", "-days", "30", "-keyout", "@ed.key", "-out", "@ed.pem", "-subj", "/CN=Edwards")
            try kc.openssl("pkcs12", "-export", "-inkey", "@ed.key", "-in", "@ed.pem", "-passout", "pass:pw", "-out", "@ed.p12")
            let refused = try kc.run(["import", kc.root + "/ed.p12", "-P", "pw"])
            #expect(refused.status == Int32(UInt32(bitPattern: -25256) & 0xff))
            #expect(refused.stderr.contains("A private key of the PKCS#12 file is ED25519; the keychain holds RSA and elliptic-curve keys only."))
            #expect(try kc.run(["find-certificate", "-c", "Edwards"]).status == 44)
        }
    }

    @Test(arguments: ToolMode.allCases) func verifyCertChecksTheChain(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try makeCertificate(kc)
            let untrusted = try kc.run(["verify-cert", "-c", kc.root + "/cert.pem"])
            #expect(untrusted.status == 1)
            #expect(untrusted.stdout == "")
            #expect(untrusted.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\nsecurity: The certificate is not trusted"))
            // Trusted when it is its own root.
            let trusted = try kc.run(["verify-cert", "-c", kc.root + "/cert.pem", "-r", kc.root + "/cert.pem"])
            #expect(trusted.status == 0)
            #expect(trusted.stdout == "...certificate verification successful.\n")
            #expect(try kc.run(["verify-cert", "-q", "-c", kc.root + "/cert.pem", "-r", kc.root + "/cert.pem"]).stdout == "")
            // A host name the certificate does not carry fails the SSL policy.
            #expect(try kc.run(["verify-cert", "-c", kc.root + "/cert.pem", "-r", kc.root + "/cert.pem", "-p", "ssl-server", "-s", "www.example.test"]).status == 1)
            #expect(try kc.run(["verify-cert"]).status == 2)
        }
    }
}
