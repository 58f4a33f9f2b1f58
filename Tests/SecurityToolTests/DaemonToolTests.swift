import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real keychaind serving a sandbox's keychain, started from the build products beside the `security` under
/// test (which makes that `security` its admin tool), listening on `<sandbox>/d.sock` (the shared launcher of
/// KeychainTestSupport).
typealias SandboxDaemon = KeychaindProcess

extension KeychaindProcess {
    /// keychaind for the sandbox's keychain, with a person at the machine who approves what keychaind asks
    /// (``Sandbox/daemonEnvironment()``).
    convenience init(_ kc: Sandbox) throws {
        try self.init(socketPath: kc.root + "/d.sock", environment: kc.daemonEnvironment())
    }
}

extension Sandbox {
    /// The environment of a keychaind serving this sandbox: its keychain, and a person at the machine who approves
    /// every request keychaind asks them about (``ApprovingPerson``, answering `confirm`: Allow and Always allow; a
    /// test whose keychain has a passcode makes them give it with ``personKnowsPasscode(_:)``). Lines queued in
    /// `<root>/pinentry-script/script` answer first, and every start is logged in `<root>/pinentry-script/log` (as
    /// `PresenceToolTests.Pinentry` reads them).
    func daemonEnvironment() throws -> [String: String] {
        let folder = root + "/pinentry-script"
        let person = try ApprovingPerson(
            in: root + "/person", answer: FileManager.default.fileExists(atPath: root + "/person/person") ? nil : "confirm",
            script: folder + "/script", log: folder + "/log")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return environment([:]).merging(person.environment) { $1 }
    }

    /// The approving person gives `passcode` when keychaind asks for it after an approval.
    func personKnowsPasscode(_ passcode: String) throws {
        try "pin \(passcode)\n".write(toFile: root + "/person/person", atomically: true, encoding: .utf8)
    }
}

extension Sandbox {
    /// The build products folder: the tool, keychaind and the test helper sit side by side.
    var products: String { NSString(string: tool).deletingLastPathComponent }

    /// A copy of the test helper at `<root>/<name>`, made a program of its own by a trailing marker (an ELF file
    /// runs the same with bytes appended, but hashes differently). Returns its path with symlinks resolved,
    /// which is how keychaind and `security app add` name it.
    func program(_ name: String) throws -> String {
        let path = root + "/" + name
        var bytes = try Data(contentsOf: URL(fileURLWithPath: products + "/keychain-test-helper"))
        bytes.append(Data("\n\(name)\n".utf8))
        try writeExecutable(bytes, to: path)
        return try Sandbox.resolved(path)
    }

