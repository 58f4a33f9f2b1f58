import Foundation
import KeychainCore
import KeychainServices
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// TestPKI's chain (root → intermediate → leaf for www.example.test) plus revocation lists made by `openssl ca`:
/// `int-revokes-leaf.crl` (the intermediate revokes the leaf), `int-empty.crl` and `root-empty.crl` (nothing
/// revoked), `wrong-key.crl` (revokes the leaf under the intermediate's name, signed by another key), and
/// `stale.crl` (revokes the leaf, but its next update was in 2020).
struct RevocationPKI {
    let pki: TestPKI
    var bench: Workbench { pki.bench }

    init(_ bench: Workbench) throws {
        pki = try TestPKI(bench)
        let config = "[ca]\ndefault_ca=d\n[d]\ndatabase=index-$ENV::CA_NAME.txt\ncrlnumber=crlnumber-$ENV::CA_NAME\ndefault_md=sha256\ndefault_crl_days=30\n"
        try bench.write("ca.cnf", Data(config.utf8))
        // A stranger CA with the intermediate's name and another key, for the forged list.
        try check(
            bench.run(
                "openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "evil.key",
                    "-out", "evil.pem", "-days", "30", "-subj", "/CN=swift-keychain Test Intermediate",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ]))
        for (name, issuer, revoke) in [("int-revokes-leaf", "int", true), ("int-empty", "int", false), ("root-empty", "root", false), ("wrong-key", "evil", true)] {
            try bench.write("index-\(name).txt", Data())
            try bench.write("crlnumber-\(name)", Data("01\n".utf8))
            let common = ["-config", "ca.cnf", "-keyfile", "\(issuer).key", "-cert", "\(issuer).pem"]
            if revoke { try check(ca(name, ["ca"] + common + ["-revoke", "leaf.pem"])) }
            try check(ca(name, ["ca"] + common + ["-gencrl", "-out", "\(name).crl"]))
        }
        // The same revocation, in a list whose next update passed in 2020.
        try check(
            ca(
                "int-revokes-leaf",
                [
                    "ca", "-config", "ca.cnf", "-keyfile", "int.key", "-cert", "int.pem", "-gencrl",
                    "-crl_lastupdate", "20200101000000Z", "-crl_nextupdate", "20200201000000Z", "-out", "stale.crl",
                ]))
    }

    private func ca(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try bench.run("env", ["CA_NAME=\(name)", "openssl"] + arguments)
    }

    private func check(_ result: (status: Int32, output: String)) throws {
        guard result.status == 0 else { throw KeyTestError("openssl failed: \(result.output)") }
    }
}

/// The trust store of one test: System Roots (a bundle holding TestPKI's root, no folder), the user's and the
/// admin's trust settings files and CRL folders, all inside the workbench.
struct TrustStoreSandbox {
    let bench: Workbench

    var environment: [String: String] {
        var env = baseEnvironment(home: bench.path("home"))
        env["KEYCHAIN_SYSTEM_ROOTS"] = bench.path("system-roots.pem")
        env["KEYCHAIN_SYSTEM_ROOTS_DIR"] = ""
        env["KEYCHAIN_TRUST_SETTINGS"] = bench.path("user/trust-settings.plist")
        env["KEYCHAIN_ADMIN_TRUST_SETTINGS"] = bench.path("admin/trust-settings.plist")
        env["KEYCHAIN_CRLS"] = bench.path("crls")
        env["KEYCHAIN_ADMIN_CRLS"] = bench.path("admin-crls")
        return env
    }

    /// Puts these PEM files in the System Roots bundle.
    func systemRoots(_ names: [String]) throws {
        var text = ""
        for name in names { text += try String(contentsOfFile: bench.path(name), encoding: .utf8) }
        try bench.write("system-roots.pem", Data(text.utf8))
    }

    /// `keychain-test-helper trust …`'s line.
    func trust(_ arguments: [String]) throws -> String {
        try runHelper(["trust"] + arguments.map { $0.hasSuffix(".der") ? bench.path($0) : $0 }, environment: environment).stdout
    }

    /// `keychain-test-helper trust-settings …`'s line.
    func settings(_ arguments: [String]) throws -> String {
        try runHelper(
            ["trust-settings"] + arguments.map { $0.hasSuffix(".der") || $0.hasSuffix(".plist") ? bench.path($0) : $0 },
            environment: environment
        ).stdout
    }

