import Foundation
import Testing
import KeychainCore
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A scripted pinentry for a keychaind, named by `KEYCHAIN_PINENTRY` in keychaind's own environment (a setting may
/// only name an installed pinentry).
typealias DaemonPinentry = PinentryScript

/// Reaching another program's items, through keychaind, needs the person, whether or not a passcode is set: the
/// security tool is no skeleton key. (Exit statuses are the OSStatus's low byte, as macOS's tool gives them:
/// errSecInteractionNotAllowed 36, errSecAuthFailed 51, errSecUserCanceled 128.)
@Suite struct ApprovalTests {
    /// A keychain with a registered program's two items, and the security tool's command to read one's secret.
    struct Victim {
        let fixture: DaemonFixture
        let app: String

        init() throws {
            fixture = try DaemonFixture()
            app = try fixture.program("victim")
            try registerProgram(fixture.engine, path: app, groups: ["TEAM.victim"])
        }

        func store(daemon: DaemonProcess) throws {
            let env = try fixture.environment(daemon)
            #expect(try runProgram(app, ["add", "x", "svc", "secret-x"], environment: env).stdout == "status=0\n")
            #expect(try runProgram(app, ["add", "y", "svc", "secret-y"], environment: env).stdout == "status=0\n")
        }

        /// `security find-generic-password -a ACCOUNT -s svc --access-group TEAM.victim -w` through `daemon`.
        func steal(_ account: String, daemon: DaemonProcess) throws -> ProcessResult {
            try runProgram(
                try BuiltProducts.path(of: "security"),
                ["find-generic-password", "-a", account, "-s", "svc", "--access-group", "TEAM.victim", "-w"],
                environment: try fixture.environment(daemon))
        }
    }

    @Test func withNoPasscodeAndNoWayToAskTheSecurityToolGetsNoOtherProgramsSecret() throws {
        let victim = try Victim()
        let daemon = try DaemonProcess(home: victim.fixture.home, environment: ["KEYCHAIN_PINENTRY": "/nonexistent/pinentry"])
        try victim.store(daemon: daemon)
        let run = try victim.steal("x", daemon: daemon)
        #expect(run.status == 36, "errSecInteractionNotAllowed: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-x") && !run.stderr.contains("secret-x"))
        #expect(run.stderr.contains("needs your approval to use your confidential information stored in \"svc\""), "\(run.stderr)")
        #expect(run.stderr.contains("Run the command from a terminal or a desktop session"), "\(run.stderr)")
        // Its own items need nobody.
        let env = try victim.fixture.environment(daemon)
        let security = try BuiltProducts.path(of: "security")
        #expect(try runProgram(security, ["add-generic-password", "-a", "mine", "-s", "svc", "-w", "own"], environment: env).status == 0)
        #expect(try runProgram(security, ["find-generic-password", "-a", "mine", "-s", "svc", "-w"], environment: env).stdout == "own\n")
        // Nor can it be approved from a terminal: with no passcode, nothing there proves the person.
        #expect(run.stderr.contains("set one with `security set-keychain-password`"), "\(run.stderr)")
        let approve = try runProgram(security, ["approve", "1"], environment: env)
        #expect(approve.status == 36 && approve.stderr.contains("only with the keychain's passcode, and none is set"), "\(approve.stderr)")
        #expect(daemon.stop() == 0)
    }

