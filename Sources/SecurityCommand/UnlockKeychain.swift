import ArgumentParser
import Foundation
import KeychainKit

/// `security unlock-keychain`: unlocks the keychain with its passcode.
struct UnlockKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock-keychain",
        abstract: "Unlock the keychain.",
        discussion: """
            Checks the passcode and unlocks the keychain's protected classes. Without keychaind, an unlock lasts \
            for the process that made it, so other `security` commands ask for the passcode themselves when they \
            need it. Wrong passcodes are throttled with growing delays. With no passcode set nothing is asked, and Secret Service collections a client locked open again. \
            The passcode is asked for on the terminal (echo off); scripts give it as one line on standard input with \
            --password-stdin. -p <password> still works but puts it on the command line, where other users can read it.
            """
    )

    /// The function name macOS prints when unlocking fails.
    static let function = "SecKeychainUnlock default"

    @Option(
        name: .customShort("p"), parsing: .unconditional,
        help: ArgumentHelp(
            "Use password as the password for the keychain, on the command line where other users can read it (leave it out to be asked on the terminal, or use --password-stdin).",
            valueName: "password"))
    var password: String?

    @Flag(
        name: [.customLong("password-stdin"), .customLong("passcode-stdin")],
        help: "Read the passcode from standard input: one line, without its trailing newline (for scripts).")
    var passwordFromStandardInput = false

    @Flag(name: .customShort("u"), help: "Do not use the password (accepted for compatibility; a prompt is used instead when -p is absent).")
    var noPassword = false

    @OptionGroup var keychainNames: KeychainNames

    func validate() throws {
        if passwordFromStandardInput && password != nil {
            throw ValidationError("--password-stdin reads the passcode from standard input: leave out -p.")
        }
    }

    func run() async throws {
        // Through keychaind, which holds the keys for every program, unlocking unlocks their items too.
        let keychain = try ToolContext.keychain(function: Self.function, named: keychainNames.first)
        do {
            // The line is read even with no passcode set, so a script's input never waits unread.
            let given = passwordFromStandardInput ? try StandardInputSecret.text(function: Self.function, what: "the passcode") : password
            guard try keychain.lockStatus != .noPasscode else {
                // Nothing to ask: the unlock opens what a Secret Service client locked (`Lock` without a passcode).
                try keychain.unlock(passcode: "")
                return
            }
            let passcode =
                try given
                ?? PasswordPrompt.ask(
                    "password to unlock \(keychainNames.first ?? "default"): ", function: Self.function,
                    hint: "Give the passcode on standard input with --password-stdin.")
            try keychain.unlock(passcode: passcode)
        } catch let error as KeychainError {
            throw ToolFailure(Self.function, error)
        }
    }
}

/// `security lock-keychain`: locks the keychain, dropping the WhenUnlocked class keys.
struct LockKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock-keychain",
        abstract: "Lock the keychain.",
        discussion: """
            Drops the keys of the WhenUnlocked classes from memory. Without keychaind each process holds its own \
            keys and every new `security` command starts locked, so this only matters once keychaind keeps them.
            """
    )

    @Flag(name: .customShort("a"), help: "Lock every keychain of the user.")
    var all = false

    @OptionGroup var keychainNames: KeychainNames

    func validate() throws {
        if all && !keychainNames.keychains.isEmpty { throw ValidationError("-a locks every keychain: name none.") }
    }

    func run() async throws {
        let function = "SecKeychainLock \(all ? "all" : keychainNames.first ?? "default")"
        let store = try ToolContext.keychain(function: function, named: keychainNames.first)
        let result = Result { () throws(KeychainError) in
            guard all else { return try store.lock() }
            for keychain in try store.keychains() where keychain.lockStatus == .unlocked {
                try store.keychain(named: keychain.name).lock()
            }
        }
        if case .failure(let error) = result { throw ToolFailure(function, error) }
    }
}

/// `security set-keychain-password`: sets, changes or removes the keychain's passcode.
struct SetKeychainPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-keychain-password",
        abstract: "Set password for a keychain.",
        discussion: """
            Re-wraps the class keys under the new passcode; items are not re-encrypted. An empty new password \
            removes the passcode, which destroys every WhenPasscodeSetThisDeviceOnly item. The passwords are asked \
            for on the terminal (echo off; the new one twice). Scripts give them on standard input, one line each: \
            --old-password-stdin reads the old one, --new-password-stdin the new one (an empty line removes the \
            passcode); with both, the old one comes first. -o and -p still work but put the passwords on the command \
            line, where other users can read them.
            """
    )

    /// The function name macOS prints when changing the password fails.
    static let function = "SecKeychainChangePassword default"

    @Option(
        name: .customShort("o"), parsing: .unconditional,
        help: ArgumentHelp("Old keychain password, on the command line where other users can read it (leave it out to be asked, or use --old-password-stdin).", valueName: "oldPassword"))
    var oldPassword: String?

    @Option(
        name: .customShort("p"), parsing: .unconditional,
        help: ArgumentHelp(
            "New keychain password, on the command line where other users can read it (leave it out to be asked, or use --new-password-stdin; empty removes the passcode).", valueName: "newPassword"))
    var newPassword: String?

    @Flag(
        name: [.customLong("old-password-stdin"), .customLong("old-passcode-stdin")],
        help: "Read the old password from standard input: one line, without its trailing newline (read first).")
    var oldFromStandardInput = false

    @Flag(
        name: [.customLong("new-password-stdin"), .customLong("new-passcode-stdin")],
        help: "Read the new password from standard input: one line, without its trailing newline; an empty line removes the passcode.")
    var newFromStandardInput = false

    @OptionGroup var keychainNames: KeychainNames

    func validate() throws {
        if oldFromStandardInput && oldPassword != nil {
            throw ValidationError("--old-password-stdin reads the old password from standard input: leave out -o.")
        }
        if newFromStandardInput && newPassword != nil {
            throw ValidationError("--new-password-stdin reads the new password from standard input: leave out -p.")
        }
    }

    func run() async throws {
        // Standard input first, in order (old, then new), before anything else is asked.
        let oldGiven = oldFromStandardInput ? try StandardInputSecret.text(function: Self.function, what: "the old password") : oldPassword
        let newGiven = newFromStandardInput ? try StandardInputSecret.text(function: Self.function, what: "the new password") : newPassword
        let keychain = try ToolContext.keychain(function: Self.function, named: keychainNames.first)
        let hint = "Give the passwords on standard input with --old-password-stdin and --new-password-stdin."
        var old: String?
        let status: KeychainStore.Status
        do {
            status = try keychain.status()
        } catch {
            throw ToolFailure(Self.function, error)
        }
        if status.lockStatus != .noPasscode {
            old = try oldGiven ?? PasswordPrompt.ask("Old Password: ", function: Self.function, hint: hint)
        }
        var new = newGiven
        if new == nil {
            let first = try PasswordPrompt.ask("New Password: ", function: Self.function, hint: hint)
            let second = try PasswordPrompt.ask("Retype New Password: ", function: Self.function, hint: hint)
            guard first == second else {
                throw ToolFailure(Self.function, status: .param, detail: "The new passwords do not match.")
            }
            new = first
        }
        let newPasscode = new?.isEmpty == true ? nil : new
        do throws(KeychainError) {
            // keychaind lets its admin tool change the passcode once it has given the current one.
            if status.daemon != nil, let old { try keychain.unlock(passcode: old) }
            try keychain.setPasscode(newPasscode, currentPasscode: old)
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}
