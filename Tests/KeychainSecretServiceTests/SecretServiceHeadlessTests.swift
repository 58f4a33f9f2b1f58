import Foundation
import KeychainTestSupport
import Testing

/// No display, no terminal, no pinentry that can show itself (SSH, containers): a Secret Service request that
/// needs the person waits for `security approve` from a terminal of theirs, where keychaind asks the passcode; with
/// no passcode set, the client is told to set one.
@Suite(
    "Secret Service without a display", .serialized,
    .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) (bsdutils) for a terminal"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may"))
struct SecretServiceHeadlessTests {
    @Test("a locked keychain, no prompt possible: secret-tool store waits until security approve unlocks and allows it")
    func storeWaitsForApprovalFromATerminal() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            let security = try BuiltProducts.path(of: "security")
            let passcode = try rig.run(security, ["set-keychain-password", "--new-password-stdin"], input: "pw-1\n")
            #expect(passcode.status == 0, "\(passcode.stderr)")
            #expect(try rig.run(security, ["lock-keychain"]).status == 0)

            // secret-tool's Unlock prompt cannot be shown (pinentry-curses with no display and no terminal).
            try rig.queuePrompts("nodisplay")
            let output = rig.root + "/store.out"
            #expect(FileManager.default.createFile(atPath: output, contents: nil))
            let store = Process()
            store.executableURL = URL(fileURLWithPath: "/usr/bin/secret-tool")
            store.arguments = ["store", "--label=Headless", "app", "headless"]
            store.environment = rig.environment
            let input = Pipe()
            store.standardInput = input
            store.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            store.standardError = store.standardOutput
            try store.run()
            defer { if store.isRunning { store.terminate() } }
            try input.fileHandleForWriting.write(contentsOf: Data("from-nowhere".utf8))
            try input.fileHandleForWriting.close()

            let daemon = try #require(rig.daemon)
            #expect(daemon.waitForOutput(containing: "a request waits for approval"), "\(daemon.output)")
            #expect(store.isRunning, "secret-tool waits")
            let listing = try rig.run(security, ["approve"]).stdout
            let id = try #require(listing.split(separator: " ").first.flatMap { UInt64($0) }, "the request is listed: \(listing)")
            #expect(listing.contains("/usr/bin/secret-tool") && listing.contains("the Secret Service collection 'Login'"), "\(listing)")

            // Answered from a terminal, with the passcode given to keychaind's own prompt there; remembered.
            try rig.queuePrompts("pin pw-1")
            let approved = try rig.run("/usr/bin/script", ["-qec", "'\(security)' approve --always \(id)", "/dev/null"], timeout: 120)
            #expect(approved.stdout.contains("Request \(id) allowed."), "\(approved.stdout)")
            store.waitUntilExit()
            #expect(store.terminationStatus == 0, "\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
            #expect(try rig.run(security, ["daemon", "status"]).stdout.contains("lock state: unlocked"), "the approval's passcode unlocked the keychain")

            // `--always`: the next secret-tool reads it without anyone being asked.
            let shown = rig.promptsShown
            let lookup = try rig.run("/usr/bin/secret-tool", ["lookup", "app", "headless"])
            #expect(lookup.status == 0 && lookup.stdout == "from-nowhere", "\(lookup.stdout)\(lookup.stderr)")
            #expect(rig.promptsShown == shown)
            #expect(try rig.run(security, ["approve"]).stdout == "No request waits for approval.\n")
        }
    }

    @Test("no passcode and no prompt possible: secret-tool store fails at once, saying to set a passcode")
    func withoutAPasscodeTheErrorSaysToSetOne() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            try rig.queuePrompts("nodisplay")
            let store = try rig.run("/usr/bin/secret-tool", ["store", "--label=Headless", "app", "headless"], input: "secret")
            #expect(store.status != 0)
            #expect(store.stderr.contains("keychaind has no way to ask"), "\(store.stderr)")
            #expect(store.stderr.contains("security set-keychain-password"), "\(store.stderr)")
            #expect(store.stderr.contains("security approve"), "\(store.stderr)")
            #expect(try rig.run(try BuiltProducts.path(of: "security"), ["approve"]).stdout == "No request waits for approval.\n", "nothing waits")
        }
    }
}
