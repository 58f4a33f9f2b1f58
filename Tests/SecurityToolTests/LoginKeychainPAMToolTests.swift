import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `security login-keychain-pam`, the helper pam_keychain.so runs as the user: its exit statuses are the module's
/// contract (Sources/CPAMKeychain/include/pam_keychain.h), it prints nothing, and it reads the password(s) from
/// standard input only. (LoginKeychainPAMTests drives it through the module with pamtester.)
@Suite("security: login-keychain-pam, the PAM module's helper")
struct LoginKeychainPAMToolTests {
    private func helper(_ kc: Sandbox, _ arguments: [String], input: String) throws -> ToolResult {
        try kc.launch(kc.tool, ["login-keychain-pam"] + arguments, input: Data(input.utf8))
    }

    private func lockState(_ kc: Sandbox) throws -> String {
        let status = try kc.run(["daemon", "status"])
        return status.stdout.components(separatedBy: "\n").first { $0.hasPrefix("lock state: ") } ?? status.stderr
    }

    @Test func throughKeychaindItUnlocksOnlyWithThePasscodeAndReWrapsOnlyFromIt() throws {
        try withKeychain(.keychaind) { kc throws in
            let none = try helper(kc, ["unlock"], input: "login-pw\n")
            #expect(none.status == 10, "no passcode: nothing to unlock")
            #expect(none.stdout == "" && none.stderr == "")
            #expect(try lockState(kc) == "lock state: no passcode")

            #expect(try kc.launch(kc.tool, ["set-keychain-password", "--new-password-stdin"], input: Data("login-pw\n".utf8)).status == 0)
            #expect(try kc.run(["lock-keychain"]).status == 0)
            let wrong = try helper(kc, ["unlock"], input: "not-it\n")
            #expect(wrong.status == 20)
            #expect(wrong.stdout == "" && wrong.stderr == "")
            #expect(try lockState(kc) == "lock state: locked")
            let right = try helper(kc, ["unlock"], input: "login-pw\n")
            #expect(right.status == 0, "\(right.stderr)")
            #expect(right.stdout == "" && right.stderr == "")
            #expect(try lockState(kc) == "lock state: unlocked")

            // change: the old password first; it must unlock, and an empty new one never removes the passcode.
            #expect(try helper(kc, ["change"], input: "not-it\nnew-pw\n").status == 20)
            #expect(try helper(kc, ["change"], input: "login-pw\n\n").status == 12)
            let changed = try helper(kc, ["change"], input: "login-pw\nnew-pw\n")
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(changed.stdout == "" && changed.stderr == "")
            #expect(try kc.run(["lock-keychain"]).status == 0)
            #expect(try helper(kc, ["unlock"], input: "login-pw\n").status == 20)
            #expect(try helper(kc, ["unlock"], input: "new-pw\n").status == 0)
            #expect(try lockState(kc) == "lock state: unlocked")
        }
    }

    @Test func withoutKeychaindAnUnlockIsLeftForLaterAndAChangeReWrapsTheFiles() throws {
        try withKeychain(.inProcess) { kc throws in
            // No keychain yet: nothing to unlock or re-wrap.
            #expect(try helper(kc, ["unlock"], input: "pw\n").status == 10)
            #expect(try helper(kc, ["change"], input: "pw\npw2\n").status == 10)
            #expect(!FileManager.default.fileExists(atPath: kc.home + "/keychain-2.db"))

            #expect(try kc.launch(kc.tool, ["set-keychain-password", "--new-password-stdin"], input: Data("pw\n".utf8)).status == 0)
            // An unlock in the helper's own process would end with it: "no keychaind", for the session to try again.
            let unlock = try helper(kc, ["unlock"], input: "pw\n")
            #expect(unlock.status == 30)
            #expect(unlock.stdout == "" && unlock.stderr == "")
            #expect(try helper(kc, ["change"], input: "wrong\npw2\n").status == 20)
            #expect(try helper(kc, ["change"], input: "pw\npw2\n").status == 0)
            #expect(try kc.launch(kc.tool, ["unlock-keychain", "--password-stdin"], input: Data("pw\n".utf8)).status == KeychainStatus.authFailed.exitCode)
            #expect(try kc.launch(kc.tool, ["unlock-keychain", "--password-stdin"], input: Data("pw2\n".utf8)).status == 0)
        }
    }

    @Test func setIfNoneGivesAKeychainWithoutPasscodeTheNewPassword() throws {
        try withKeychain(.keychaind) { kc throws in
            #expect(try helper(kc, ["unlock", "--set-if-none"], input: "login-pw\n").status == 11)
            #expect(try lockState(kc) == "lock state: unlocked")
            #expect(try kc.run(["lock-keychain"]).status == 0)
            #expect(try helper(kc, ["unlock", "--set-if-none"], input: "login-pw\n").status == 0)
        }
        try withKeychain(.inProcess) { kc throws in
            #expect(try helper(kc, ["change", "--set-if-none"], input: "old\nnew-pw\n").status == 11)
            #expect(try kc.launch(kc.tool, ["unlock-keychain", "--password-stdin"], input: Data("new-pw\n".utf8)).status == 0)
        }
    }

    @Test func missingInputIsAParamErrorAndAnUnknownActionAUsageError() throws {
        try withKeychain(.inProcess) { kc throws in
            let empty = try helper(kc, ["change"], input: "only-old\n")
            #expect(empty.status == KeychainStatus.param.exitCode)
            #expect(empty.stderr.contains("Standard input ended before the new password."))
            #expect(try helper(kc, ["open"], input: "pw\n").status == 2)
        }
    }
}
