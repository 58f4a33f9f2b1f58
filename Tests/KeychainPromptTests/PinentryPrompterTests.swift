import Foundation
import Synchronization
import Testing
import KeychainCore
import KeychainTestSupport
@testable import KeychainPrompt

/// A scripted pinentry (the `scripted-pinentry` test program) with its own script and log files.
final class ScriptedPinentry {
    let folder: String
    let script: String
    let log: String
    let program: String

    /// Queues `lines`, one per pinentry start.
    init(_ lines: [String]) throws {
        folder = FileManager.default.temporaryDirectory.path + "/prompt-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        script = folder + "/script"
        log = folder + "/log"
        program = try BuiltProducts.path(of: "scripted-pinentry")
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: script))
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// The environment the prompter draws the pinentry's from.
    var environment: [String: String] { ["SCRIPTED_PINENTRY_SCRIPT": script, "SCRIPTED_PINENTRY_LOG": log, "PATH": "/usr/bin:/bin"] }

    /// A prompter running the scripted pinentry.
    func prompter(timeout: Duration = .seconds(30), extra: [String: String] = [:]) -> PinentryPrompter {
        PinentryPrompter(choice: .program(program), timeout: timeout, environment: environment.merging(extra) { $1 })
    }

    /// Every line logged, in order.
    var lines: [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    /// The sessions: each starts at a `--- start PID` line. The `--- fds` and `OPTION` lines are left out (OPTION
    /// ttyname depends on whether the test runs on a terminal).
    var sessions: [[String]] {
        var sessions: [[String]] = []
        for line in lines where !line.hasPrefix("--- fds") && !line.hasPrefix("OPTION ") {
            if line.hasPrefix("--- start ") { sessions.append([]) }
            if !sessions.isEmpty { sessions[sessions.count - 1].append(line) }
        }
        return sessions
    }

    /// The pids of the pinentries started.
    var pids: [pid_t] { lines.compactMap { $0.hasPrefix("--- start ") ? pid_t($0.dropFirst(10)) : nil } }

    /// What the script file still holds.
    var remainingScript: String { (try? String(contentsOfFile: script, encoding: .utf8)) ?? "" }
}

/// Whether process `pid` is gone (reaped: not even a zombie).
func isGone(_ pid: pid_t) -> Bool { kill(pid, 0) == -1 && errno == ESRCH }

let text = PromptText(title: "Keychain", description: "50% off\r\nrm -rf")

/// KeychainPrompt against a real pinentry process (the scripted one).
struct PinentryPrompterTests {
    @Test func theDescriptionReachesThePinentryEscapedAndThePinComesBackAsBytes() throws {
        let pinentry = try ScriptedPinentry(["pin s3cret"])
        let outcome = pinentry.prompter(timeout: .seconds(30)).askSecret(text)
        guard case .answered(let secret) = outcome else { Issue.record("\(outcome)"); return }
        #expect(secret == Data("s3cret".utf8))
        let pid = try #require(pinentry.pids.first)
        #expect(pinentry.sessions == [["--- start \(pid)", "SETTIMEOUT 30", "SETTITLE Keychain", "SETDESC 50%25 off%0D%0Arm -rf", "GETPIN", "BYE"]])
        #expect(pinentry.lines.contains("--- fds 0 1 2"), "no descriptor but 0, 1 and 2 is inherited: \(pinentry.lines)")
        #expect(isGone(pid), "the pinentry was reaped")
    }

    @Test func aPinWithPercentAndSpacesComesBackExactly() throws {
        let pinentry = try ScriptedPinentry(["pin 50% of my pass %0A word ", "pin"])
        let prompter = pinentry.prompter()
        guard case .answered(let secret) = prompter.askSecret(text) else { Issue.record("not answered"); return }
        #expect(secret == Data("50% of my pass %0A word ".utf8))
        guard case .answered(let empty) = prompter.askSecret(text) else { Issue.record("not answered"); return }
        #expect(empty.isEmpty, "an empty entry is an empty answer")
    }

