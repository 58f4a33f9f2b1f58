import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `openssl ocsp` as a real OCSP responder on a loopback port, answering from an `openssl ca` index, until stopped.
final class OpenSSLOCSPResponder {
    let process = Process()
    let log: String

    /// Starts `openssl ocsp -port PORT` in `bench` with `arguments` and waits until it accepts connections.
    init(_ bench: Workbench, port: Int, name: String, _ arguments: [String]) throws {
        log = bench.path("\(name).log")
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw KeyTestError("cannot create \(log)") }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "ocsp", "-port", "\(port)"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: bench.path(""))
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if (try? String(contentsOfFile: log, encoding: .utf8))?.contains("ACCEPT") == true { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        stop()
        throw KeyTestError("openssl ocsp did not start on port \(port): \(said)")
    }

    /// SIGKILL (openssl inherits this process's blocked signals, SIGTERM among them) and waits for the exit.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Revocation by OCSP (`kSecRevocationOCSPMethod`): a root whose leaves name a real `openssl ocsp` responder on
/// this machine, which knows one leaf as valid and one as revoked; a forger answering with another key under the
/// root's name; and a responder address where nothing listens.
@Suite struct OCSPTests {
    let ocsp = "revocation=1", ocspRequired = "revocation=9"

    @Test func theIssuersResponderIsAskedAndOnlyItsSignedAnswerCounts() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        func check(_ result: (status: Int32, output: String)) throws {
            guard result.status == 0 else { throw KeyTestError("openssl failed: \(result.output)") }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let ca = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        try check(bench.run("openssl", ["req", "-x509"] + ec + ["-keyout", "root.key", "-out", "root.pem", "-days", "30", "-subj", "/CN=OCSP Test Root"] + ca))
        // The forger: the root's name, another key.
        try check(bench.run("openssl", ["req", "-x509"] + ec + ["-keyout", "forger.key", "-out", "forger.pem", "-days", "30", "-subj", "/CN=OCSP Test Root"] + ca))
        var ports: [Int] = []
        while ports.count < 3 { let port = try unusedLoopbackPort(); if !ports.contains(port) { ports.append(port) } }
        let (real, forged, nobody) = (ports[0], ports[1], ports[2])
        for (name, port) in [("good", real), ("revoked", real), ("forged", forged), ("unreachable", nobody)] {
            try bench.write("\(name).ext", Data("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nauthorityInfoAccess=OCSP;URI:http://127.0.0.1:\(port)/\n".utf8))
            try check(bench.run("openssl", ["req", "-new"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name).example"]))
            try check(
                bench.run(
                    "openssl",
                    [
                        "x509", "-req", "-in", "\(name).csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
                        "-days", "20", "-extfile", "\(name).ext", "-out", "\(name).pem",
                    ]))
            try check(bench.openssl("x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"))
        }
        // The root's index: good valid, revoked and forged revoked (the forger answers from the same index).
        try bench.write("ca.cnf", Data("[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ndefault_md=sha256\n".utf8))
        try bench.write("index.txt", Data())
        let common = ["ca", "-config", "ca.cnf", "-keyfile", "root.key", "-cert", "root.pem"]
        try check(bench.run("openssl", common + ["-valid", "good.pem"]))
        try check(bench.run("openssl", common + ["-revoke", "revoked.pem"]))
        try check(bench.run("openssl", common + ["-revoke", "forged.pem"]))
        let responder = try OpenSSLOCSPResponder(
            bench, port: real, name: "real",
            ["-index", "index.txt", "-CA", "root.pem", "-rsigner", "root.pem", "-rkey", "root.key", "-ndays", "1"])
        defer { responder.stop() }
        let forger = try OpenSSLOCSPResponder(
            bench, port: forged, name: "forger",
            ["-index", "index.txt", "-CA", "root.pem", "-rsigner", "forger.pem", "-rkey", "forger.key", "-ndays", "1"])
        defer { forger.stop() }
        let store = TrustStoreSandbox(bench: bench)
        try store.systemRoots(["root.pem"])

        // The valid leaf: the responder's signed "good" is a positive response.
        #expect(try store.trust(["good.der", ocsp]) == "trusted chain=2 revocation-checked=true\n")
        #expect(try store.trust(["good.der", ocspRequired]) == "trusted chain=2 revocation-checked=true\n")
        // The revoked leaf: errSecCertificateRevoked; not asked without network access, or without a revocation policy.
        #expect(try store.trust(["revoked.der", ocsp]) == "not trusted status=-67820\n")
        #expect(try store.trust(["revoked.der", ocsp, "nofetch"]) == "trusted chain=2 revocation-checked=false\n")
        #expect(try store.trust(["revoked.der"]) == "trusted chain=2\n")
        // A CRL method alone asks no responder.
        #expect(try store.trust(["revoked.der", "revocation=2"]) == "trusted chain=2 revocation-checked=false\n")
        // The forger's "revoked", signed by a key that is not the root's: it neither revokes nor vouches.
        #expect(try store.trust(["forged.der", ocsp]) == "trusted chain=2 revocation-checked=false\n")
        #expect(try store.trust(["forged.der", ocspRequired]) == "not trusted status=-67635\n")
        // Nothing listens where the certificate points: not checked, and fails only when a response is required.
        #expect(try store.trust(["unreachable.der", ocsp]) == "trusted chain=2 revocation-checked=false\n")
        #expect(try store.trust(["unreachable.der", ocspRequired]) == "not trusted status=-67635\n")
    }
}
