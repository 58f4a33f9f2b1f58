import Foundation
import Testing
import KeychainCore

@Suite("security: passcode, lock and unlock")
struct KeychainPasswordTests {
    /// script(1) runs the tool on a new pseudo-terminal fed from `typing`.
    func onTerminal(_ kc: Sandbox, _ arguments: [String], typing: String) throws -> ToolResult {
        let command = ([kc.tool] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try kc.launch("/usr/bin/script", ["-qec", command, "/dev/null"], input: Data(typing.utf8))
    }

    @Test(arguments: ToolMode.allCases) func setUnlockAndRemoveThePasscode(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            try kc.succeed(["add-generic-password", "-a", "always", "-s", "svc", "-w", "forever"])
            // Without a passcode there is nothing to unlock.
            #expect(try kc.run(["unlock-keychain", "-p", "anything"]).status == 0)

            let set = try kc.run(["set-keychain-password", "-p", "1234"])
            #expect(set.status == 0)
            #expect(set.stdout == "" && set.stderr == "")

            let later = try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"], detached: true)
            switch mode {
            case .inProcess:
                // A new process opening the keychain itself starts before its first unlock: a WhenUnlocked item needs
                // the passcode, and with no terminal to ask on the command fails at once with
                // errSecInteractionNotAllowed.
                #expect(later.status == 36)
                #expect(later.stdout == "")
                #expect(later.stderr.hasPrefix("security: SecKeychainUnlock default: User interaction is not allowed.\n"))
            case .keychaind:
                // keychaind holds the keychain unlocked (it was when the passcode was set) for every later program,
                // and the tool reads its own item without the passcode.
                #expect(later.status == 0, "\(later.stderr)")
                #expect(later.stdout == "s3cret\n")
            }

            let wrong = try kc.run(["unlock-keychain", "-p", "0000"])
            #expect(wrong.status == 51)
            #expect(wrong.stderr.hasPrefix("security: SecKeychainUnlock default: The user name or passphrase you entered is not correct.\n"))
            #expect(!wrong.stderr.contains("0000"))
            #expect(try kc.run(["unlock-keychain", "-p", "1234"]).status == 0)

            // Changing needs the old passcode.
            let badOld = try kc.run(["set-keychain-password", "-o", "9999", "-p", "5678"])
            #expect(badOld.status == 51)
            #expect(badOld.stderr.hasPrefix("security: SecKeychainChangePassword default: The user name or passphrase you entered is not correct.\n"))
            #expect(try kc.run(["set-keychain-password", "-o", "1234", "-p", "5678"]).status == 0)
            #expect(try kc.run(["unlock-keychain", "-p", "1234"]).status == 51)

            // Removing it makes everything available again, with no prompt.
            #expect(try kc.run(["set-keychain-password", "-o", "5678", "-p", ""]).status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"], detached: true).stdout == "s3cret\n")
            #expect(try kc.run(["lock-keychain"]).status == 0)
        }
    }

    @Test(
        "a locked item's command asks for the passcode on the terminal, then runs",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func promptsToUnlock() throws {
        try withKeychain { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            try kc.succeed(["set-keychain-password", "-p", "1234"])
            let found = try onTerminal(kc, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"], typing: "1234\n")
            #expect(found.status == 0)
            #expect(found.stdout.contains("password to unlock default: "))
            #expect(found.stdout.hasSuffix("s3cret\r\n"))
            let refused = try onTerminal(kc, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"], typing: "nope\n")
            #expect(refused.status == 51)
            // Setting a passcode interactively asks twice.
            let changed = try onTerminal(kc, ["set-keychain-password"], typing: "1234\nabcd\nabcd\n")
            #expect(changed.status == 0)
            #expect(changed.stdout.contains("Old Password: "))
            #expect(changed.stdout.contains("Retype New Password: "))
        }
    }
}