    @Test func thePromptAndErrorAreShownWhenGiven() throws {
        let pinentry = try ScriptedPinentry(["pin again"])
        let retry = PromptText(title: "Unlock", description: "Unlock the keychain", prompt: "Passcode:", error: "Wrong passcode (2 tries left)")
        guard case .answered = pinentry.prompter(timeout: .seconds(5)).askSecret(retry) else { Issue.record("not answered"); return }
        let pid = try #require(pinentry.pids.first)
        #expect(
            pinentry.sessions == [
                [
                    "--- start \(pid)", "SETTIMEOUT 5", "SETTITLE Unlock", "SETDESC Unlock the keychain",
                    "SETPROMPT Passcode:", "SETERROR Wrong passcode (2 tries left)", "GETPIN", "BYE",
                ]
            ])
    }

    @Test func theTerminalAndLocaleGoAsOptions() throws {
        let pinentry = try ScriptedPinentry(["pin x"])
        let prompter = pinentry.prompter(extra: ["GPG_TTY": "/dev/pts/9", "TERM": "xterm-256color", "LANG": "de_DE.UTF-8", "LC_CTYPE": "C.UTF-8"])
        guard case .answered = prompter.askSecret(text) else { Issue.record("not answered"); return }
        #expect(pinentry.lines.filter { $0.hasPrefix("OPTION ") } == ["OPTION ttyname=/dev/pts/9", "OPTION ttytype=xterm-256color", "OPTION lc-ctype=C.UTF-8"])
    }

    @Test(arguments: ["cancel", "notok"])
    func aCancelledEntryIsCancelled(line: String) throws {
        let pinentry = try ScriptedPinentry([line])
        #expect(pinentry.prompter().askSecret(text).kind == "cancelled")
        #expect(pinentry.sessions.first?.last == "BYE", "the session still ends politely")
    }

    @Test func anEmptyScriptCancels() throws {
        let pinentry = try ScriptedPinentry([])
        #expect(pinentry.prompter().confirm(text).kind == "cancelled")
    }

    @Test func confirmAnswersYesNoOrCancelled() throws {
        let pinentry = try ScriptedPinentry(["confirm", "notok", "cancel"])
        let prompter = pinentry.prompter()
        #expect(prompter.confirm(text).answer == true)
        #expect(prompter.confirm(text).answer == false)
        #expect(prompter.confirm(text).kind == "cancelled")
        #expect(pinentry.sessions.map { $0.dropFirst().last } == ["BYE", "BYE", "BYE"])
        #expect(pinentry.sessions.allSatisfy { $0.contains("CONFIRM") && !$0.contains("GETPIN") })
    }

    @Test func consentTakesAllowThenRemember() throws {
        let pinentry = try ScriptedPinentry(["confirm notok", "confirm confirm", "notok", "cancel", "confirm cancel"])
        let prompter = pinentry.prompter(timeout: .seconds(30))
        let consent = PromptText(title: "Keychain", description: "Allow /usr/bin/git to read \"github.com\"?")
        #expect(prompter.askConsent(consent).answer == .once)
        #expect(prompter.askConsent(consent).answer == .always)
        #expect(prompter.askConsent(consent).answer == .deny)
        #expect(prompter.askConsent(consent).kind == "cancelled", "cancelling the first step remembers nothing")
        #expect(prompter.askConsent(consent).kind == "cancelled", "cancelling the second step allows nothing")

        let sessions = pinentry.sessions
        try #require(sessions.count == 5)
        let pid = try #require(pinentry.pids.first)
        #expect(
            sessions[0] == [
                "--- start \(pid)", "SETTIMEOUT 30", "SETTITLE Keychain", "SETDESC Allow /usr/bin/git to read \"github.com\"?",
                "SETOK _Allow", "SETNOTOK _Deny", "SETCANCEL _Cancel", "CONFIRM",
                "SETDESC Remember this answer?%0A%0AAllow /usr/bin/git to read \"github.com\"?%0A%0A\"Always allow\" lets it do this again without asking. \"Only this time\" asks again next time.",
                "SETOK Al_ways allow", "SETNOTOK _Only this time", "SETCANCEL _Cancel", "CONFIRM", "BYE",
            ])
        #expect(sessions[2].filter { $0 == "CONFIRM" }.count == 1, "a refusal asks nothing more")
        #expect(sessions[3].filter { $0 == "CONFIRM" }.count == 1)
    }

    @Test func aHangingPinentryTimesOutAndIsKilledAndReaped() throws {
        let pinentry = try ScriptedPinentry(["hang"])
        let outcome = pinentry.prompter(timeout: .seconds(1)).askSecret(text)
        #expect(outcome.kind == "timedOut")
        let pid = try #require(pinentry.pids.first)
        #expect(isGone(pid), "killed and reaped: no process, no zombie")
        #expect(pinentry.sessions.first?.last == "GETPIN", "no BYE: it was killed")
    }

    @Test func aPinentryThatDiesCancels() throws {
        let pinentry = try ScriptedPinentry(["die", "die"])
        let prompter = pinentry.prompter()
        #expect(prompter.askSecret(text).kind == "cancelled")
        #expect(prompter.confirm(text).kind == "cancelled")
        #expect(pinentry.pids.count == 2)
        #expect(pinentry.pids.allSatisfy(isGone))
    }

    @Test(arguments: ["flood", "flood-lines"])
    func aFloodingPinentryGivesNoAnswerAndIsKilled(line: String) throws {
        let pinentry = try ScriptedPinentry([line])
        let outcome = pinentry.prompter(timeout: .seconds(30)).askSecret(text)
        guard case .unavailable(let why) = outcome else { Issue.record("\(outcome)"); return }
        #expect(why.contains(line == "flood" ? "longer than Assuan's 1000-byte limit" : "more than 8192 bytes of data"), "\(why)")
        let pid = try #require(pinentry.pids.first)
        #expect(isGone(pid))
    }

    @Test func promptsAreShownOneAfterTheOther() throws {
        // The first pinentry started answers after half a second; the other caller waits for its turn meanwhile.
        let pinentry = try ScriptedPinentry(["after 500 pin first", "pin second"])
        let prompter = pinentry.prompter()
        final class Answers: Sendable { let list = Mutex<[String]>([]) }
        let answers = Answers()
        // Threads of their own (Dispatch's pool may run one blocked work item at a time on a small machine).
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                if case .answered(let secret) = prompter.askSecret(text) {
                    answers.list.withLock { $0.append(String(decoding: secret, as: UTF8.self)) }
                }
                group.leave()
            }
        }
        group.wait()
        #expect(answers.list.withLock { $0.sorted() } == ["first", "second"])
        let pids = pinentry.pids
        try #require(pids.count == 2)
        let session = ["SETTIMEOUT 30", "SETTITLE Keychain", "SETDESC 50%25 off%0D%0Arm -rf", "GETPIN", "BYE"]
        #expect(
            pinentry.sessions == [["--- start \(pids[0])"] + session, ["--- start \(pids[1])"] + session],
            "two whole sessions, not interleaved: \(pinentry.lines)")
        #expect(pinentry.remainingScript.isEmpty)
    }

    @Test func aCallerWhoseTurnDoesNotComeInTimeGivesUpAndTheNextInLineGoes() {
        let turns = PromptTurns()
        let forever = { ContinuousClock.now.advanced(by: .seconds(60)) }
        #expect(turns.acquire(until: forever()))
        #expect(!turns.acquire(until: ContinuousClock.now.advanced(by: .milliseconds(100))), "the turn is taken")
        turns.release()
        #expect(turns.acquire(until: forever()), "the caller who gave up is no longer in line")
        turns.release()
    }

    @Test func aMissingProgramIsUnavailable() throws {
        let missing = PinentryPrompter(choice: .program("/nonexistent/pinentry"), timeout: .seconds(5))
        guard case .unavailable(let why) = missing.askSecret(text) else { Issue.record("answered"); return }
        #expect(why.contains("could not be started"))
        #expect(why.contains("apt-get install pinentry-curses"))

        let none = PinentryPrompter(choice: PinentryChoice.resolve(configured: nil, environment: ["PATH": "/nonexistent"]))
        guard case .unavailable(let reason) = none.confirm(text) else { Issue.record("answered"); return }
        #expect(reason.hasPrefix("No pinentry program was found in PATH"))
        #expect(reason.contains("KEYCHAIN_PINENTRY"))
    }
}