    @Test func allowOnceAlwaysAndDenyAreTheAnswersAndTheLastTwoAreRemembered() throws {
        let victim = try Victim()
        let pinentry = try DaemonPinentry()
        let daemon = try DaemonProcess(home: victim.fixture.home, environment: ["KEYCHAIN_PINENTRY": pinentry.program])
        try victim.store(daemon: daemon)

        // Allow, only this time: the secret, once.
        try pinentry.queue("confirm notok")
        var run = try victim.steal("x", daemon: daemon)
        #expect(run.status == 0 && run.stdout == "secret-x\n", "\(run.stdout)\(run.stderr)")
        #expect(pinentry.starts == 1)
        #expect(pinentry.log.contains("wants to use your confidential information stored in \"svc\" in your keychain, an item of TEAM.victim"), "\(pinentry.log)")
        // Nothing remembered: asked again (nobody answers: cancelled).
        run = try victim.steal("x", daemon: daemon)
        #expect(run.status == 128, "errSecUserCanceled: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-x"))
        #expect(pinentry.starts == 2)

        // Always allow: remembered, never asked again for this item.
        try pinentry.queue("confirm")
        #expect(try victim.steal("x", daemon: daemon).stdout == "secret-x\n")
        #expect(try victim.steal("x", daemon: daemon).stdout == "secret-x\n")
        #expect(pinentry.starts == 3)

        // Deny: refused, and remembered.
        try pinentry.queue("notok")
        run = try victim.steal("y", daemon: daemon)
        #expect(run.status == 51, "errSecAuthFailed: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-y"))
        run = try victim.steal("y", daemon: daemon)
        #expect(run.status == 51 && !run.stdout.contains("secret-y"))
        #expect(pinentry.starts == 4, "the refusal was remembered")
        #expect(daemon.stop() == 0)
        let decisions = try victim.fixture.engine.consents()
        #expect(decisions.map(\.verdict).sorted { $0.rawValue < $1.rawValue } == [.always, .deny])
        let security = try BuiltProducts.path(of: "security")
        #expect(decisions.allSatisfy { $0.programIsNamed(security) })
    }

    /// With a passcode set, the trusted prompt asks for it after "Allow": a wrong one allows nothing and remembers
    /// nothing.
    @Test func withAPasscodeTheTrustedPromptAsksForIt() throws {
        let victim = try Victim()
        let pinentry = try DaemonPinentry()
        let daemon = try DaemonProcess(home: victim.fixture.home, environment: ["KEYCHAIN_PINENTRY": pinentry.program])
        try victim.store(daemon: daemon)
        let env = try victim.fixture.environment(daemon)
        let security = try BuiltProducts.path(of: "security")
        #expect(try ProgramRun.run(security, ["set-keychain-password", "--new-password-stdin"], environment: env, input: Data("pw-1\n".utf8)).status == 0)

        // Allow, Always allow, then (a second pinentry) the passcode.
        try pinentry.queue("confirm", "pin wrong")
        var run = try victim.steal("x", daemon: daemon)
        #expect(run.status == 51 && !run.stdout.contains("secret-x"), "errSecAuthFailed: \(run.stdout)\(run.stderr)")
        #expect(pinentry.log.contains("GETPIN"))
        #expect(try victim.fixture.engine.consents().isEmpty, "a wrong passcode remembers nothing")

        try pinentry.queue("confirm notok", "pin pw-1")
        run = try victim.steal("x", daemon: daemon)
        #expect(run.status == 0 && run.stdout == "secret-x\n", "\(run.stdout)\(run.stderr)")
        #expect(!run.stderr.contains("password"), "the security tool never asked for it itself: \(run.stderr)")
        #expect(daemon.stop() == 0)
    }

