import ArgumentParser
import Foundation
import KeychainCore

/// The `-f` formats of macOS's `security export` and `import`, plus `backup`, this keychain's own backup
/// format (what `backup-keychain` writes).
enum ExchangeFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case openssl, openssh1, openssh2, bsafe, raw, pkcs7, pkcs8, pkcs12, netscape, pemseq, x509, backup

    /// Every format but `backup` carries certificates and keys, which come with SecKey support.
    static let notYet = "Certificates and keys are exported and imported in PEM and DER once SecKey support lands; -f backup moves the whole keychain."
}

/// `security export`: writes keychain items to a file (the whole keychain with `-f backup`).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export items from a keychain.",
        discussion: """
        -f backup -t all writes the whole keychain in the backup format, sealed under the passphrase (-P, or \
        asked twice on the terminal), exactly as backup-keychain does; import -f backup reads it back. The other \
        formats export certificates and keys, which are not supported yet.
        """
    )

    static let function = "SecKeychainItemExport"

    /// What macOS's `-t` takes.
    enum ItemType: String, ExpressibleByArgument, CaseIterable, Sendable {
        case certs, allKeys, pubKeys, privKeys, identities, all
    }

    @Option(name: .customShort("k"), help: ArgumentHelp("Keychain to export items from (accepted for compatibility; there is one).", valueName: "keychain"))
    var keychain: String?

    @Option(name: .customShort("t"), help: ArgumentHelp("Type of items to export.", valueName: "type"))
    var type: ItemType = .all

    @Option(name: .customShort("f"), help: ArgumentHelp("Format of the output.", valueName: "format"))
    var format: ExchangeFormat?

    @Flag(name: .customShort("w"), help: "Private keys are wrapped (accepted for compatibility).")
    var wrapped = false

    @Flag(name: .customShort("p"), help: "PEM encode the output (accepted for compatibility).")
    var pem = false

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("The passphrase the export is sealed under (asked twice on the terminal if omitted).", valueName: "passphrase"))
    var passphrase: String?

    @Option(name: .customShort("o"), help: ArgumentHelp("The file to write (mode 0600; default: standard output).", valueName: "outfile"))
    var output: String?

    func run() async throws {
        guard format == .backup else {
            throw ToolFailure(Self.function, status: .unsupportedFormat, detail: ExchangeFormat.notYet)
        }
        guard type == .all else {
            throw ToolFailure(Self.function, status: .param, detail: "The backup format holds the whole keychain: use -t all (the default).")
        }
        let secret = try KeychainBackups.newPassword(passphrase, function: Self.function, hint: "Give the passphrase with -P.")
        let (data, _) = try KeychainBackups.make(password: secret, function: Self.function)
        guard let output else {
            Output.standardOutput(data)
            return
        }
        do {
            try FileSystem.writeAtomically(data, to: output, exclusive: false)
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}

/// `security import`: reads items from a file into the keychain (a keychain backup merges as
/// `restore-keychain` does).
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import items into a keychain.",
        discussion: """
        A file in the backup format (written by export -f backup or backup-keychain) is recognized without -f \
        and merged into the keychain: the newer copy of each item wins, and a wrong passphrase or a damaged file \
        changes nothing. Certificates and keys in PEM, DER or PKCS#12 are not supported yet.
        """
    )

    static let function = "SecKeychainItemImport"

    /// What macOS's `-t` takes.
    enum ItemType: String, ExpressibleByArgument, CaseIterable, Sendable {
        case pub, priv, session, cert, agg
    }

    @Argument(help: ArgumentHelp("The file to import.", valueName: "inputfile"))
    var input: String

    @Option(name: .customShort("k"), help: ArgumentHelp("Target keychain (accepted for compatibility; there is one).", valueName: "keychain"))
    var keychain: String?

    @Option(name: .customShort("t"), help: ArgumentHelp("Type of the items in the file.", valueName: "type"))
    var type: ItemType?

    @Option(name: .customShort("f"), help: ArgumentHelp("Format of the file (recognized when omitted).", valueName: "format"))
    var format: ExchangeFormat?

    @Flag(name: .customShort("w"), help: "Private keys are wrapped (accepted for compatibility).")
    var wrapped = false

    @Flag(name: .customShort("x"), help: "Imported private keys are not extractable (accepted for compatibility).")
    var nonExtractable = false

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("The passphrase the file is sealed under (asked on the terminal if omitted).", valueName: "passphrase"))
    var passphrase: String?

    @Flag(name: .customShort("A"), help: "Allow any application to use the imported items (accepted for compatibility).")
    var anyApplication = false

    @Option(name: .customShort("T"), help: ArgumentHelp("An application that may use the imported items (accepted for compatibility).", valueName: "appPath"))
    var applications: [String] = []

    func run() async throws {
        let data = try KeychainBackups.read(input, function: Self.function)
        switch format {
        case .backup?, nil:
            guard KeychainBackups.looksLikeBackup(data) else {
                if format == nil {
                    throw ToolFailure(Self.function, status: .unknownFormat, detail: "\(input) is not a keychain backup. \(ExchangeFormat.notYet)")
                }
                throw ToolFailure(Self.function, status: .decode, detail: "\(input) is not a keychain backup.")
            }
            guard type == nil || type == .agg else {
                throw ToolFailure(Self.function, status: .param, detail: "A keychain backup holds the whole keychain: leave out -t or use -t agg.")
            }
        default:
            throw ToolFailure(Self.function, status: .unsupportedFormat, detail: ExchangeFormat.notYet)
        }
        let secret = try passphrase ?? PasswordPrompt.ask("Backup password: ", function: Self.function, hint: "Give the passphrase with -P.")
        Output.standardOutput(KeychainBackups.describe(try KeychainBackups.restore(data, password: secret, function: Self.function)))
    }
}