    /// Installs a CRL file of the workbench in the user's CRL folder.
    func installCRL(_ name: String) throws {
        try FileManager.default.createDirectory(atPath: bench.path("crls"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: bench.path(name), toPath: bench.path("crls/" + name))
    }
}

@Suite("Trust settings, System Roots and revocation (SecTrustSettings, SecPolicyCreateRevocation)")
struct TrustSettingsTests {
    static let chain = ["leaf.der", "int.der"]
    static let ssl = chain + ["host=www.example.test"]

    @Test func systemRootsAreTheBundleAndTheFolderOnceEachAndRefreshWhenTheyChange() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        try FileManager.default.createDirectory(atPath: bench.path("dir"), withIntermediateDirectories: true)
        let env = ["KEYCHAIN_SYSTEM_ROOTS": bench.path("bundle.pem"), "KEYCHAIN_SYSTEM_ROOTS_DIR": bench.path("dir")]
        try bench.write("bundle.pem", try bench.read("root.pem"))
        let one = try SystemRoots.snapshot(env)
        #expect(one.certificates.map(\.der) == [try bench.read("root.der")])
        // The folder's PEM and DER files count, each certificate once (root.der repeats the bundle's root).
        try bench.write("dir/root.der", try bench.read("root.der"))
        try bench.write("dir/int.crt", try bench.read("int.pem"))
        try bench.write("dir/notes.txt", try bench.read("self.pem"))
        let two = try SystemRoots.snapshot(env)
        #expect(two.certificates.map(\.der) == [try bench.read("root.der"), try bench.read("int.der")])
        #expect(two.digest != one.digest)
        // Rewriting the bundle with the same roots changes its stamp but not the set: same digest.
        try bench.write("bundle.pem", try bench.read("root.pem"))
        #expect(try SystemRoots.snapshot(env).digest == two.digest)
        // A changed bundle is read again at once.
        try bench.write("bundle.pem", try bench.read("self.pem"))
        let three = try SystemRoots.snapshot(env)
        #expect(Set(three.certificates.map(\.der)) == Set([try bench.read("self.der"), try bench.read("root.der"), try bench.read("int.der")]))
        // An empty folder variable reads no folder; the digest is SHA-256 over the sorted DERs, order-free.
        let bundleOnly = try SystemRoots.snapshot(["KEYCHAIN_SYSTEM_ROOTS": bench.path("bundle.pem"), "KEYCHAIN_SYSTEM_ROOTS_DIR": ""])
        #expect(bundleOnly.certificates.map(\.der) == [try bench.read("self.der")])
        #expect(SystemRootsSnapshot(certificates: three.certificates.reversed()).digest == three.digest)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/etc/ssl/certs/ca-certificates.crt"), "needs Debian's ca-certificates"))
    func debiansTrustStoreIsTheDefault() throws {
        let snapshot = try SystemRoots.snapshot([:])
        let bundle = try String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8)
        // Every root of the bundle, and the folder adds none it lacks (Debian's folder holds the same roots).
        #expect(snapshot.certificates.count == bundle.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1)
        #expect(snapshot.certificates.count > 100)
    }

    @Test func evaluationUsesSystemRootsAndHonoursUserAndAdminSettings() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        let store = TrustStoreSandbox(bench: bench)
        try store.systemRoots(["root.pem"])
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
        #expect(try store.trust(Self.ssl) == "trusted chain=3\n")

        // The user denies the root: the system's trust does not save it.
        #expect(try store.settings(["copy", "root.der", "user"]) == "status=-25300 count=0 results= policies=\n")
        #expect(try store.settings(["set", "root.der", "user", "result=3"]) == "status=0\n")
        #expect(try store.settings(["copy", "root.der", "user"]) == "status=0 count=1 results=3 policies=-\n")
        #expect(try store.trust(Self.chain) == "not trusted status=-67654\n")
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=0\n")
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=-25300\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")