    /// No prompt can ask where the request runs: with a passcode set, it waits for `security approve` from a
    /// terminal, which gives the passcode to keychaind's own prompt there (never on its standard input).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) (bsdutils) for a terminal"))
    func aRequestNoPromptCanAskWaitsForApprovalFromATerminal() throws {
        let victim = try Victim()
        let pinentry = try DaemonPinentry()
        let daemon = try DaemonProcess(home: victim.fixture.home, environment: ["KEYCHAIN_PINENTRY": pinentry.program])
        try victim.store(daemon: daemon)
        let env = try victim.fixture.environment(daemon)
        let security = try BuiltProducts.path(of: "security")
        #expect(try ProgramRun.run(security, ["set-keychain-password", "--new-password-stdin"], environment: env, input: Data("pw-1\n".utf8)).status == 0)

        // The requester's prompt cannot be shown; it waits.
        try pinentry.queue("nodisplay")
        let output = victim.fixture.folder + "/requester.out"
        let requester = Process()
        requester.executableURL = URL(fileURLWithPath: security)
        requester.arguments = ["find-generic-password", "-a", "x", "-s", "svc", "--access-group", "TEAM.victim", "-w"]
        requester.environment = env
        #expect(FileManager.default.createFile(atPath: output, contents: nil))
        requester.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        requester.standardError = FileHandle.nullDevice
        try requester.run()
        defer { if requester.isRunning { requester.terminate() } }

        #expect(daemon.daemon.waitForOutput(containing: "a request waits for approval"), "\(daemon.output)")
        let listing = try runProgram(security, ["approve"], environment: env).stdout
        let id = try #require(listing.split(separator: " ").first.flatMap { UInt64($0) }, "the request is listed: \(listing)")
        #expect(listing.contains(security) && listing.contains("stored in \"svc\""), "\(listing)")

        // Not from a pipe: keychaind asks for the passcode on a terminal only.
        let piped = try ProgramRun.run(security, ["approve", "\(id)"], environment: env, input: Data("pw-1\n".utf8))
        #expect(piped.status == 36 && piped.stderr.contains("must run in a terminal"), "\(piped.stderr)")
        // A wrong passcode on the terminal answers nothing.
        try pinentry.queue("pin wrong")
        let wrong = try ProgramRun.run("/usr/bin/script", ["-qec", "'\(security)' approve \(id)", "/dev/null"], environment: env, timeout: 120)
        #expect(wrong.stdout.contains("authorization/authentication failed") || wrong.status != 0, "\(wrong.stdout)")
        #expect(requester.isRunning, "still waiting")
        // The passcode, given to keychaind's prompt on the approving terminal.
        try pinentry.queue("pin pw-1")
        let approved = try ProgramRun.run("/usr/bin/script", ["-qec", "'\(security)' approve \(id)", "/dev/null"], environment: env, timeout: 120)
        #expect(approved.stdout.contains("Request \(id) allowed."), "\(approved.stdout)")
        requester.waitUntilExit()
        #expect(requester.terminationStatus == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "secret-x\n")
        #expect(pinentry.log.contains("OPTION ttyname=/dev/pts/"), "asked on the approving terminal: \(pinentry.log)")
        #expect(try runProgram(security, ["approve"], environment: env).stdout == "No request waits for approval.\n")
        #expect(daemon.stop() == 0)
    }

    /// Registering a program, changing the settings and exporting a backup change who reaches what: each needs the
    /// person too (with no passcode set, as in the attack).
    @Test func registeringSettingsAndBackupsNeedThePerson() throws {
        let victim = try Victim()
        let daemon = try DaemonProcess(home: victim.fixture.home, environment: ["KEYCHAIN_PINENTRY": "/nonexistent/pinentry"])
        try victim.store(daemon: daemon)
        let env = try victim.fixture.environment(daemon)
        let security = try BuiltProducts.path(of: "security")
        let register = try runProgram(security, ["app", "add", "--group", "TEAM.victim", "/usr/bin/python3"], environment: env)
        #expect(register.status == 36, "\(register.stdout)\(register.stderr)")
        #expect(register.stderr.contains("needs your approval to register /usr/bin/python3"), "\(register.stderr)")
        let policy = try runProgram(security, ["set-keychain-settings", "--secret-service-unregistered", "allow"], environment: env)
        #expect(policy.status == 36, "\(policy.stdout)\(policy.stderr)")
        let backup = try ProgramRun.run(
            security, ["backup-keychain", "-o", victim.fixture.folder + "/all.backup", "--password-stdin"],
            environment: env, input: Data("backup-pw\n".utf8))
        #expect(backup.status == 36, "\(backup.stdout)\(backup.stderr)")
        #expect(!FileManager.default.fileExists(atPath: victim.fixture.folder + "/all.backup"))
        #expect(daemon.stop() == 0)
        #expect(try victim.fixture.engine.appRegistry().entries.count == 1, "nothing registered")
        #expect((try KeychainSettings.load(victim.fixture.engine.location))?.secretServiceUnregistered == nil)
    }
}
