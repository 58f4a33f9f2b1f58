import ArgumentParser
import Foundation
import KeychainCore

/// `security backup-keychain`: writes the whole keychain to one file sealed under a backup password.
struct BackupKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup-keychain",
        abstract: "Back up the keychain to an encrypted file.",
        discussion: """
        Items restore on any machine, except ThisDeviceOnly items, whose secrets stay bound to this machine's \
        device key, and WhenPasscodeSetThisDeviceOnly items, which are never backed up. The keychain must be \
        unlocked (you are asked for its passcode on the terminal when one is set).
        """
    )

    static let function = "SecKeychainBackup"

    @Option(name: .customShort("o"), help: ArgumentHelp("The backup file to write (mode 0600).", valueName: "file"))
    var output: String

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("The backup password (asked twice on the terminal if omitted).", valueName: "password"))
    var password: String?

    func run() async throws {
        let engine = try ToolContext.sharedEngine()
        let secret: String
        if let password {
            secret = password
        } else {
            let hint = "Give the backup password with -P."
            let first = try PasswordPrompt.ask("Backup password: ", function: Self.function, hint: hint)
            guard try PasswordPrompt.ask("Retype backup password: ", function: Self.function, hint: hint) == first else {
                throw ToolFailure(Self.function, status: .param, detail: "The passwords do not match.")
            }
            secret = first
        }
        do {
            let (data, summary) = try engine.backup(password: secret)
            try FileSystem.writeAtomically(data, to: output, exclusive: false)
            Output.standardOutput("backed up \(summary.items) items (\(summary.thisDeviceOnly) restorable only on this machine); \(summary.skippedPasscodeOnly) WhenPasscodeSetThisDeviceOnly items are never backed up\n")
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}

/// `security restore-keychain`: merges a backup into the keychain; the newer copy of each item wins.
struct RestoreKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore-keychain",
        abstract: "Restore items from an encrypted keychain backup.",
        discussion: """
        Merges by primary key: an item the keychain already has is replaced only if the backup's copy is newer. \
        A wrong password or a truncated or damaged file changes nothing.
        """
    )

    static let function = "SecKeychainRestore"

    @Option(name: .customShort("i"), help: ArgumentHelp("The backup file to read.", valueName: "file"))
    var input: String

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("The backup password (asked on the terminal if omitted).", valueName: "password"))
    var password: String?

    func run() async throws {
        let engine = try ToolContext.sharedEngine()
        let data: Data
        do {
            guard let read = try FileSystem.read(input) else {
                throw ToolFailure(Self.function, status: .io, detail: "\(input) does not exist.")
            }
            data = read
        } catch let error as KeychainError {
            throw ToolFailure(Self.function, error)
        }
        let secret = try password ?? PasswordPrompt.ask("Backup password: ", function: Self.function, hint: "Give the backup password with -P.")
        do {
            let s = try engine.restore(data, password: secret)
            Output.standardOutput("restored \(s.added + s.replaced) items (\(s.added) added, \(s.replaced) replaced by newer copies); kept \(s.keptNewer) newer items; skipped \(s.skippedOtherDevice) ThisDeviceOnly items from another machine\n")
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}