        // A deny limited to SSL fails SSL evaluations only; one limited to another host applies to none.
        #expect(try store.settings(["set", "root.der", "user", "result=3", "policy=ssl"]) == "status=0\n")
        #expect(try store.settings(["copy", "root.der", "user"]) == "status=0 count=1 results=3 policies=sslServer\n")
        #expect(try store.trust(Self.ssl) == "not trusted status=-67654\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
        #expect(try store.settings(["set", "root.der", "user", "result=3", "policy=ssl", "string=other.example.test"]) == "status=0\n")
        #expect(try store.trust(Self.ssl) == "trusted chain=3\n")
        // A denied leaf fails too, even when its chain is fine.
        #expect(try store.settings(["set", "leaf.der", "user", "result=3"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "not trusted status=-67654\n")
        #expect(try store.settings(["remove", "leaf.der", "user"]) == "status=0\n")
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=0\n")

        // Not a system root: not trusted, until the user trusts it as a root (nil settings: always).
        try store.systemRoots([])
        #expect(try store.trust(Self.chain) == "not trusted status=-67843\n")
        #expect(try store.settings(["set", "root.der", "user"]) == "status=0\n")
        #expect(try store.settings(["copy", "root.der", "user"]) == "status=0 count=0 results= policies=\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=0\n")
        // trustRoot is for self-signed certificates only; an intermediate trusted as a root anchors a chain of 2.
        #expect(try store.settings(["set", "int.der", "user", "result=1"]) == "status=-50\n")
        #expect(try store.settings(["set", "int.der", "user", "result=2"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "trusted chain=2\n")
        #expect(try store.settings(["certs", "user"]) == "status=0 count=1\n")
        #expect(try store.settings(["remove", "int.der", "user"]) == "status=0\n")
        #expect(try store.settings(["certs", "user"]) == "status=-25263 count=0\n")