/// The process and its descriptor, ended either way.
struct PinentryProcessTests {
    /// The socket's identity, to tell it from a later descriptor given the same number.
    func identity(_ fd: Int32) -> (dev_t, ino_t)? {
        var info = stat()
        return fstat(fd, &info) == 0 ? (info.st_dev, info.st_ino) : nil
    }

    @Test(arguments: ["hang", "pin x"])
    func aSessionLeavesNoDescriptorAndNoProcess(line: String) throws {
        let pinentry = try ScriptedPinentry([line])
        let session = try PinentryProcess.start(program: pinentry.program, environment: PinentryProcess.environment(from: pinentry.environment))
        let fd = session.descriptor
        let socket = try #require(identity(fd))
        let soon = ContinuousClock.now.advanced(by: .seconds(30))
        #expect(try session.receive(deadline: soon) == .ok("Pleased to meet you"))
        #expect(try session.transact("SETDESC x", deadline: soon) == .ok([]))
        if line == "hang" {
            #expect(throws: AssuanError.timedOut) { try session.transact("GETPIN", deadline: ContinuousClock.now.advanced(by: .milliseconds(300))) }
            session.terminate()
        } else {
            #expect(try session.transact("GETPIN", deadline: soon) == .ok(Array("x".utf8)))
            session.finish()
        }
        #expect(session.descriptor == -1)
        let reused = identity(fd)
        #expect(reused == nil || reused?.0 != socket.0 || reused?.1 != socket.1, "the socket was closed")
        #expect(isGone(session.pid), "reaped: no process, no zombie")
        #expect(pinentry.sessions.first?.last == (line == "hang" ? "GETPIN" : "BYE"))
    }
}

