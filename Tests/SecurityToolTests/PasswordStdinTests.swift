import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Secrets off the command line: every verb that takes a secret reads it from standard input
/// (`--password-stdin` and its kin) or asks on the terminal, so it never shows in `/proc/PID/cmdline`, which
/// every user of the machine can read.
@Suite("security: secrets on standard input")
struct PasswordStdinTests {
    @Test(arguments: ToolMode.allCases) func addReadsOneLineAndKeepsEverythingButTheNewline(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let secret = " two words\r"
            let added = try kc.launch(
                kc.tool, ["add-generic-password", "-a", "alice", "-s", "svc", "--password-stdin"],
                input: Data((secret + "\nnext line is not read\n").utf8))
            #expect(added.status == 0)
            #expect(added.stdout == "" && added.stderr == "")
            // (find -w prints a secret with a control character in hex, as macOS does.)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "2074776f20776f7264730d\n")

            // An internet password the same way; the last line needs no newline.
            let inet = try kc.launch(
                kc.tool, ["add-internet-password", "-a", "bob", "-s", "example.com", "--password-stdin"],
                input: Data("web-secret".utf8))
            #expect(inet.status == 0)
            #expect(try kc.run(["find-internet-password", "-a", "bob", "-s", "example.com", "-w"]).stdout == "web-secret\n")

            // Empty input: a clear failure, nothing added.
            let empty = try kc.launch(kc.tool, ["add-generic-password", "-a", "carol", "-s", "svc", "--password-stdin"], input: Data())
            #expect(empty.status == KeychainStatus.param.exitCode)
            #expect(empty.stderr.contains("Standard input ended before the password."))
            #expect(try kc.run(["find-generic-password", "-a", "carol", "-s", "svc"]).status == KeychainStatus.itemNotFound.exitCode)

            // Both ways at once is a usage error.
            let both = try kc.launch(kc.tool, ["add-generic-password", "-a", "dave", "-s", "svc", "--password-stdin", "-w", "x"], input: Data("y\n".utf8))
            #expect(both.status == 2)
            #expect(both.stderr.contains("--password-stdin reads the password from standard input: leave out -w/-p and -X."))
        }
    }

    /// The attack: another user reads `/proc/PID/cmdline` of a running `security` (here, while it waits on its
    /// standard input). With `--password-stdin` the secret is not there.
    @Test func theSecretIsNotInProcCmdlineWhileTheToolRuns() throws {
        try withKeychain { kc in
            let secret = "cmdline-canary-\(UUID().uuidString)"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: kc.tool)
            process.arguments = ["add-generic-password", "-a", "alice", "-s", "svc", "--password-stdin"]
            process.environment = kc.environment([:])
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The tool blocks reading its standard input until we write: read its command line meanwhile (once the
            // new process shows one: right after the spawn it may still be empty).
            var cmdline = Data()
            for _ in 0..<500 where cmdline.isEmpty {
                cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/cmdline"))) ?? Data()
                if cmdline.isEmpty { usleep(10_000) }
            }
            let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            #expect(process.isRunning, "the tool must still be waiting on standard input")
            #expect(arguments.contains("--password-stdin"))
            #expect(!arguments.joined(separator: " ").contains(secret))
            #expect(!String(decoding: cmdline, as: UTF8.self).contains(secret))
            input.fileHandleForWriting.write(Data((secret + "\n").utf8))
            try input.fileHandleForWriting.close()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == secret + "\n")
        }
    }

    @Test func withNoTerminalAPromptFailsAndNamesPasswordStdin() throws {
        try withKeychain { kc in
            // -w last asks on the terminal, as macOS does; with none, the tool fails at once and says what to use.
            for arguments in [["add-generic-password", "-a", "alice", "-s", "svc", "-w"], ["add-internet-password", "-a", "a", "-s", "h"]] {
                let result = try kc.run(arguments, detached: true)
                #expect(result.status == KeychainStatus.interactionNotAllowed.exitCode)
                #expect(result.stdout == "")
                #expect(
                    result.stderr.hasSuffix(
                        "security: There is no terminal to ask for the password on. Give it on standard input with --password-stdin, for example: printf '%s\\n' \"$SECRET\" | security ... --password-stdin\n"
                    ))
            }
            let backup = try kc.run(["backup-keychain", "-o", kc.root + "/b"], detached: true)
            #expect(backup.status == KeychainStatus.interactionNotAllowed.exitCode)
            #expect(backup.stderr.hasSuffix("security: There is no terminal to ask on. Give it on standard input with --password-stdin.\n"))
        }
    }

    @Test(arguments: ToolMode.allCases) func passcodeVerbsReadStandardInput(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            let set = try kc.launch(kc.tool, ["set-keychain-password", "--new-password-stdin"], input: Data("1234\n".utf8))
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stdout == "" && set.stderr == "")

            let wrong = try kc.launch(kc.tool, ["unlock-keychain", "--password-stdin"], input: Data("0000\n".utf8))
            #expect(wrong.status == KeychainStatus.authFailed.exitCode)
            #expect(!wrong.stderr.contains("0000"))
            #expect(try kc.launch(kc.tool, ["unlock-keychain", "--passcode-stdin"], input: Data("1234\n".utf8)).status == 0)
            let noTerminal = try kc.run(["unlock-keychain"], detached: true)
            #expect(noTerminal.status == KeychainStatus.interactionNotAllowed.exitCode)
            #expect(noTerminal.stderr.hasSuffix("security: There is no terminal to ask on. Give the passcode on standard input with --password-stdin.\n"))

            // Old then new, one line each; an empty new line removes the passcode.
            let change = try kc.launch(
                kc.tool, ["set-keychain-password", "--old-password-stdin", "--new-password-stdin"],
                input: Data("1234\n5678\n".utf8))
            #expect(change.status == 0, "\(change.stderr)")
            #expect(try kc.launch(kc.tool, ["unlock-keychain", "--password-stdin"], input: Data("1234\n".utf8)).status == KeychainStatus.authFailed.exitCode)
            let remove = try kc.launch(
                kc.tool, ["set-keychain-password", "--old-password-stdin", "--new-password-stdin"],
                input: Data("5678\n\n".utf8))
            #expect(remove.status == 0, "\(remove.stderr)")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"], detached: true).stdout == "s3cret\n")
        }
    }

    @Test(arguments: ToolMode.allCases) func exportAndImportReadThePassphraseFromStandardInput(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            let file = kc.root + "/all.backup"
            let export = try kc.launch(kc.tool, ["export", "-f", "backup", "-o", file, "--passphrase-stdin"], input: Data("pass phrase\n".utf8))
            #expect(export.status == 0, "\(export.stderr)")
            #expect(try kc.run(["delete-generic-password", "-a", "alice", "-s", "svc"]).status == 0)
            let wrong = try kc.launch(kc.tool, ["import", file, "--password-stdin"], input: Data("pass\n".utf8))
            #expect(wrong.status != 0)
            let imported = try kc.launch(kc.tool, ["import", file, "--passphrase-stdin"], input: Data("pass phrase\n".utf8))
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "s3cret\n")
        }
    }

    /// Runs the tool on a new pseudo-terminal (Python's `pty`), typing each line of `typing` only once a prompt
    /// (output ending in ": ") is on the screen, as a person would; returns everything the terminal showed.
    static let typist = """
        import os, pty, sys
        lines = [l.encode() + b"\\n" for l in os.environ["TYPING"].split("\\n") if l]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:])
        out = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if lines and out.endswith(b": "):
                os.write(fd, lines.pop(0))
        _, status = os.waitpid(pid, 0)
        sys.stdout.buffer.write(out)
        sys.exit(os.waitstatus_to_exitcode(status))
        """

    /// Secrets typed at a prompt are not echoed: the terminal shows the prompts and nothing typed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3 for a pseudo-terminal"))
    func promptsOnTheTerminalDoNotEcho() throws {
        try withKeychain { kc in
            func onTerminal(_ arguments: [String], typing: String) throws -> ToolResult {
                try kc.launch("/usr/bin/python3", ["-c", Self.typist, kc.tool] + arguments, environment: ["TYPING": typing])
            }
            let added = try onTerminal(["add-generic-password", "-a", "alice", "-s", "svc", "-w"], typing: "typed-secret\ntyped-secret")
            #expect(added.status == 0, "\(added.stdout)")
            #expect(added.stdout.contains("password data for new item: ") && added.stdout.contains("retype password for new item: "))
            #expect(!added.stdout.contains("typed-secret"))
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "typed-secret\n")

            let set = try onTerminal(["set-keychain-password"], typing: "pass-1234\npass-1234")
            #expect(set.status == 0, "\(set.stdout)")
            #expect(set.stdout.contains("New Password: ") && set.stdout.contains("Retype New Password: "))
            #expect(!set.stdout.contains("pass-1234"))
            let unlocked = try onTerminal(["unlock-keychain"], typing: "pass-1234")
            #expect(unlocked.status == 0, "\(unlocked.stdout)")
            #expect(unlocked.stdout.contains("password to unlock default: "))
            #expect(!unlocked.stdout.contains("pass-1234"))
        }
    }
}
