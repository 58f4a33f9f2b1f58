import Foundation
import KeychainServices
import Testing
import KeychainTestSupport

/// A root CA, an intermediate and a server leaf for `www.example.test`, made by openssl (P-256), in DER.
struct TestPKI {
    let bench: Workbench

    init(_ bench: Workbench) throws {
        self.bench = bench
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try bench.write("ca.ext", Data("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n".utf8))
        try bench.write(
            "leaf.ext",
            Data(
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:www.example.test\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
                    .utf8))
        try check(
            bench.run(
                "openssl",
                ["req", "-x509"] + ec + [
                    "-keyout", "root.key", "-out", "root.pem", "-days", "3650", "-subj", "/CN=swift-keychain Test Root CA",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                ]))
        for (name, issuer, subject, ext) in [("int", "root", "/CN=swift-keychain Test Intermediate", "ca.ext"), ("leaf", "int", "/CN=www.example.test", "leaf.ext")] {
            try check(bench.run("openssl", ["req", "-new"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject]))
            try check(
                bench.run(
                    "openssl",
                    [
                        "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key", "-CAcreateserial",
                        "-days", "365", "-extfile", ext, "-out", "\(name).pem",
                    ]))
        }
        try check(
            bench.run(
                "openssl",
                ["req", "-x509"] + ec + [
                    "-keyout", "self.key", "-out", "self.pem", "-days", "30", "-subj", "/CN=www.example.test",
                    "-addext", "subjectAltName=DNS:www.example.test",
                ]))
        for name in ["root", "int", "leaf", "self"] {
            try check(bench.openssl("x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"))
        }
    }

    private func check(_ result: (status: Int32, output: String)) throws {
        guard result.status == 0 else { throw KeyTestError("openssl failed: \(result.output)") }
    }

    func certificate(_ name: String) throws -> SecCertificate {
        try #require(SecCertificateCreateWithData(nil, try bench.read("\(name).der") as CFData))
    }
}

func evaluate(
    _ certificates: [SecCertificate], policy: SecPolicy = SecPolicyCreateBasicX509(), anchors: [SecCertificate]? = nil,
    date: Date? = nil
) throws -> (Bool, Int?, Int) {
    var trust: SecTrust?
    #expect(SecTrustCreateWithCertificates(certificates as CFArray, policy, &trust) == errSecSuccess)
    let t = try #require(trust)
    if let anchors { #expect(SecTrustSetAnchorCertificates(t, anchors as CFArray) == errSecSuccess) }
    if let date { #expect(SecTrustSetVerifyDate(t, date as CFDate) == errSecSuccess) }
    var error: CFError?
    let ok = SecTrustEvaluateWithError(t, &error)
    return (ok, error?.code, (SecTrustCopyCertificateChain(t) as? [SecCertificate])?.count ?? 0)
}

@Suite struct SecTrustTests {
    @Test func chainsToAnchorsVerifyWithTheirPolicies() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let pki = try TestPKI(bench)
        let leaf = try pki.certificate("leaf"), intermediate = try pki.certificate("int"), root = try pki.certificate("root")
        #expect(try evaluate([leaf, intermediate], anchors: [root]) == (true, nil, 3))
        #expect(try evaluate([leaf, intermediate], policy: SecPolicyCreateSSL(true, "www.example.test" as CFString), anchors: [root]) == (true, nil, 3))
        // The wrong host name, a missing intermediate, no anchor, a date past expiry, a self-signed leaf: not trusted.
        #expect(try evaluate([leaf, intermediate], policy: SecPolicyCreateSSL(true, "other.example.test" as CFString), anchors: [root]) == (false, -67843, 0))
        #expect(try evaluate([leaf], anchors: [root]).0 == false)
        #expect(try evaluate([leaf, intermediate], anchors: []).0 == false)
        #expect(try evaluate([leaf, intermediate], anchors: [root], date: Date().addingTimeInterval(2 * 365 * 86_400)).0 == false)
        #expect(try evaluate([try pki.certificate("self")], policy: SecPolicyCreateSSL(true, "www.example.test" as CFString)) == (false, -67843, 0))
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates([] as CFArray, nil, &trust) == errSecParam)
        #expect(SecTrustCreateWithCertificates(["not a certificate"] as CFArray, nil, &trust) == errSecParam)
    }

    @Test("Evaluations that block every thread of Swift's pool at once all finish: the verifier they wait for runs on threads of its own")
    func evaluationsBlockingThePoolFinish() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        // Four times as many callers as the pool has threads: were the verifier a task on the pool, every pool thread
        // would wait for a verifier that never gets one (the process hung, and was killed at the timeout).
        let count = ProcessInfo.processInfo.activeProcessorCount * 4
        let run = try ProgramRun.run(
            BuiltProducts.path(of: "keychain-test-helper"),
            ["trust-in-tasks", "\(count)", bench.path("root.der"), bench.path("leaf.der"), bench.path("int.der")],
            environment: baseEnvironment(home: bench.path("home")), timeout: 60)
        #expect(run.stdout == "trusted=\(count) of \(count)\n")
        #expect(run.status == 0)
    }

    @Test func theDebianBundleIsTheSystemRoots() throws {
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        let text = try String(contentsOfFile: bundle, encoding: .utf8)
        let bench = try Workbench()
        defer { bench.remove() }
        _ = try TestPKI(bench)
        // A root from Debian's bundle is trusted with no anchors given; with an empty bundle it is not.
        let first = try #require(text.components(separatedBy: "-----END CERTIFICATE-----").first) + "-----END CERTIFICATE-----\n"
        try bench.write("debian-root.pem", Data(first.utf8))
        #expect(try bench.openssl("x509", "-in", "debian-root.pem", "-outform", "DER", "-out", "debian-root.der").status == 0)
        func run(_ arguments: [String], roots: String?) throws -> String {
            var env = baseEnvironment(home: bench.path("home"))
            if let roots { env["KEYCHAIN_SYSTEM_ROOTS"] = roots }
            return try runHelper(["trust"] + arguments, environment: env).stdout
        }
        #expect(try run([bench.path("debian-root.der")], roots: nil) == "trusted chain=1\n")
        try bench.write("empty.pem", Data())
        #expect(try run([bench.path("debian-root.der")], roots: bench.path("empty.pem")) == "not trusted status=-67843\n")
        // Our test root is not a Debian root: the chain fails against the real bundle, and verifies once the
        // root is in a copy of it (every Debian root parsed, plus ours).
        let chain = [bench.path("leaf.der"), bench.path("int.der"), "host=www.example.test"]
        #expect(try run(chain, roots: nil) == "not trusted status=-67843\n")
        try bench.write("bundle.pem", Data((text + (try String(contentsOfFile: bench.path("root.pem"), encoding: .utf8))).utf8))
        #expect(try run(chain, roots: bench.path("bundle.pem")) == "trusted chain=3\n")
        #expect(try run([bench.path("self.der"), "host=www.example.test"], roots: bench.path("bundle.pem")) == "not trusted status=-67843\n")
    }
}
