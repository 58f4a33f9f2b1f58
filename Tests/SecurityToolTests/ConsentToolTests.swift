import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `security app consents` and `security app revoke`: the built tool's output and exit status, with the
/// keychain opened in the tool's process and through a real keychaind (which lets only its admin tool see or
/// change the programs' remembered permissions).
@Suite("security: the programs' remembered permissions")
struct ConsentToolTests {
    static let first = Date(timeIntervalSince1970: 1_767_323_045)  // 2026-01-02T03:04:05Z
    static let second = Date(timeIntervalSince1970: 1_772_600_767)  // 2026-03-04T05:06:07Z

    /// Decisions as the consent decision remembers them, written by a real engine on the sandbox's keychain before
    /// any keychaind starts (the tool itself only lists and revokes).
    static func seed(_ kc: Sandbox, _ decisions: [ConsentDecision]) throws {
        let engine = try KeychainEngine(location: KeychainLocation(home: kc.home))
        for decision in decisions { try engine.rememberConsent(decision) }
        try engine.close()
    }

    /// Runs `body` with the sandbox's tool going through a keychaind when `mode` says so.
    static func serving(_ kc: Sandbox, _ mode: ToolMode, _ body: (Sandbox, KeychaindProcess?) throws -> Void) throws {
        guard mode == .keychaind else { return try body(kc, nil) }
        let daemon = try SandboxDaemon(kc)
        defer { daemon.stop() }
        var served = kc
        served.shared = daemon.environment
        try body(served, daemon)
    }

    @Test(arguments: ToolMode.allCases)
    func listingAndRevoking(mode: ToolMode) throws {
        let kc = try Sandbox()
        defer { kc.remove() }
        let app = try kc.program("mail-client")
        let digest = try FileDigest.sha256Hex(ofFileAt: app)
        try Self.seed(
            kc,
            [
                ConsentDecision(
                    program: .executable(path: app, sha256: digest), subject: "67656e70ab",
                    subjectDescription: "the password of alice", verdict: .always, date: Self.first),
                ConsentDecision(
                    program: .flatpak("org.example.Flat"), subject: "/org/freedesktop/secrets/collection/login",
                    subjectDescription: "Login\n\u{1B}[31mforged line\\", verdict: .deny, date: Self.second),
                ConsentDecision(
                    program: .executable(path: app, sha256: digest), subject: "67656e70cd",
                    subjectDescription: "x", verdict: .deny, date: Self.second),
            ])
        let lineA = "\(app)  sha256=\(digest.prefix(12))  always  2026-01-02T03:04:05Z  subject=67656e70ab  the password of alice"
        let lineB = "\(app)  sha256=\(digest.prefix(12))  deny  2026-03-04T05:06:07Z  subject=67656e70cd  x"
        // A description cannot start a line of its own or colour the terminal.
        let lineFlat = "flatpak:org.example.Flat  deny  2026-03-04T05:06:07Z  subject=/org/freedesktop/secrets/collection/login  Login\\u{a}\\u{1b}[31mforged line\\\\"

        try Self.serving(kc, mode) { kc, daemon in
            let list = try kc.run(["app", "consents"])
            #expect(list.status == 0, "\(list.stderr)")
            #expect(list.stderr == "")
            #expect(list.stdout == [lineA, lineB, lineFlat].map { $0 + "\n" }.joined())

            let one = try kc.run(["app", "revoke", app, "--subject", "67656e70cd"])
            #expect(one.status == 0, "\(one.stderr)")
            #expect(one.stdout == "revoked 1 decision\n")
            #expect(one.stderr == "")
            #expect(try kc.run(["app", "revoke", "flatpak:org.example.Flat"]).stdout == "revoked 1 decision\n")
            #expect(try kc.run(["app", "consents"]).stdout == lineA + "\n")

            let none = try kc.run(["app", "revoke", app, "--subject", "67656e70cd"])
            #expect(none.status == 44)
            #expect(none.stdout == "")
            #expect(
                none.stderr == "security: app revoke: The specified item could not be found in the keychain.\n"
                    + "security: Nothing is remembered for \(app) about 67656e70cd; `security app consents` lists what is.\n")
            let unknown = try kc.run(["app", "revoke", "snap:nothing"])
            #expect(unknown.status == 44)
            #expect(unknown.stderr.hasSuffix("security: Nothing is remembered for nothing; `security app consents` lists what is.\n"))
            let empty = try kc.run(["app", "revoke", app, "--subject", ""])
            #expect(empty.status == 2)
            #expect(empty.stderr.hasPrefix("Error: --subject is empty"))

            if let daemon {
                // Another copy of the tool is not the one beside keychaind: it may neither list nor revoke.
                let copy = kc.root + "/security-copy"
                try copyExecutable(from: kc.tool, to: copy)
                let refused = try kc.launch(copy, ["app", "consents"])
                #expect(refused.status == 30)
                #expect(refused.stdout == "")
                #expect(
                    refused.stderr.hasPrefix(
                        "security: app consents: A required entitlement isn't present.\n"
                            + "security: Only the security tool may list the programs' remembered permissions through keychaind; "))
                let notRevoked = try kc.launch(copy, ["app", "revoke", app])
                #expect(notRevoked.status == 30)
                #expect(notRevoked.stderr.contains("Only the security tool may revoke the programs' remembered permissions through keychaind"))
                #expect(try kc.run(["app", "consents"]).stdout == lineA + "\n")
                #expect(!daemon.output.contains("alice"))
            }

            // Revoking by path forgets the program's last decision; the list is then empty.
            #expect(try kc.run(["app", "revoke", app]).stdout == "revoked 1 decision\n")
            let after = try kc.run(["app", "consents"])
            #expect(after.status == 0)
            #expect(after.stdout == "")
            #expect(after.stderr == "")
        }
    }

    /// A file the keychain did not write is reported, with what to do, rather than listed or half-believed.
    @Test(arguments: ToolMode.allCases)
    func aForgedFileIsReported(mode: ToolMode) throws {
        let kc = try Sandbox()
        defer { kc.remove() }
        try Self.seed(kc, [])
        var forged = Data("KCAC".utf8) + [1]
        forged.append(Data(repeating: 0x5A, count: 64))
        #expect(FileManager.default.createFile(atPath: kc.home + "/apps.consents", contents: forged, attributes: [.posixPermissions: 0o600]))
        try Self.serving(kc, mode) { kc, _ in
            let list = try kc.run(["app", "consents"])
            #expect(list.status == Int32(UInt8(truncatingIfNeeded: KeychainStatus.decode.rawValue)))
            #expect(list.stdout == "")
            #expect(list.stderr.contains("security: apps.consents was not written by this keychain or was changed since"))
            #expect(list.stderr.contains("every program is asked again"))
            let revoke = try kc.run(["app", "revoke", "/usr/bin/foo"])
            #expect(revoke.status == list.status)
        }
    }

    @Test func theVerbsAreListedInTheAppHelp() throws {
        try withKeychain { kc in
            let help = try kc.run(["app", "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("consents"))
            #expect(help.stdout.contains("revoke"))
            let revoke = try kc.run(["app", "revoke", "--help"])
            #expect(revoke.stdout.contains("--subject <subject>"))
        }
    }
}
