import ArgumentParser
import Foundation
import KeychainKit

/// `security login-keychain-pam unlock|change`: the helper of `pam_keychain.so` (hidden from the help). The PAM
/// module runs it as the user who logs in, with the login password on standard input (`unlock`: one line), or the
/// old and the new password (`change`: two lines), never on the command line or in the environment. Its exit
/// status tells the module what happened (`Sources/CPAMKeychain/include/pam_keychain.h`); it prints nothing.
struct LoginKeychainPAM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login-keychain-pam",
        abstract: "Unlock or re-wrap the login keychain for pam_keychain.so.",
        discussion: """
            unlock reads the login password (one line) and unlocks the keychain through keychaind. change reads the \
            old and the new password (two lines) and changes the passcode from the old to the new one, only when the \
            old one unlocks. Exit status: 0 done, 10 no passcode (nothing to do), 11 the passcode was set (--set-if-none), \
            12 the new password is empty (left alone), 20 the password is not the passcode, 30 no keychaind to unlock.
            """,
        shouldDisplay: false
    )

    /// What the module asks for.
    enum Action: String, ExpressibleByArgument, CaseIterable {
        case unlock, change
    }

    /// The exit statuses shared with the module (pam_keychain.h).
    enum Outcome: Int32 {
        case done = 0, noPasscode = 10, passcodeSet = 11, emptyNew = 12, wrongPassword = 20, noDaemon = 30
    }

    /// The function named when a keychain call fails otherwise (its message goes to stderr, which the module discards).
    static let function = "SecKeychainLogin"

    @Argument(help: "unlock (the login password on standard input) or change (the old, then the new password).")
    var action: Action

    @Flag(
        name: .customLong("set-if-none"),
        help: "When the keychain has no passcode, make the (new) login password its passcode.")
    var setIfNone = false

    func run() async throws {
        let outcome: Outcome
        switch action {
        case .unlock: outcome = try unlock(password: StandardInputSecret.text(function: Self.function, what: "the login password"))
        case .change:
            let old = try StandardInputSecret.text(function: Self.function, what: "the old password")
            let new = try StandardInputSecret.text(function: Self.function, what: "the new password")
            outcome = try change(from: old, to: new)
        }
        if outcome != .done { throw ExitCode(outcome.rawValue) }
    }

    /// Unlocks keychaind's keychain with `password`. Without keychaind an unlock would last only for this process.
    func unlock(password: String) throws(ToolFailure) -> Outcome {
        guard let (keychain, status) = try open() else { return .noPasscode }
        guard status.daemon != nil else { return .noDaemon }
        do throws(KeychainError) {
            if status.lockStatus == .noPasscode {
                guard setIfNone, !password.isEmpty else { return .noPasscode }
                try keychain.setPasscode(password)
                return .passcodeSet
            }
            try keychain.unlock(passcode: password)
            return .done
        } catch  where error.code == .authenticationFailed {
            return .wrongPassword
        } catch {
            throw Self.failure(error)
        }
    }

    /// Changes the passcode from `old` to `new`, only when `old` is the passcode (through keychaind: after unlocking
    /// with it, as the admin tool must; in this process: the engine checks it).
    func change(from old: String, to new: String) throws(ToolFailure) -> Outcome {
        guard !new.isEmpty else { return .emptyNew }
        guard let (keychain, status) = try open() else { return .noPasscode }
        do throws(KeychainError) {
            if status.lockStatus == .noPasscode {
                guard setIfNone else { return .noPasscode }
                try keychain.setPasscode(new)
                return .passcodeSet
            }
            if status.daemon != nil { try keychain.unlock(passcode: old) }
            try keychain.setPasscode(new, currentPasscode: old)
            return .done
        } catch  where error.code == .authenticationFailed {
            return .wrongPassword
        } catch {
            throw Self.failure(error)
        }
    }

    /// A keychain failure, reported on stderr and never answered with a terminal prompt: during a login the
    /// helper must not ask (the module starts it in a session of its own, without a terminal, as well).
    static func failure(_ error: KeychainError) -> ToolFailure {
        var failure = ToolFailure(function, error)
        failure.fromKeychain = false
        return failure
    }

    /// The user's keychain and its status; nil when it does not exist (and is not to be made: no passcode to use).
    /// A keychain keychaind serves while keychaind is not running fails with ``Outcome/noDaemon`` as the exit status.
    func open() throws(ToolFailure) -> (KeychainStore, KeychainStore.Status)? {
        do throws(KeychainError) {
            let keychain = try KeychainStore.administrator(createIfMissing: setIfNone)
            return (keychain, try keychain.status())
        } catch  where error.status == .noSuchKeychain {
            return nil
        } catch  where error.code == .notAvailable {
            var failure = Self.failure(error)
            failure.exitStatus = Outcome.noDaemon.rawValue
            throw failure
        } catch {
            throw Self.failure(error)
        }
    }
}
