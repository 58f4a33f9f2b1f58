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
        need it. Wrong passcodes are throttled with growing delays. With no passcode set there is nothing to unlock.
        """
    )

    /// The function name macOS prints when unlocking fails.
    static let function = "SecKeychainUnlock default"

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("Use password as the password for the keychain (prompted for on the terminal if omitted).", valueName: "password"))
    var password: String?

    @Flag(name: .customShort("u"), help: "Do not use the password (accepted for compatibility; a prompt is used instead when -p is absent).")
    var noPassword = false

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        // Through keychaind, which holds the keys for every program, unlocking unlocks their items too.
        let keychain = try ToolContext.keychain(function: Self.function)
        do {
            guard try keychain.lockStatus != .noPasscode else { return }
            let passcode = try password ?? PasswordPrompt.ask("password to unlock default: ", function: Self.function,
                                                              hint: "Give the passcode with -p.")
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

    @Flag(name: .customShort("a"), help: "Lock all keychains (there is one).")
    var all = false

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        do {
            try ToolContext.keychain(function: "SecKeychainLock default").lock()
        } catch let error as KeychainError {
            throw ToolFailure("SecKeychainLock default", error)
        }
    }
}

/// `security set-keychain-password`: sets, changes or removes the keychain's passcode.
struct SetKeychainPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-keychain-password",
        abstract: "Set password for a keychain.",
        discussion: """
        Re-wraps the class keys under the new passcode; items are not re-encrypted. An empty new password \
        (-p "") removes the passcode, which destroys every WhenPasscodeSetThisDeviceOnly item. Without -o or -p \
        the passwords are asked for on the terminal.
        """
    )

    /// The function name macOS prints when changing the password fails.
    static let function = "SecKeychainChangePassword default"

    @Option(name: .customShort("o"), parsing: .unconditional, help: ArgumentHelp("Old keychain password (prompted for if a passcode is set and this is omitted).", valueName: "oldPassword"))
    var oldPassword: String?

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("New keychain password (prompted for if omitted; empty removes the passcode).", valueName: "newPassword"))
    var newPassword: String?

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        let keychain = try ToolContext.keychain(function: Self.function)
        let hint = "Give the passwords with -o and -p."
        var old: String?
        let status: KeychainStore.Status
        do {
            status = try keychain.status()
        } catch {
            throw ToolFailure(Self.function, error)
        }
        if status.lockStatus != .noPasscode {
            old = try oldPassword ?? PasswordPrompt.ask("Old Password: ", function: Self.function, hint: hint)
        }
        var new = newPassword
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
