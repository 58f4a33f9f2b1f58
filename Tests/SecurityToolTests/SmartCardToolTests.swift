import Foundation
import KeychainTestSupport
import Testing

/// `security list-smartcards` and `security export-smartcard` against the test process's SoftHSM token
/// (``SoftHSMToken``), checked with the real `openssl`. The token is shared with the other PKCS#11 tests of the
/// process, which generate keys of their own on it: listings are checked for the fixture's objects.
@Suite(
    "security list-smartcards and export-smartcard",
    .serialized,
    .enabled(
        if: SoftHSMToken.available,
        "needs SoftHSM and its p11-kit module (Debian: softhsm2), OpenSC's pkcs11-tool (opensc), openssl and libp11-kit0")
)
struct SmartCardToolTests {
    let fixture: SoftHSMToken

    init() throws {
        fixture = try SoftHSMToken.shared()
    }

    var tokenID: String { "softhsm2:\(fixture.serial)" }

    /// Runs the real openssl and returns its standard output.
    func openssl(_ kc: Sandbox, _ arguments: [String]) throws -> String {
        let run = try kc.launch(try #require(SoftHSMToken.program("openssl")), arguments)
        #expect(run.status == 0, "openssl \(arguments): \(run.stderr)")
        return run.stdout
    }

    /// The SHA-1 of `data` in the tool's `<hex>` form (groups of four bytes), from `openssl dgst`.
    func sha1(_ kc: Sandbox, _ data: Data) throws -> String {
        let path = kc.root + "/\(UUID().uuidString).bin"
        try data.write(to: URL(fileURLWithPath: path))
        let line = try openssl(kc, ["dgst", "-sha1", "-r", path])
        let hex = String(line.prefix(40))
        #expect(hex.count == 40)
        var groups: [String] = []
        var rest = Substring(hex)
        while !rest.isEmpty {
            groups.append(String(rest.prefix(8)))
            rest = rest.dropFirst(8)
        }
        return "<" + groups.joined(separator: " ") + ">"
    }

    /// The dictionaries the tool printed, each as its lines between `{` and `}`.
    static func blocks(_ output: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "{" {
                current = []
            } else if line == "}" {
                blocks.append(current ?? [])
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("list-smartcards prints the token ID of each present token, one per line")
    func listSmartCards() throws {
        try withKeychain { kc in
            let run = try kc.run(["list-smartcards"], environment: fixture.environment)
            #expect(run.status == 0)
            #expect(run.stdout == "\(tokenID)\n")
            #expect(run.stderr == "")
        }
    }

    @Test("with no token present, both verbs print nothing and succeed")
    func noToken() throws {
        try withKeychain { kc in
            // A SoftHSM configuration whose token folder is empty: SoftHSM offers only its free, uninitialised slot.
            let tokens = kc.root + "/empty-tokens"
            try FileManager.default.createDirectory(atPath: tokens, withIntermediateDirectories: true)
            let configuration = kc.root + "/empty-softhsm2.conf"
            try Data("directories.tokendir = \(tokens)\nobjectstore.backend = file\nlog.level = ERROR\n".utf8).write(to: URL(fileURLWithPath: configuration))
            let environment = ["PATH": "/usr/bin:/bin", "SOFTHSM2_CONF": configuration]
            let list = try kc.run(["list-smartcards"], environment: environment)
            #expect(list.status == 0)
            #expect(list.stdout == "")
            #expect(list.stderr == "")
            let export = try kc.run(["export-smartcard"], environment: environment)
            #expect(export.status == 0)
            #expect(export.stdout == "")
            #expect(export.stderr == "")
        }
    }

    @Test("export-smartcard -i with an absent token fails with errSecItemNotFound, naming it")
    func unknownToken() throws {
        try withKeychain { kc in
            let run = try kc.run(["export-smartcard", "-i", "softhsm2:no-such-serial"], environment: fixture.environment)
            #expect(run.status == 44)
            #expect(run.stdout == "")
            #expect(
                run.stderr
                    == "security: export-smartcard: The specified item could not be found in the keychain.\nsecurity: No token softhsm2:no-such-serial is present; `security list-smartcards` lists the present ones.\n"
            )
            let badType = try kc.run(["export-smartcard", "-t", "keys"], environment: fixture.environment)
            #expect(badType.status == 2)
            #expect(badType.stdout == "")
        }
    }

    @Test("export-smartcard prints the certificate, the private keys and the identity with Apple's attributes")
    func exportPrintsItems() throws {
        try withKeychain { kc in
            let rsaLabel = try sha1(kc, fixture.rsaPublicKeyPKCS1)
            let ecLabel = try sha1(kc, fixture.ecPublicKeyX963)

            let certs = try kc.run(["export-smartcard", "-i", tokenID, "-t", "certs"], environment: fixture.environment)
            #expect(certs.status == 0)
            #expect(certs.stderr == "")
            let certBlocks = Self.blocks(certs.stdout)
            #expect(certBlocks.count == 1)
            let cert = try #require(certBlocks.first)
            #expect(cert.first == "    class = cert;")
            for line in [
                "    agrp = com.apple.token;", "    cenc = 3;", "    ctyp = 3;", "    labl = \"Test Certificate\";",
                "    pdmn = dku;", "    pkhh = \(rsaLabel);", "    sha1 = \(try sha1(kc, fixture.certificateDER));", "    tkid = \(tokenID);",
            ] {
                #expect(cert.contains(line), "missing \(line) in \(cert)")
            }

            let identities = try kc.run(["export-smartcard", "-i", tokenID, "-t", "identities"], environment: fixture.environment)
            #expect(identities.status == 0)
            let identityBlocks = Self.blocks(identities.stdout)
            #expect(identityBlocks.count == 1)
            #expect(identityBlocks.first?.first == "    class = idnt;")
            #expect(Array(identityBlocks.first?.dropFirst() ?? []) == Array(cert.dropFirst()))

            let keys = try kc.run(["export-smartcard", "-i", tokenID, "-t", "privKeys"], environment: fixture.environment)
            #expect(keys.status == 0)
            #expect(keys.stderr == "")
            let keyBlocks = Self.blocks(keys.stdout)
            func privateKey(_ label: String, type: Int, bits: Int, klbl: String) -> [String] {
                [
                    "    class = keys;", "    agrp = com.apple.token;", "    bsiz = \(bits);", "    decr = 1;", "    drve = 1;", "    encr = 0;",
                    "    esiz = \(bits);", "    extr = 0;", "    kcls = 1;", "    klbl = \(klbl);", "    labl = \"\(label)\";", "    pdmn = dku;",
                    "    perm = 1;", "    sign = 1;", "    tkid = \(tokenID);", "    type = \(type);", "    unwp = 1;", "    vrfy = 0;",
                    "    wrap = 0;",
                ]
            }
            // Without the PIN the private keys are known by their public keys: RSA and EC, each once.
            #expect(keyBlocks.filter { $0 == privateKey("Test RSA Key", type: 42, bits: 2048, klbl: rsaLabel) }.count == 1, "\(keys.stdout)")
            #expect(keyBlocks.filter { $0 == privateKey("Test EC Key", type: 73, bits: 256, klbl: ecLabel) }.count == 1, "\(keys.stdout)")
            #expect(keyBlocks.allSatisfy { $0.contains("    kcls = 1;") })
        }
    }

    @Test("export-smartcard -e writes the certificate and the private keys' public keys as PEM files")
    func exportWritesPEM() throws {
        try withKeychain { kc in
            let folder = kc.root + "/exported"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let run = try kc.run(["export-smartcard", "-i", tokenID, "-e", folder], environment: fixture.environment)
            #expect(run.status == 0)
            #expect(run.stdout == "")
            #expect(run.stderr == "")
            let written = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
            #expect(written.isSuperset(of: ["Test Certificate.pem", "Test RSA Key.pem", "Test EC Key.pem"]), "\(written)")

            // The certificate is the token's, as openssl reads it.
            let certificatePEM = try String(contentsOfFile: folder + "/Test Certificate.pem", encoding: .utf8)
            let der = kc.root + "/cert.der"
            try fixture.certificateDER.write(to: URL(fileURLWithPath: der))
            #expect(certificatePEM == (try openssl(kc, ["x509", "-inform", "DER", "-in", der])))
            // The public keys are the fixture's, as openssl wrote them.
            #expect(try String(contentsOfFile: folder + "/Test RSA Key.pem", encoding: .utf8) == String(contentsOfFile: fixture.rsaPublicKeyPEMPath, encoding: .utf8))
            #expect(try String(contentsOfFile: folder + "/Test EC Key.pem", encoding: .utf8) == String(contentsOfFile: fixture.ecPublicKeyPEMPath, encoding: .utf8))

            // Only certificates with -t certs, into a folder that must exist.
            let certsOnly = kc.root + "/certs-only"
            try FileManager.default.createDirectory(atPath: certsOnly, withIntermediateDirectories: true)
            #expect(try kc.run(["export-smartcard", "-i", tokenID, "-t", "certs", "-e", certsOnly], environment: fixture.environment).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: certsOnly) == ["Test Certificate.pem"])
            let missing = try kc.run(["export-smartcard", "-i", tokenID, "-e", kc.root + "/nowhere"], environment: fixture.environment)
            #expect(missing.status == 1)
            #expect(missing.stderr == "security: export-smartcard: \(kc.root)/nowhere is not a folder.\n")
        }
    }
}