    /// `path` made absolute with every symlink resolved (realpath(3)).
    static func resolved(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else { throw TestProcessError("realpath \(path) failed") }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The first 12 hex digits of a file's SHA-256, as `security app list` prints them.
    static func shortDigest(_ path: String) throws -> String {
        String(try FileDigest.sha256Hex(ofFileAt: path).prefix(12))
    }

    /// Runs the tool on a new pseudo-terminal (script(1)) fed from `typing`; its stdout carries the terminal's
    /// output (prompts, echoed input, and the tool's stdout and stderr, with CRLF line ends).
    func onTerminal(_ arguments: [String], typing: String, environment extra: [String: String] = [:]) throws -> ToolResult {
        let command = ([tool] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try launch("/usr/bin/script", ["-qec", command, "/dev/null"], environment: extra, input: Data(typing.utf8))
    }
}

/// `security daemon status` and `security app add/list/remove`, through a real keychaind and in-process, with
/// the programs they register then asking that keychaind for their items.
@Suite("security: keychaind and the program registry")
struct DaemonToolTests {
    /// Whether script(1) is there to give the tool a terminal.
    static let hasScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")

    /// The keychaind refusal printed when the tool has no terminal to ask for the passcode on.
    static let noTerminalForDaemon =
        "security: SecKeychainUnlock default: User interaction is not allowed.\n"
        + "security: There is no terminal to ask on. The keychain is locked; run the command from a terminal to be asked for the keychain's passcode, or unlock it with `security unlock-keychain`.\n"

    @Test func daemonStatusRunningAndNotRunning() throws {
        try withKeychain { kc in
            let socket = kc.root + "/d.sock"
            let absent = try kc.run(["daemon", "status", "--socket", socket])
            #expect(absent.status == 1)
            #expect(absent.stdout == "keychaind: not running (socket \(socket))\n")
            #expect(absent.stderr == "")
            // KEYCHAIN_DAEMON_SOCKET names the socket when --socket is not given.
            let named = try kc.run(["daemon", "status"], environment: ["KEYCHAIN_DAEMON_SOCKET": socket])
            #expect(named.status == 1)
            #expect(named.stdout == "keychaind: not running (socket \(socket))\n")

            let daemon = try SandboxDaemon(kc)
            let tool = try Sandbox.resolved(kc.tool)
            let chosen = [
                "keychaind: running (pid \(daemon.pid))",
                "socket: \(socket)",
                "mode: named by KEYCHAIN_DAEMON_SOCKET",
                "uptime: <any>s",
            ]
            let expected = [
                "keychain: \(kc.home)",
                "lock state: no passcode",
                "caller: \(tool) (pid <any>, sha256 \(try Sandbox.shortDigest(tool)))",
                "admin tool: yes",
                "access groups: *",
                "writes: none since keychaind started",
            ]
            let running = try kc.run(["daemon", "status"], environment: daemon.environment)
            #expect(running.status == 0)
            // A kernel that lets programs of one user attach to each other is named, with what it means.
            let scope = try? String(contentsOfFile: "/proc/sys/kernel/yama/ptrace_scope", encoding: .utf8)
            if scope == nil || scope?.hasPrefix("0") == true {
                #expect(running.stderr.hasPrefix("warning: "))
                #expect(running.stderr.contains("kernel.yama.ptrace_scope=1"))
            } else {
                #expect(running.stderr == "")
            }
            expectLines(running.stdout, chosen + expected)
            // --socket wins over the environment (and says nothing of how the environment would choose).
            let overridden = try kc.run(["daemon", "status", "--socket", socket], environment: ["KEYCHAIN_DAEMON_SOCKET": kc.root + "/elsewhere.sock"])
            #expect(overridden.status == 0)
            expectLines(overridden.stdout, [chosen[0], chosen[1], chosen[3]] + expected)

            #expect(daemon.stop() == 0)
            let stopped = try kc.run(["daemon", "status", "--socket", socket])
            #expect(stopped.status == 1)
            #expect(stopped.stdout == "keychaind: not running (socket \(socket))\n")
            #expect(stopped.stderr == "")
        }
    }

    @Test func appVerbsThroughTheDaemonGiveRegisteredProgramsTheirGroups() throws {
        try withKeychain { kc in
            let appA = try kc.program("app-a"), appB = try kc.program("app-b"), stranger = try kc.program("stranger")
            try FileManager.default.createSymbolicLink(atPath: kc.root + "/link-b", withDestinationPath: appB)
            let daemon = try SandboxDaemon(kc)
            let env = daemon.environment
            let lineA = "\(appA)  sha256=\(try Sandbox.shortDigest(appA))  groups=TEAM.a,TEAM.shared  app-id=TEAM.com.example.a"
            let lineB = "\(appB)  sha256=\(try Sandbox.shortDigest(appB))  groups=TEAM.b"

            let addA = try kc.run(["app", "add", "-g", "TEAM.a", "--group", "TEAM.shared", "-i", "TEAM.com.example.a", appA], environment: env)
            #expect(addA.status == 0, "\(addA.stderr)")
            #expect(addA.stdout == "registered \(lineA)\n")
            #expect(addA.stderr == "")
            // A symlink registers the file it points to.
            let addB = try kc.run(["app", "add", "-g", "TEAM.b", kc.root + "/link-b"], environment: env)
            #expect(addB.stdout == "registered \(lineB)\n")
            #expect(
                try kc.run(["app", "add", "--flatpak", "org.example.Flat", "-g", "TEAM.flat"], environment: env).stdout
                    == "registered flatpak:org.example.Flat  groups=TEAM.flat\n")
            #expect(
                try kc.run(["app", "add", "--snap", "tool", "--application-identifier", "TEAM.com.example.tool"], environment: env).stdout
                    == "registered snap:tool  app-id=TEAM.com.example.tool\n")

            let list = try kc.run(["app", "list"], environment: env)
            #expect(list.status == 0)
            #expect(list.stderr == "")
            #expect(
                list.stdout
                    == [lineA, lineB, "flatpak:org.example.Flat  groups=TEAM.flat", "snap:tool  app-id=TEAM.com.example.tool"]
                    .sorted().map { $0 + "\n" }.joined())

            // The registered copy gets its first group from the daemon; an unregistered one may not name it.
            #expect(try kc.launch(appA, ["add", "acct", "svc", "s3cret"], environment: env).stdout == "status=0\n")
            #expect(try kc.launch(appA, ["find", "acct", "svc"], environment: env).stdout == "status=0\ndata=s3cret\nagrp=TEAM.a\n")
            #expect(try kc.launch(appB, ["find", "acct", "svc"], environment: env).stdout == "status=-25300\n")
            #expect(try kc.launch(stranger, ["find", "acct", "svc", "TEAM.a"], environment: env).stdout == "status=-34018\n")

            // Another copy of the tool is not the one beside keychaind: the daemon refuses it the registry.
            let copy = kc.root + "/security-copy"
            try copyExecutable(from: kc.tool, to: copy)
            let refused = try kc.launch(copy, ["app", "list"], environment: env)
            #expect(refused.status == 30)
            #expect(refused.stdout == "")
            #expect(
                refused.stderr.hasPrefix(
                    "security: app list: A required entitlement isn't present.\n"
                        + "security: Only the security tool may list registered programs through keychaind; \(try Sandbox.resolved(copy)) (pid "))
            #expect(refused.stderr.hasSuffix(") may not.\n"))

