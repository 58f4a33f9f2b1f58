import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Sandbox {
    /// A root CA, an intermediate and a leaf for www.example.test (P-256, by openssl) as `root.pem`, `int.pem`,
    /// `leaf.pem`, and `int-revokes-leaf.crl`, the intermediate's list revoking the leaf (`openssl ca -gencrl`).
    func makeChainAndCRL() throws {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Data("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n".utf8).write(to: URL(fileURLWithPath: root + "/ca.ext"))
        try Data("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nsubjectAltName=DNS:www.example.test\n".utf8).write(to: URL(fileURLWithPath: root + "/leaf.ext"))
        try openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "@root.key", "-out", "@root.pem", "-days", "3650", "-subj", "/CN=Tool Trust Root",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        for (name, issuer, subject, ext) in [("int", "root", "/CN=Tool Trust Intermediate", "ca.ext"), ("leaf", "int", "/CN=www.example.test", "leaf.ext")] {
            try openssl(["req", "-new"] + ec + ["-keyout", "@\(name).key", "-out", "@\(name).csr", "-subj", subject])
            try openssl([
                "x509", "-req", "-in", "@\(name).csr", "-CA", "@\(issuer).pem", "-CAkey", "@\(issuer).key", "-CAcreateserial",
                "-days", "365", "-extfile", "@\(ext)", "-out", "@\(name).pem",
            ])
        }
        let config = "[ca]\ndefault_ca=d\n[d]\ndatabase=\(root)/index.txt\ncrlnumber=\(root)/crlnumber\ndefault_md=sha256\ndefault_crl_days=30\n"
        try Data(config.utf8).write(to: URL(fileURLWithPath: root + "/ca.cnf"))
        try Data().write(to: URL(fileURLWithPath: root + "/index.txt"))
        try Data("01\n".utf8).write(to: URL(fileURLWithPath: root + "/crlnumber"))
        let ca = ["ca", "-config", "@ca.cnf", "-keyfile", "@int.key", "-cert", "@int.pem"]
        try openssl(ca + ["-revoke", "@leaf.pem"])
        try openssl(ca + ["-gencrl", "-out", "@int-revokes-leaf.crl"])
    }

    @discardableResult
    func openssl(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let absolute = arguments.map { $0.hasPrefix("@") ? root + "/" + $0.dropFirst() : $0 }
        let result = try launch("/usr/bin/env", ["openssl"] + absolute)
        #expect(result.status == 0, "openssl \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// The trust store variables: System Roots are `system-roots.pem` only; the admin's files are in the sandbox.
    var trustStore: [String: String] {
        [
            "KEYCHAIN_SYSTEM_ROOTS": root + "/system-roots.pem", "KEYCHAIN_SYSTEM_ROOTS_DIR": "",
            "KEYCHAIN_ADMIN_TRUST_SETTINGS": root + "/admin/trust-settings.plist", "KEYCHAIN_ADMIN_CRLS": root + "/admin-crls",
        ]
    }

    /// Runs the tool with ``trustStore``.
    func trusting(_ arguments: [String], as user: [String] = []) throws -> ToolResult {
        if user.isEmpty { return try run(arguments, environment: trustStore) }
        return try launch(user[0], Array(user.dropFirst()) + [tool] + arguments, environment: trustStore)
    }

    func setSystemRoots(_ names: [String]) throws {
        let text = try names.map { try String(contentsOfFile: root + "/" + $0, encoding: .utf8) }.joined()
        try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/system-roots.pem"), options: .atomic)
    }
}

@Suite("security: add-trusted-cert, remove-trusted-cert, dump-trust-settings, trust-settings-export/-import, add-crl, verify-cert -R")
struct TrustSettingsToolTests {
    static let setpriv = "/usr/bin/setpriv"
    static let asNobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]

    @Test func trustedCertsAreAddedDumpedAndRemoved() throws {
        try withKeychain { kc in
            try kc.makeChainAndCRL()
            try kc.setSystemRoots([])
            let chain = ["verify-cert", "-c", kc.root + "/leaf.pem", "-c", kc.root + "/int.pem"]
            let untrusted = try kc.trusting(chain)
            #expect(untrusted.status == 1)
            #expect(untrusted.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n"))
            let none = try kc.trusting(["dump-trust-settings"])
            #expect(none.status == 81)
            #expect(none.stdout == "")
            #expect(none.stderr == "security: SecTrustSettingsCopyCertificates: No Trust Settings were found.\n")

            // Trusted as a root by the user: the chain verifies.
            let added = try kc.trusting(["add-trusted-cert", "-k", "login.keychain", kc.root + "/root.pem"])
            #expect(added.status == 0)
            #expect(added.stdout == "" && added.stderr == "")
            #expect(try kc.trusting(chain).stdout == "...certificate verification successful.\n")
            #expect(try kc.trusting(["dump-trust-settings"]).stdout == "Number of trusted certs = 1\nCert 0: Tool Trust Root\n   Number of trust settings : 0\n")
            var info = stat()
            #expect(stat(kc.root + "/.config/keychain/trust-settings.plist", &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)

            // A deny limited to SSL for the host: the SSL evaluation fails with Apple's deny, basic still passes.
            try kc.succeed(["add-trusted-cert", "-r", "deny", "-p", "ssl", "-s", "www.example.test", kc.root + "/root.pem"])
            #expect(
                try kc.trusting(["dump-trust-settings"]).stdout == """
                    Number of trusted certs = 1
                    Cert 0: Tool Trust Root
                       Number of trust settings : 1
                       Trust Setting 0:
                          Policy OID            : SSL
                          Policy String         : www.example.test
                          Result Type           : kSecTrustSettingsResultDeny

                    """)
            let denied = try kc.trusting(chain + ["-p", "ssl-server", "-s", "www.example.test"])
            #expect(denied.status == 1)
            #expect(denied.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_APPLETP_TRUST_SETTING_DENY\nsecurity: The certificate \"Tool Trust Root\" is denied"))
            #expect(try kc.trusting(chain).status == 1, "the deny replaced the trustRoot setting, so basic has nothing to trust")
            // trustRoot needs a self-signed certificate.
            let notRoot = try kc.trusting(["add-trusted-cert", "-r", "trustRoot", kc.root + "/int.pem"])
            #expect(notRoot.status == 206)
            #expect(
                notRoot.stderr
                    == "security: Only a self-signed certificate can be a trusted root; use trustAsRoot (add-trusted-cert -r trustAsRoot) for an intermediate or a leaf.\nsecurity: SecTrustSettingsSetTrustSettings: OSStatus -50 (see `security error -50`)\n"
            )
            try kc.succeed(["add-trusted-cert", kc.root + "/int.pem"])
            #expect(try kc.trusting(chain).stdout == "...certificate verification successful.\n", "the intermediate is trusted as a root")
            #expect(try kc.trusting(["add-trusted-cert", "-r", "bogus", kc.root + "/int.pem"]).status == 2)

            try kc.succeed(["remove-trusted-cert", kc.root + "/root.pem"])
            let again = try kc.trusting(["remove-trusted-cert", kc.root + "/root.pem"])
            #expect(again.status == 44)
            #expect(again.stderr == "security: SecTrustSettingsRemoveTrustSettings: The specified item could not be found in the keychain.\n")
            #expect(try kc.trusting(["dump-trust-settings"]).stdout.hasPrefix("Number of trusted certs = 1\nCert 0: Tool Trust Intermediate\n"))

            // delete-certificate -t deletes the certificate's user trust settings with it.
            try kc.succeed(["add-certificates", kc.root + "/int.pem"])
            try kc.succeed(["delete-certificate", "-c", "Tool Trust Intermediate", "-t"])
            #expect(try kc.trusting(["dump-trust-settings"]).status == 81)

            // -s lists the System Roots, each a root with no constraints.
            try kc.setSystemRoots(["root.pem"])
            #expect(try kc.trusting(["dump-trust-settings", "-s"]).stdout == "Number of trusted certs = 1\nCert 0: Tool Trust Root\n   Number of trust settings : 0\n")
        }
    }

    @Test func exportedSettingsImportElsewhereAndStillDeny() throws {
        try withKeychain { kc in
            try kc.makeChainAndCRL()
            try kc.setSystemRoots(["root.pem"])
            try kc.succeed(["add-trusted-cert", "-r", "deny", kc.root + "/root.pem"])
            let export = try kc.trusting(["trust-settings-export", kc.root + "/settings.plist"])
            #expect(export.status == 0 && export.stdout == "" && export.stderr == "")
            let text = try String(contentsOfFile: kc.root + "/settings.plist", encoding: .utf8)
            let sha1 = fingerprint(try kc.openssl(["x509", "-in", "@root.pem", "-noout", "-fingerprint", "-sha1"]))
            #expect(text.contains("<key>trustVersion</key>") && text.contains("<key>trustList</key>") && text.contains("<key>\(sha1)</key>"))
            #expect(text.contains("<key>issuerName</key>") && text.contains("<key>modDate</key>") && text.contains("<key>kSecTrustSettingsResult</key>"))
            #expect(!text.contains("<key>certificate</key>"))
            #expect(try kc.trusting(["trust-settings-export", "-d", kc.root + "/admin.plist"]).stderr == "security: SecTrustSettingsCreateExternalRepresentation: No Trust Settings were found.\n")

            try withKeychain { other in
                try FileManager.default.copyItem(atPath: kc.root + "/settings.plist", toPath: other.root + "/settings.plist")
                try FileManager.default.copyItem(atPath: kc.root + "/system-roots.pem", toPath: other.root + "/system-roots.pem")
                let chain = ["verify-cert", "-c", kc.root + "/leaf.pem", "-c", kc.root + "/int.pem"]
                #expect(try other.trusting(chain).status == 0)
                try other.succeed(["trust-settings-import", other.root + "/settings.plist"])
                let denied = try other.trusting(chain)
                #expect(denied.status == 1)
                #expect(denied.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_APPLETP_TRUST_SETTING_DENY\n"))
                // The file names the certificate by hash; System Roots supply its name here.
                #expect(
                    try other.trusting(["dump-trust-settings"]).stdout == """
                        Number of trusted certs = 1
                        Cert 0: Tool Trust Root
                           Number of trust settings : 1
                           Trust Setting 0:
                              Result Type           : kSecTrustSettingsResultDeny

                        """)
                try Data("junk".utf8).write(to: URL(fileURLWithPath: other.root + "/junk.plist"))
                let junk = try other.trusting(["trust-settings-import", other.root + "/junk.plist"])
                #expect(junk.status == 82)
                #expect(junk.stderr.hasPrefix("security: SecTrustSettingsImportExternalRepresentation: The Trust Settings Record was corrupted.\n"))
            }
        }
    }

    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv to run the tool as another user"))
    func theAdminDomainNeedsRoot() throws {
        try withKeychain { kc in
            try kc.makeChainAndCRL()
            try kc.setSystemRoots(["root.pem"])
            chmod(kc.root, 0o755)
            let refused = try kc.trusting(["add-trusted-cert", "-d", "-r", "deny", kc.root + "/root.pem"], as: Self.asNobody)
            #expect(refused.status == 195)
            #expect(
                refused.stderr
                    == "security: SecTrustSettingsSetTrustSettings: Write permissions error.\nsecurity: Changing the admin trust settings (\(kc.root)/admin/trust-settings.plist) needs root: run the command with sudo, or change your own (user) trust settings instead.\n"
            )
            #expect(!FileManager.default.fileExists(atPath: kc.root + "/admin"))
            let crl = try kc.trusting(["add-crl", "-d", kc.root + "/int-revokes-leaf.crl"], as: Self.asNobody)
            #expect(crl.status == 195)

            // As root: the admin's deny fails the chain; dump -d shows it; the file is 0644.
            try #require(try kc.trusting(["add-trusted-cert", "-d", "-r", "deny", kc.root + "/root.pem"]).status == 0)
            var info = stat()
            #expect(stat(kc.root + "/admin/trust-settings.plist", &info) == 0)
            #expect(info.st_mode & 0o777 == 0o644)
            let chain = ["verify-cert", "-c", kc.root + "/leaf.pem", "-c", kc.root + "/int.pem"]
            #expect(try kc.trusting(chain).status == 1)
            #expect(try kc.trusting(["dump-trust-settings", "-d"]).stdout.hasPrefix("Number of trusted certs = 1\nCert 0: Tool Trust Root\n"))
            // The user's own trustRoot comes first.
            try kc.succeed(["add-trusted-cert", kc.root + "/root.pem"])
            #expect(try kc.trusting(chain).status == 0)
            #expect(try kc.trusting(["remove-trusted-cert", "-d", kc.root + "/root.pem"]).status == 0)
            // An admin CRL is for everyone: 0644 in the admin folder.
            #expect(try kc.trusting(["add-crl", "-d", kc.root + "/int-revokes-leaf.crl"]).stdout == "1 CRL added.\n")
            let installed = try FileManager.default.contentsOfDirectory(atPath: kc.root + "/admin-crls")
            #expect(installed.count == 1 && installed[0].hasSuffix(".crl"))
            #expect(stat(kc.root + "/admin-crls/" + installed[0], &info) == 0)
            #expect(info.st_mode & 0o777 == 0o644)
            #expect(try kc.trusting(chain + ["-R", "crl"]).stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_CERT_REVOKED\n"))
        }
    }

    @Test func verifyCertChecksRevocationWithCRLs() throws {
        try withKeychain { kc in
            try kc.makeChainAndCRL()
            try kc.setSystemRoots(["root.pem"])
            let chain = ["verify-cert", "-c", kc.root + "/leaf.pem", "-c", kc.root + "/int.pem"]
            // No CRL: verified, with a note per certificate that revocation was not checked.
            let unchecked = try kc.trusting(chain + ["-R", "crl"])
            #expect(unchecked.status == 0)
            #expect(unchecked.stdout == "...certificate verification successful.\n")
            #expect(
                unchecked.stderr == """
                    security: Revocation not checked for "www.example.test": no current CRL of its issuer is installed. Add the issuer's CRL with security add-crl.
                    security: Revocation not checked for "Tool Trust Intermediate": no current CRL of its issuer is installed. Add the issuer's CRL with security add-crl.

                    """)
            let ocsp = try kc.trusting(chain + ["-R", "ocsp", "-R", "offline"])
            #expect(ocsp.stderr.contains("network access for OCSP is disabled"))
            // Allowed to ask, but these certificates name no responder.
            let nobody = try kc.trusting(chain + ["-R", "ocsp"])
            #expect(nobody.status == 0)
            #expect(nobody.stderr.hasPrefix("security: Revocation not checked for \"www.example.test\": it names no OCSP responder. "))
            let required = try kc.trusting(chain + ["-R", "crl", "-R", "require"])
            #expect(required.status == 1)
            #expect(required.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_INCOMPLETE_REVOCATION_CHECK\nsecurity: Revocation not checked for \"www.example.test\""))
            // A CRL given on the command line revokes the leaf.
            let given = try kc.trusting(chain + ["--crl", kc.root + "/int-revokes-leaf.crl"])
            #expect(given.status == 1)
            #expect(given.stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_CERT_REVOKED\nsecurity: The certificate \"www.example.test\" was revoked on "))

            // Installed with add-crl (PEM or DER): revoked with -R crl, fine without.
            let added = try kc.trusting(["add-crl", kc.root + "/int-revokes-leaf.crl"])
            #expect(added.status == 0)
            #expect(added.stdout == "1 CRL added.\n")
            var info = stat()
            let folder = kc.root + "/.config/keychain/crls"
            #expect(stat(folder, &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 1)
            try kc.openssl(["crl", "-in", "@int-revokes-leaf.crl", "-outform", "DER", "-out", "@crl.der"])
            #expect(try kc.trusting(["add-crl", kc.root + "/crl.der"]).stdout == "1 CRL added.\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 1, "the same list is stored once")
            #expect(try kc.trusting(chain + ["-R", "crl"]).stderr.hasPrefix("security: SecTrustEvaluate: Cert Verify Result: CSSMERR_TP_CERT_REVOKED\n"))
            #expect(try kc.trusting(chain).stdout == "...certificate verification successful.\n")

            let junk = try kc.trusting(["add-crl", kc.root + "/leaf.pem"])
            #expect(junk.status == 87)
            #expect(junk.stderr == "security: SecCRLAdd: Unknown format in import.\nsecurity: The PEM file holds no X509 CRL block.\n")
        }
    }

    @Test func aLinkAtTheSettingsPathIsNotWrittenThrough() throws {
        try withKeychain { kc in
            try kc.makeChainAndCRL()
            let folder = kc.root + "/.config/keychain"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("precious\n".utf8).write(to: URL(fileURLWithPath: kc.root + "/victim"))
            try FileManager.default.createSymbolicLink(atPath: folder + "/trust-settings.plist", withDestinationPath: kc.root + "/victim")
            let result = try kc.trusting(["add-trusted-cert", kc.root + "/root.pem"])
            #expect(result.status == 220)
            #expect(result.stderr.hasPrefix("security: \(folder)/trust-settings.plist is a symbolic link"))
            #expect(result.stderr.hasSuffix("security: SecTrustSettingsSetTrustSettings: OSStatus -36 (see `security error -36`)\n"))
            #expect(try String(contentsOfFile: kc.root + "/victim", encoding: .utf8) == "precious\n")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/trust-settings.plist") == kc.root + "/victim")
        }
    }
}