/// Which pinentry is chosen.
struct PinentryChoiceTests {
    static let curses = "/usr/bin/pinentry-curses"
    static let hasCurses = FileManager.default.isExecutableFile(atPath: curses)

    @Test(.enabled(if: hasCurses, "needs pinentry-curses (Debian package pinentry-curses) as the installed pinentry"))
    func theEnvironmentBeatsTheSettingWhichBeatsPath() throws {
        let pinentry = try ScriptedPinentry([])
        let folder = pinentry.folder + "/bin"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/pinentry", withDestinationPath: pinentry.program)
        #expect(PinentryChoice.resolve(configured: Self.curses, environment: ["PATH": folder]) == .program(Self.curses))
        #expect(PinentryChoice.resolve(configured: Self.curses, environment: ["KEYCHAIN_PINENTRY": pinentry.program]) == .program(pinentry.program))
        #expect(PinentryChoice.resolve(settings: KeychainSettings(pinentryProgram: Self.curses), environment: ["PATH": folder]) == .program(Self.curses))
    }

    /// A setting is written by programs, so it may only pick an installed pinentry (one only root can change): one
    /// planted by a program of the user (the attack: set it before a passcode exists, then read the passcode at the
    /// next prompt) is never run.
    @Test func aSettingNamingAProgramThatIsNotAnInstalledPinentryIsRefused() throws {
        let pinentry = try ScriptedPinentry([])
        let planted = pinentry.folder + "/planted"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: true)
        let evil = planted + "/pinentry"
        try FileManager.default.copyItem(atPath: pinentry.program, toPath: evil)
        // The user's own file (nobody, when this test runs as root).
        if getuid() == 0 { #expect(chown(evil, 65534, 65534) == 0) }
        guard case .unavailable(let reason) = PinentryChoice.resolve(configured: evil, environment: ["PATH": "/nonexistent"]) else {
            Issue.record("a planted pinentry was chosen"); return
        }
        #expect(reason.contains("is not an installed pinentry"))
        #expect(InstalledPinentry.refusal("/tmp/x")?.contains("is not an installed pinentry") == true)
        #expect(InstalledPinentry.refusal("pinentry-curses")?.contains("not an absolute path") == true)
        #expect { try KeychainSettings(pinentryProgram: evil).validate(replacing: nil) } throws: { ($0 as? KeychainError)?.code == .invalidParameter }
        // A setting already there passes a change of another setting (it is checked again at every prompt).
        try KeychainSettings(idleTimeout: 5, pinentryProgram: evil).validate(replacing: KeychainSettings(pinentryProgram: evil))
    }