        // The system domain is the System Roots, read-only.
        try store.systemRoots(["root.pem"])
        #expect(try store.settings(["certs", "system"]) == "status=0 count=1\n")
        #expect(try store.settings(["copy", "root.der", "system"]) == "status=0 count=0 results= policies=\n")
        #expect(try store.settings(["copy", "int.der", "system"]) == "status=-25300 count=0 results= policies=\n")
        #expect(try store.settings(["set", "root.der", "system", "result=3"]) == "status=-25317\n")
        #expect(try store.settings(["bad-import", "system"]) == "status=-25262\n")
    }

    @Test(.enabled(if: geteuid() == 0, "the admin domain needs root"))
    func adminSettingsApplyAndUserSettingsComeFirst() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        let store = TrustStoreSandbox(bench: bench)
        try store.systemRoots(["root.pem"])
        #expect(try store.settings(["set", "root.der", "admin", "result=3"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "not trusted status=-67654\n")
        var info = stat()
        #expect(stat(bench.path("admin/trust-settings.plist"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o644)
        // The user's trustRoot overrides the admin's deny.
        #expect(try store.settings(["set", "root.der", "user", "result=1"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
        #expect(stat(bench.path("user/trust-settings.plist"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "not trusted status=-67654\n")
        #expect(try store.settings(["remove", "root.der", "admin"]) == "status=0\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
    }

    @Test func externalRepresentationRoundTripsInApplesFormat() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        let store = TrustStoreSandbox(bench: bench)
        try store.systemRoots([])
        #expect(try store.settings(["export", "user", "none.plist"]) == "status=-25263\n")
        #expect(try store.settings(["set", "root.der", "user", "result=1", "policy=ssl", "string=www.example.test"]) == "status=0\n")
        #expect(try store.settings(["set", "int.der", "user", "result=3"]) == "status=0\n")
        #expect(try store.settings(["export", "user", "out.plist"]) == "status=0\n")
        // Apple's keys: trustVersion 1, trustList keyed by upper-case SHA-1, issuerName, serialNumber, modDate,
        // trustSettings; not the certificate itself.
        let plist = try #require(try PropertyListSerialization.propertyList(from: try bench.read("out.plist"), format: nil) as? [String: Any])
        #expect(plist["trustVersion"] as? Int == 1)
        let list = try #require(plist["trustList"] as? [String: [String: Any]])
        let rootHash = fingerprint(try bench.openssl("x509", "-in", "root.pem", "-noout", "-fingerprint", "-sha1").output)
        let entry = try #require(list[rootHash])
        #expect(Set(entry.keys) == ["issuerName", "serialNumber", "modDate", "trustSettings"])
        let serial = try bench.openssl("x509", "-in", "root.pem", "-noout", "-serial").output
        #expect((entry["serialNumber"] as? Data)?.map { String(format: "%02X", $0) }.joined() == serial.dropFirst(7).trimmingCharacters(in: .whitespacesAndNewlines))
        let settings = try #require(entry["trustSettings"] as? [[String: Any]])
        #expect(settings.count == 1)
        #expect(settings.first?["kSecTrustSettingsPolicy"] as? Data == Data([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x01, 0x03]))
        #expect(settings.first?["kSecTrustSettingsPolicyString"] as? String == "www.example.test")
        #expect((settings.first?["kSecTrustSettingsResult"] as? NSNumber)?.intValue == 1)

        // Import replaces the domain: after removing everything, the file brings both back.
        #expect(try store.settings(["remove", "root.der", "user"]) == "status=0\n")
        #expect(try store.settings(["remove", "int.der", "user"]) == "status=0\n")
        #expect(try store.settings(["import", "user", "out.plist"]) == "status=0\n")
        #expect(try store.settings(["copy", "root.der", "user"]) == "status=0 count=1 results=1 policies=sslServer\n")
        #expect(try store.settings(["copy", "int.der", "user"]) == "status=0 count=1 results=3 policies=-\n")
        // The file names certificates by hash only, so the root is not known here unless the chain brings it; the
        // denied intermediate fails the evaluation either way (a chain ending at a denied certificate is denied).
        #expect(try store.trust(Self.ssl) == "not trusted status=-67654\n")
        #expect(try store.trust(["leaf.der", "int.der", "root.der", "host=www.example.test"]) == "not trusted status=-67654\n")
        #expect(try store.settings(["remove", "int.der", "user"]) == "status=0\n")
        #expect(try store.trust(Self.ssl) == "not trusted status=-67843\n")
        #expect(try store.trust(["leaf.der", "int.der", "root.der", "host=www.example.test"]) == "trusted chain=3\n")
        #expect(try store.settings(["bad-import", "user"]) == "status=-25262\n")
    }

    @Test func aLinkPlantedAtTheSettingsPathIsNeverWrittenThrough() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        let store = TrustStoreSandbox(bench: bench)
        try FileManager.default.createDirectory(atPath: bench.path("user"), withIntermediateDirectories: true)
        try bench.write("victim", Data("precious\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: bench.path("user/trust-settings.plist"), withDestinationPath: bench.path("victim"))
        #expect(try store.settings(["set", "root.der", "user", "result=3"]) == "status=-36\n")
        #expect(try String(contentsOfFile: bench.path("victim"), encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: bench.path("user/trust-settings.plist")) == bench.path("victim"))
        // Evaluation refuses the link too, rather than read settings someone else planted.
        try store.systemRoots(["root.pem"])
        #expect(try store.trust(Self.chain) == "not trusted status=-36\n")
    }

    @Test func crlsRevokeCertificatesWhenARevocationPolicyAsks() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try RevocationPKI(bench)
        let store = TrustStoreSandbox(bench: bench)
        try store.systemRoots(["root.pem"])
        let crlMethod = "revocation=2", required = "revocation=10", any = "revocation=3"
        // No CRL installed: checked by nobody, which fails only when a positive response is required.
        #expect(try store.trust(Self.chain + [crlMethod]) == "trusted chain=3 revocation-checked=false\n")
        #expect(try store.trust(Self.chain + [required]) == "not trusted status=-67635\n")
        #expect(try store.trust(Self.chain + [any, "nofetch"]) == "trusted chain=3 revocation-checked=false\n")
        // A stale list (past its next update) is ignored, and so is one signed by another key under the issuer's name.
        try store.installCRL("stale.crl")
        #expect(try store.trust(Self.chain + [crlMethod]) == "trusted chain=3 revocation-checked=false\n")
        try store.installCRL("wrong-key.crl")
        #expect(try store.trust(Self.chain + [crlMethod]) == "trusted chain=3 revocation-checked=false\n")
        #expect(try store.trust(Self.chain + [required]) == "not trusted status=-67635\n")
        // Current lists from the root and the intermediate that revoke nothing: every status is known.
        try store.installCRL("int-empty.crl")
        try store.installCRL("root-empty.crl")
        #expect(try store.trust(Self.chain + [required]) == "trusted chain=3 revocation-checked=true\n")
        // The intermediate's list that revokes the leaf: errSecCertificateRevoked, but only with a revocation policy.
        try store.installCRL("int-revokes-leaf.crl")
        #expect(try store.trust(Self.chain + [crlMethod]) == "not trusted status=-67820\n")
        #expect(try store.trust(Self.ssl + [crlMethod]) == "not trusted status=-67820\n")
        #expect(try store.trust(Self.chain) == "trusted chain=3\n")
        // OCSP alone consults no CRL (and these certificates name no responder to ask).
        #expect(try store.trust(Self.chain + ["revocation=1"]) == "trusted chain=3 revocation-checked=false\n")
    }

    @Test func crlsParseAndVerifyByTheirIssuersKey() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try RevocationPKI(bench)
        let revoking = try #require(try CertificateRevocationList.read(try bench.read("int-revokes-leaf.crl")).first)
        let intermediate = try CertificateData(der: try bench.read("int.der"))
        let root = try CertificateData(der: try bench.read("root.der"))
        let leaf = try CertificateData(der: try bench.read("leaf.der"))
        #expect(revoking.isSigned(by: intermediate.certificate))
        #expect(!revoking.isSigned(by: root.certificate))
        #expect(revoking.revoked.keys.contains(leaf.certificate.serialNumber))
        #expect(revoking.revoked.count == 1)
        #expect(revoking.isCurrent(at: Date()))
        #expect(!revoking.isCurrent(at: Date().addingTimeInterval(31 * 86_400)))
        #expect(!revoking.isCurrent(at: Date().addingTimeInterval(-86_400)))
        let forged = try #require(try CertificateRevocationList.read(try bench.read("wrong-key.crl")).first)
        #expect(forged.issuer == intermediate.certificate.subject)
        #expect(!forged.isSigned(by: intermediate.certificate))
        // DER reads as well as PEM; anything else is errSecUnknownFormat.
        #expect(try bench.openssl("crl", "-in", "int-empty.crl", "-outform", "DER", "-out", "int-empty.der.crl").status == 0)
        #expect(try CertificateRevocationList.read(try bench.read("int-empty.der.crl")).first?.revoked.isEmpty == true)
        #expect(throws: KeychainCore.KeychainError.self) { try CertificateRevocationList.read(Data("nonsense".utf8)) }
        do {
            _ = try CertificateRevocationList.read(try bench.read("leaf.der"))
            Issue.record("a certificate parsed as a CRL")
        } catch let error as KeychainCore.KeychainError {
            #expect(error.status == .unknownFormat)
        }
    }

    @Test func revocationPoliciesAndNetworkFetchAreSetAndCopied() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let pki = try TestPKI(bench)
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates([try pki.certificate("leaf")] as CFArray, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        let t = try #require(trust)
        let revocation = try #require(SecPolicyCreateRevocation(kSecRevocationCRLMethod | kSecRevocationRequirePositiveResponse))
        #expect(SecTrustSetPolicies(t, [SecPolicyCreateSSL(true, nil), revocation] as CFArray) == errSecSuccess)
        var policies: CFArray?
        #expect(SecTrustCopyPolicies(t, &policies) == errSecSuccess)
        #expect((policies as? [SecPolicy])?.count == 2)
        #expect(SecTrustSetPolicies(t, "not a policy" as CFString) == errSecParam)
        var allowed = DarwinBoolean(false)
        #expect(SecTrustGetNetworkFetchAllowed(t, &allowed) == errSecSuccess)
        #expect(allowed.boolValue)
        #expect(SecTrustSetNetworkFetchAllowed(t, false) == errSecSuccess)
        #expect(SecTrustGetNetworkFetchAllowed(t, &allowed) == errSecSuccess)
        #expect(!allowed.boolValue)
        #expect(kSecRevocationUseAnyAvailableMethod == 3)
        #expect((errSecCertificateRevoked, errSecTrustSettingDeny, errSecIncompleteCertRevocationCheck) == (-67820, -67654, -67635))
        #expect(SecTrustSettingsDomain.admin.rawValue == 1 && SecTrustSettingsResult.deny.rawValue == 3)
    }
}

/// The hex of an openssl `-fingerprint` line, without colons.
private func fingerprint(_ line: String) -> String {
    String(line.split(separator: "=").last ?? "").replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
}
