import ArgumentParser
import Foundation
import KeychainKit

/// Backups of the whole keychain, made and restored by keychaind when it runs (it alone opens the database,
/// and asks its admin tool for the passcode first when one is set), else by the store opened in this process.
/// `backup-keychain`/`restore-keychain` and `export`/`import -f backup` share it.
enum KeychainBackups {
    /// The whole keychain (the login keychain, or the one `name` names) sealed under `password`, and what went
    /// into it. A keychain that does not exist is not created (`errSecNoSuchKeychain`).
    static func make(password: String, keychain name: String? = nil, function: String) throws(ToolFailure) -> KeychainStore.Backup {
        let keychain = try ToolContext.keychain(createIfMissing: false, function: function, named: name)
        do {
            return try keychain.backup(password: password)
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// Merges a backup into the keychain (the login keychain, or the one `name` names); the newer copy of each
    /// item wins.
    static func restore(_ data: Data, password: String, keychain name: String? = nil, function: String) throws(ToolFailure) -> KeychainStore.RestoreResult {
        let keychain = try ToolContext.keychain(function: function, named: name)
        do {
            return try keychain.restore(data, password: password)
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// The hint printed when there is no terminal to ask for a backup password or passphrase on.
    static let standardInputHint = "Give it on standard input with --password-stdin."

    /// The password of a backup being read: one line of standard input with `fromStandardInput`, else `given`,
    /// else asked once on the terminal with `prompt`.
    static func password(_ given: String?, fromStandardInput: Bool, prompt: String, function: String) throws(ToolFailure) -> String {
        if fromStandardInput { return try StandardInputSecret.text(function: function, what: "the password") }
        if let given { return given }
        return try PasswordPrompt.ask(prompt, function: function, hint: standardInputHint)
    }

    /// The password of a new backup: one line of standard input with `fromStandardInput`, else `given`, else
    /// asked twice on the terminal.
    static func newPassword(_ given: String?, fromStandardInput: Bool, function: String, hint: String = standardInputHint) throws(ToolFailure) -> String {
        if fromStandardInput { return try StandardInputSecret.text(function: function, what: "the backup password") }
        if let given { return given }
        let first = try PasswordPrompt.ask("Backup password: ", function: function, hint: hint)
        guard try PasswordPrompt.ask("Retype backup password: ", function: function, hint: hint) == first else {
            throw ToolFailure(function, status: .param, detail: "The passwords do not match.")
        }
        return first
    }

    /// The bytes of the file at `path`; a missing or unreadable file is an I/O failure naming it.
    static func read(_ path: String, function: String) throws(ToolFailure) -> Data {
        let data: Data?
        do {
            data = try KeychainFiles.read(path)
        } catch {
            throw ToolFailure(function, error)
        }
        guard let data else { throw ToolFailure(function, status: .io, detail: "\(path) does not exist.") }
        return data
    }

    /// Whether `data` starts like a keychain backup (its magic number).
    static func looksLikeBackup(_ data: Data) -> Bool { data.starts(with: Array("SKBK".utf8)) }

    /// The line printed after a backup.
    static func describe(_ s: KeychainStore.Backup) -> String {
        "backed up \(s.itemCount) items (\(s.thisDeviceOnlyCount) restorable only on this machine); \(s.skippedPasscodeOnlyCount) WhenPasscodeSetThisDeviceOnly items are never backed up\n"
    }

    /// The line printed after a restore.
    static func describe(_ s: KeychainStore.RestoreResult) -> String {
        "restored \(s.added + s.replaced) items (\(s.added) added, \(s.replaced) replaced by newer copies); kept \(s.keptNewer) newer items; skipped \(s.skippedFromOtherDevice) ThisDeviceOnly items from another machine\n"
    }
}

/// `security backup-keychain`: writes the whole keychain to one file sealed under a backup password.
struct BackupKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup-keychain",
        abstract: "Back up the keychain to an encrypted file.",
        discussion: """
            Items restore on any machine, except ThisDeviceOnly items, whose secrets stay bound to this machine's \
            device key, and WhenPasscodeSetThisDeviceOnly items, which are never backed up. The keychain must be \
            unlocked (you are asked for its passcode on the terminal when one is set). The backup password is asked \
            for twice on the terminal (echo off); scripts give it as one line on standard input with --password-stdin. \
            -P <password> still works but puts it on the command line, where other users can read it.
            """
    )

    static let function = "SecKeychainBackup"

    @Option(name: .customShort("o"), help: ArgumentHelp("The backup file to write (mode 0600).", valueName: "file"))
    var output: String

    @Option(
        name: .customShort("P"), parsing: .unconditional,
        help: ArgumentHelp("The backup password, on the command line where other users can read it (leave it out to be asked twice on the terminal, or use --password-stdin).", valueName: "password"))
    var password: String?

    @Flag(name: .customLong("password-stdin"), help: "Read the backup password from standard input: one line, without its trailing newline (for scripts).")
    var passwordFromStandardInput = false

    func validate() throws {
        if passwordFromStandardInput && password != nil { throw ValidationError("--password-stdin reads the backup password from standard input: leave out -P.") }
    }

    func run() async throws {
        let secret = try KeychainBackups.newPassword(password, fromStandardInput: passwordFromStandardInput, function: Self.function)
        let backup = try KeychainBackups.make(password: secret, function: Self.function)
        do {
            try KeychainFiles.write(backup.data, to: output)
        } catch {
            throw ToolFailure(Self.function, error)
        }
        Output.standardOutput(KeychainBackups.describe(backup))
    }
}

/// `security restore-keychain`: merges a backup into the keychain; the newer copy of each item wins.
struct RestoreKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore-keychain",
        abstract: "Restore items from an encrypted keychain backup.",
        discussion: """
            Merges by primary key: an item the keychain already has is replaced only if the backup's copy is newer. \
            A wrong password or a truncated or damaged file changes nothing. A damaged item of the keychain (see \
            verify-keychain) is replaced by the backup's copy. The password is asked for on the terminal (echo off); \
            scripts give it as one line on standard input with --password-stdin.
            """
    )

    static let function = "SecKeychainRestore"

    @Option(name: .customShort("i"), help: ArgumentHelp("The backup file to read.", valueName: "file"))
    var input: String

    @Option(
        name: .customShort("P"), parsing: .unconditional,
        help: ArgumentHelp("The backup password, on the command line where other users can read it (leave it out to be asked on the terminal, or use --password-stdin).", valueName: "password"))
    var password: String?

    @Flag(name: .customLong("password-stdin"), help: "Read the backup password from standard input: one line, without its trailing newline (for scripts).")
    var passwordFromStandardInput = false

    func validate() throws {
        if passwordFromStandardInput && password != nil { throw ValidationError("--password-stdin reads the backup password from standard input: leave out -P.") }
    }

    func run() async throws {
        let data = try KeychainBackups.read(input, function: Self.function)
        let secret = try KeychainBackups.password(password, fromStandardInput: passwordFromStandardInput, prompt: "Backup password: ", function: Self.function)
        Output.standardOutput(KeychainBackups.describe(try KeychainBackups.restore(data, password: secret, function: Self.function)))
    }
}