    /// Whoever can change the program named in the environment or found in PATH reads the passcode: a program
    /// others may write is not run, and PATH only finds root's.
    @Test func aPinentryOthersCanChangeIsNeverRun() throws {
        let pinentry = try ScriptedPinentry([])
        let folder = pinentry.folder + "/open"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let copy = folder + "/pinentry"
        try FileManager.default.copyItem(atPath: pinentry.program, toPath: copy)
        #expect(chmod(copy, 0o777) == 0)
        guard case .unavailable(let reason) = PinentryChoice.resolve(configured: nil, environment: ["KEYCHAIN_PINENTRY": copy]) else {
            Issue.record("a pinentry others may write was chosen"); return
        }
        #expect(reason.contains("writable by others"))
        #expect(PinentryChoice.resolve(configured: nil, environment: ["PATH": folder]) != .program(copy))
    }

    @Test func aRelativeOrMissingProgramIsRefusedWithoutFallingBack() throws {
        guard case .unavailable(let relative) = PinentryChoice.resolve(configured: nil, environment: ["KEYCHAIN_PINENTRY": "pinentry", "PATH": "/usr/bin"]) else {
            Issue.record("a relative override was accepted"); return
        }
        #expect(relative.contains("relative path, which is refused"))
        guard case .unavailable(let missing) = PinentryChoice.resolve(configured: "/nonexistent/pinentry-curses", environment: [:]) else {
            Issue.record("a missing program was accepted"); return
        }
        #expect(missing.contains("/nonexistent/pinentry-curses"))
        #expect(missing.contains("it does not exist"))
    }

    @Test func onlyAllowedVariablesReachThePinentry() {
        let environment = PinentryProcess.environment(from: [
            "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
            "LC_ALL": "C.UTF-8", "HOME": "/home/a", "SCRIPTED_PINENTRY_LOG": "/tmp/log",
            "LD_PRELOAD": "/tmp/evil.so", "KEYCHAIN_HOME": "/home/a/k", "SSH_AUTH_SOCK": "/tmp/agent", "GPG_TTY": "bad\0value",
        ])
        #expect(
            environment == [
                "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
                "LC_ALL": "C.UTF-8", "HOME": "/home/a", "SCRIPTED_PINENTRY_LOG": "/tmp/log",
            ])
    }

    @Test func theSettingsKeepTheProgramAndTimeout() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/prompt-settings-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let location = KeychainLocation(home: folder)
        let settings = KeychainSettings(idleTimeout: 300, lockOnSleep: true, pinentryProgram: "/usr/bin/pinentry-curses", promptTimeout: 45)
        try settings.save(location)
        #expect(try KeychainSettings.load(location) == settings)
        let plist = try #require(
            PropertyListSerialization.propertyList(
                from: Data(contentsOf: URL(fileURLWithPath: KeychainSettings.path(location))),
                format: nil) as? [String: Any])
        #expect(plist["pinentry-program"] as? String == "/usr/bin/pinentry-curses")
        #expect((plist["prompt-timeout"] as? NSNumber)?.intValue == 45)
        try KeychainSettings(idleTimeout: 300).save(location)
        #expect(try KeychainSettings.load(location) == KeychainSettings(idleTimeout: 300))
        #expect(PinentryPrompter(settings: settings, environment: [:]).timeout == .seconds(45))
        #expect(PinentryPrompter(settings: nil, environment: [:]).timeout == .seconds(60))
        #expect(PinentryPrompter(settings: KeychainSettings(promptTimeout: 100_000), environment: [:]).timeout == .seconds(600))
    }
}

extension PromptOutcome {
    /// The outcome's case, for comparisons.
    var kind: String {
        switch self {
        case .answered: "answered"
        case .cancelled: "cancelled"
        case .timedOut: "timedOut"
        case .unavailable(let why): "unavailable: \(why)"
        }
    }

    /// The answer, when there is one.
    var answer: Value? {
        if case .answered(let value) = self { return value }
        return nil
    }
}