            // Removing a program takes its groups away (its items stay, out of its reach).
            let removed = try kc.run(["app", "remove", appA], environment: env)
            #expect(removed.status == 0)
            #expect(removed.stdout == "removed 1 program\n")
            #expect(removed.stderr == "")
            #expect(try kc.launch(appA, ["find", "acct", "svc"], environment: env).stdout == "status=-25300\n")
            #expect(try kc.run(["app", "remove", "flatpak:org.example.Flat"], environment: env).stdout == "removed 1 program\n")
            #expect(try kc.run(["app", "remove", "tool"], environment: env).stdout == "removed 1 program\n")
            #expect(try kc.run(["app", "list"], environment: env).stdout == lineB + "\n")

            let missing = try kc.run(["app", "remove", appA], environment: env)
            #expect(missing.status == 44)
            #expect(missing.stdout == "")
            #expect(
                missing.stderr == "security: app remove: The specified item could not be found in the keychain.\n"
                    + "security: No program named \(appA) is registered; `security app list` shows the registered ones.\n")
            #expect(daemon.stop() == 0)
            #expect(!daemon.output.contains("s3cret"))
        }
    }

    @Test func appVerbsInProcessWithoutADaemon() throws {
        try withKeychain { kc in
            let appA = try kc.program("app-a")
            let lineA = "\(appA)  sha256=\(try Sandbox.shortDigest(appA))  groups=TEAM.a"
            #expect(try kc.run(["app", "list"]).stdout == "")

            let added = try kc.run(["app", "add", "-g", "TEAM.a", appA])
            #expect(added.status == 0)
            #expect(added.stdout == "registered \(lineA)\n")
            #expect(added.stderr == "")
            let list = try kc.run(["app", "list"])
            #expect(list.status == 0)
            #expect(list.stdout == lineA + "\n")
            #expect(list.stderr == "")

            // Files that cannot be registered, and registrations that would grant nothing.
            let absent = try kc.run(["app", "add", "-g", "TEAM.a", kc.root + "/nope"])
            #expect(absent.status == 1)
            #expect(absent.stdout == "")
            #expect(absent.stderr == "security: app add: \(kc.root)/nope does not exist. Give the path of the program's executable file (for a command on PATH: \"$(command -v NAME)\").\n")
            let plain = kc.root + "/plain"
            #expect(FileManager.default.createFile(atPath: plain, contents: Data("text".utf8), attributes: [.posixPermissions: 0o644]))
            let notExecutable = try kc.run(["app", "add", "-g", "TEAM.a", plain])
            #expect(notExecutable.status == 1)
            #expect(notExecutable.stderr == "security: app add: \(plain) is not executable. Register the program that runs it, or make it executable (chmod +x) first.\n")
            let folder = try kc.run(["app", "add", "-g", "TEAM.a", kc.root])
            #expect(folder.status == 1)
            #expect(folder.stderr == "security: app add: \(kc.root) is not a file. Give the path of the program's executable file.\n")
            let ungrouped = try kc.run(["app", "add", appA])
            #expect(ungrouped.status == 2)
            #expect(ungrouped.stderr.hasPrefix("Error: Give at least one --group or an --application-identifier"))
            let twoPrograms = try kc.run(["app", "add", "-g", "TEAM.a", "--snap", "tool", appA])
            #expect(twoPrograms.status == 2)
            #expect(twoPrograms.stderr.hasPrefix("Error: Name one program: an executable PATH, --flatpak APPID or --snap NAME."))
            let comma = try kc.run(["app", "add", "-g", "TEAM.a,TEAM.b", appA])
            #expect(comma.status == 2)
            #expect(try kc.run(["app", "list"]).stdout == lineA + "\n")

            // KEYCHAIN_DAEMON_SOCKET names a daemon that is not there: the call fails instead of going around it.
            let gone = kc.root + "/gone.sock"
            let unreachable = try kc.run(["app", "list"], environment: ["KEYCHAIN_DAEMON_SOCKET": gone])
            #expect(unreachable.status == 53)
            #expect(unreachable.stdout == "")
            #expect(unreachable.stderr.hasPrefix("security: keychaind is not answering at \(gone) ("))
            #expect(unreachable.stderr.hasSuffix("security: app list: OSStatus -25291 (see `security error -25291`)\n"))

            // A daemon started later honours the registration written in-process.
            let daemon = try SandboxDaemon(kc)
            #expect(try kc.launch(appA, ["add", "acct", "svc", "v"], environment: daemon.environment).stdout == "status=0\n")
            #expect(try kc.launch(appA, ["find", "acct", "svc"], environment: daemon.environment).stdout == "status=0\ndata=v\nagrp=TEAM.a\n")
            #expect(daemon.stop() == 0)

            // A keychain keychaind has served is not opened without it, even once it is stopped...
            let closed = try kc.run(["app", "list"])
            #expect(closed.status == 53)
            #expect(closed.stderr.contains("remove keychaind.serves from the keychain's folder"))
            // ...until keychaind.serves is removed: then the tool opens it itself again.
            try FileManager.default.removeItem(atPath: kc.home + "/keychaind.serves")
            let removed = try kc.run(["app", "remove", appA])
            #expect(removed.stdout == "removed 1 program\n")
            #expect(try kc.run(["app", "list"]).stdout == "")
            let missing = try kc.run(["app", "remove", "org.example.Nothing"])
            #expect(missing.status == 44)
            #expect(
                missing.stderr == "security: app remove: The specified item could not be found in the keychain.\n"
                    + "security: No program named org.example.Nothing is registered; `security app list` shows the registered ones.\n")
        }
    }

    @Test(
        "with a passcode, registering needs the person, who gives the passcode to keychaind's prompt, never to the tool",
        .enabled(if: hasScript, "needs script(1) for a terminal"))
    func passcodeGatesTheDaemonsRegistry() throws {
        try withKeychain { kc in
            try kc.succeed(["set-keychain-password", "-p", "correct-horse-7"])
            let appA = try kc.program("app-a")
            let lineA = "\(appA)  sha256=\(try Sandbox.shortDigest(appA))  groups=TEAM.a"
            let daemon = try SandboxDaemon(kc)
            let env = daemon.environment
            #expect(try kc.run(["daemon", "status"], environment: env).stdout.contains("\nlock state: before first unlock\n"))

            // Locked, and no terminal to ask on: the tool fails at once, as it does for a locked item.
            let refused = try kc.run(["app", "add", "-g", "TEAM.a", appA], environment: env, detached: true)
            #expect(refused.status == 36)
            #expect(refused.stdout == "")
            #expect(refused.stderr == Self.noTerminalForDaemon)

            // A wrong passcode on the terminal is refused by the daemon.
            let wrong = try kc.onTerminal(["app", "add", "-g", "TEAM.a", appA], typing: "0000\n", environment: env)
            #expect(wrong.status == 51)
            #expect(wrong.stdout.contains("password to unlock default: "))
            #expect(wrong.stdout.contains("security: SecKeychainUnlock default: The user name or passphrase you entered is not correct.\r\n"))
            #expect(!wrong.stdout.contains(lineA))

            // Unlocked, registering still needs the person: they allow it in keychaind's prompt and give the passcode
            // there; a person who gives the wrong one registers nothing.
            #expect(try kc.run(["unlock-keychain", "-p", "correct-horse-7"], environment: env).status == 0)
            let guessed = try kc.run(["app", "add", "-g", "TEAM.a", appA], environment: env, detached: true)
            #expect(guessed.status == 51, "\(guessed.stderr)")
            #expect(!(try kc.run(["app", "list"], environment: env).stdout.contains(lineA)))
            try kc.personKnowsPasscode("correct-horse-7")
            let added = try kc.run(["app", "add", "-g", "TEAM.a", appA], environment: env, detached: true)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.hasSuffix("registered \(lineA)\n"))
            #expect(try kc.run(["app", "list"], environment: env).stdout == lineA + "\n")
            // The registered program uses its group while the daemon is unlocked.
            #expect(try kc.launch(appA, ["add", "acct", "svc", "s3cret"], environment: env).stdout == "status=0\n")
            #expect(try kc.launch(appA, ["find", "acct", "svc"], environment: env).stdout == "status=0\ndata=s3cret\nagrp=TEAM.a\n")
            #expect(daemon.stop() == 0)
            #expect(!daemon.output.contains("correct-horse-7"))
            #expect(!daemon.output.contains("s3cret"))

            // Without the daemon (once its keychaind.serves is removed), the tool unlocks its own engine the same way.
            #expect(try kc.run(["app", "list"], detached: true).status == 53, "not while keychaind.serves names keychaind")
            try FileManager.default.removeItem(atPath: kc.home + "/keychaind.serves")
            let local = try kc.run(["app", "list"], detached: true)
            #expect(local.status == 36)
            #expect(local.stderr.hasPrefix("security: SecKeychainUnlock default: User interaction is not allowed.\n"))
            let removed = try kc.onTerminal(["app", "remove", appA], typing: "correct-horse-7\n")
            #expect(removed.status == 0)
            #expect(removed.stdout.hasSuffix("removed 1 program\r\n"))
        }
    }

    @Test func lockUnlockAndPasscodeVerbsGoToTheRunningDaemon() throws {
        try withKeychain { kc in
            let daemon = try SandboxDaemon(kc)
            let env = daemon.environment
            let app = try kc.program("app")
            func status() throws -> String { try kc.run(["daemon", "status"], environment: env).stdout }
            #expect(try status().contains("\nlock state: no passcode\n"))
            #expect(try kc.run(["unlock-keychain", "-p", "anything"], environment: env).status == 0, "nothing to unlock")

            // Setting the passcode through the daemon: it keeps its keys, now behind the passcode.
            let set = try kc.run(["set-keychain-password", "-p", "pass-1"], environment: env, detached: true)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(try status().contains("\nlock state: unlocked\n"))
            #expect(try kc.launch(app, ["add", "acct", "svc", "v1"], environment: env).stdout == "status=0\n")

            // lock-keychain locks the daemon, so every program's WhenUnlocked items are out of reach…
            #expect(try kc.run(["lock-keychain"], environment: env).status == 0)
            #expect(try status().contains("\nlock state: locked\n"))
            #expect(try kc.launch(app, ["find", "acct", "svc"], environment: env).stdout == "status=-25308\n")
            // …until unlock-keychain gives it the passcode (a wrong one is refused and changes nothing).
            let wrong = try kc.run(["unlock-keychain", "-p", "nope"], environment: env)
            #expect(wrong.status == 51)
            #expect(wrong.stderr.hasPrefix("security: SecKeychainUnlock default: The user name or passphrase you entered is not correct.\n"))
            #expect(try status().contains("\nlock state: locked\n"))
            #expect(try kc.run(["unlock-keychain", "-p", "pass-1"], environment: env).status == 0)
            #expect(try kc.launch(app, ["find", "acct", "svc"], environment: env).stdout == "status=0\ndata=v1\nagrp=\(app)\n")

            // Changing the passcode needs the old one; removing it (-p "") leaves nothing to unlock.
            let bad = try kc.run(["set-keychain-password", "-o", "nope", "-p", "pass-2"], environment: env, detached: true)
            #expect(bad.status == 51)
            #expect(try kc.run(["set-keychain-password", "-o", "pass-1", "-p", "pass-2"], environment: env, detached: true).status == 0)
            #expect(try kc.run(["lock-keychain"], environment: env).status == 0)
            #expect(try kc.run(["unlock-keychain", "-p", "pass-1"], environment: env).status == 51)
            #expect(try kc.run(["unlock-keychain", "-p", "pass-2"], environment: env).status == 0)
            #expect(try kc.run(["set-keychain-password", "-o", "pass-2", "-p", ""], environment: env, detached: true).status == 0)
            #expect(try status().contains("\nlock state: no passcode\n"))
            #expect(try kc.launch(app, ["find", "acct", "svc"], environment: env).stdout == "status=0\ndata=v1\nagrp=\(app)\n")
            #expect(daemon.stop() == 0)
            #expect(!daemon.output.contains("pass-1") && !daemon.output.contains("pass-2"))
        }
    }

    @Test func passwordVerbsWorkThroughTheDaemon() throws {
        try withKeychain { kc in
            let daemon = try SandboxDaemon(kc)
            // The tool's own KEYCHAIN_HOME is empty: whatever it finds comes from the daemon's keychain.
            var env = daemon.environment
            env["KEYCHAIN_HOME"] = kc.root + "/elsewhere"
            let app = try kc.program("app")
            #expect(try kc.launch(app, ["add", "acct", "svc", "app-secret"], environment: daemon.environment).stdout == "status=0\n")
            #expect(try kc.run(["find-generic-password", "-a", "acct", "-s", "svc", "-w"], environment: env).stdout == "app-secret\n")
            let added = try kc.run(["add-generic-password", "-a", "me", "-s", "tool", "-w", "tool-secret"], environment: env)
            #expect(added.status == 0)
            #expect(added.stdout == "" && added.stderr == "")
            let found = try kc.run(["find-generic-password", "-s", "tool"], environment: env)
            #expect(found.status == 0)
            #expect(found.stdout.contains("    \"acct\"<blob>=\"me\"\n"))
            #expect(found.stdout.hasPrefix("keychain: \"\(kc.home)/keychain-2.db\"\n"), "the daemon's keychain")
            let updated = try kc.run(["add-generic-password", "-U", "-a", "me", "-s", "tool", "-w", "tool-secret-2"], environment: env)
            #expect(updated.status == 0)
            #expect(try kc.run(["find-generic-password", "-s", "tool", "-w"], environment: env).stdout == "tool-secret-2\n")
            let duplicate = try kc.run(["add-generic-password", "-a", "me", "-s", "tool", "-w", "x"], environment: env)
            #expect(duplicate.status == 45)
            let dump = try kc.run(["dump-keychain", "-d"], environment: env)
            #expect(dump.stdout.contains("\"app-secret\""))
            #expect(dump.stdout.contains("\"tool-secret-2\""))
            let deleted = try kc.run(["delete-generic-password", "-a", "acct", "-s", "svc"], environment: env)
            #expect(deleted.status == 0)
            #expect(deleted.stderr == "password has been deleted.\n")
            #expect(try kc.launch(app, ["find", "acct", "svc"], environment: daemon.environment).stdout == "status=-25300\n")
            let missing = try kc.run(["find-generic-password", "-s", "nothing"], environment: env)
            #expect(missing.status == 44)
            #expect(missing.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
            #expect(!FileManager.default.fileExists(atPath: kc.root + "/elsewhere/keychain-2.db"), "the tool never opened a store itself")
            #expect(daemon.stop() == 0)
        }
    }

    @Test(.enabled(if: hasScript, "needs script(1) for a terminal"))
    func passwordVerbsThroughTheDaemonAskForThePasscode() throws {
        try withKeychain { kc in
            try kc.succeed(["set-keychain-password", "-p", "pw-3"])
            let daemon = try SandboxDaemon(kc)
            let env = daemon.environment
            #expect(try kc.run(["unlock-keychain", "-p", "pw-3"], environment: env).status == 0)
            let app = try kc.program("app")
            #expect(try kc.launch(app, ["add", "acct", "svc", "app-secret"], environment: env).stdout == "status=0\n")
            // The daemon is unlocked, yet the admin tool reads another program's secret only with the person's
            // approval, given with the passcode in keychaind's prompt (the person first answers with a wrong one).
            let refused = try kc.run(["find-generic-password", "-a", "acct", "-s", "svc", "-w"], environment: env, detached: true)
            #expect(refused.status == 51, "\(refused.stderr)")
            #expect(refused.stdout == "")
            try kc.personKnowsPasscode("pw-3")
            let shown = try kc.run(["find-generic-password", "-a", "acct", "-s", "svc", "-w"], environment: env, detached: true)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout == "app-secret\n", "the tool asked for nothing itself")
            #expect(daemon.stop() == 0)
        }
    }
}

/// Checks output line by line; `<any>` in an expected line matches any text in that place.
func expectLines(_ actual: String, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let lines = actual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.count == expected.count + 1, "line count differs:\n\(actual)", sourceLocation: sourceLocation)
    #expect(lines.last == "", "output must end with a newline", sourceLocation: sourceLocation)
    for (line, want) in zip(lines, expected) {
        let parts = want.components(separatedBy: "<any>")
        if parts.count == 2 {
            #expect(
                line.hasPrefix(parts[0]) && line.hasSuffix(parts[1]) && line.count >= want.count - 5, "\(line) does not match \(want)",
                sourceLocation: sourceLocation)
        } else {
            #expect(line == want, sourceLocation: sourceLocation)
        }
    }
}
