import ArgumentParser
import Foundation
import KeychainImport
import KeychainKit

#if canImport(Glibc)
import Glibc
#endif

/// `security import-keyring`: copies the items of other password stores' files into the keychain's Secret Service
/// collections: gnome-keyring keyrings, KWallet wallets, KeePass (KDBX) databases and `pass` stores.
struct ImportKeyring: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-keyring",
        abstract: "Copy the items of gnome-keyring, KWallet, KeePass or pass files into the keychain.",
        discussion: """
            Reads files, not a running program (for a running Secret Service provider use import-secret-service): \
            gnome-keyring's keyrings (~/.local/share/keyrings/*.keyring, binary with a password or plain text), \
            KWallet's wallets (~/.local/share/kwalletd/*.kwl, Blowfish; the .salt file beside is read), KeePass \
            databases (.kdbx, KDBX 4 and 3.1, with a password, a key file, or both), and pass stores (a folder \
            with .gpg-id, each entry decrypted by your gpg, which asks for the key's passphrase as pass does). A \
            folder that is not a pass store is searched for keyrings, wallets and KeePass databases. The format is told by the file's \
            extension, or given with --format. \
            Each file becomes a collection of the keychain's Secret Service (gnome-keyring's default keyring and \
            KWallet's kdewallet go to the default collection, login); labels, attributes, secrets and dates are kept, \
            and how other stores' fields become attributes is in the Secret Service guide. An item already there with \
            the same attributes and secret is skipped, so running the import again adds nothing. \
            Passwords are asked on the terminal, one per file that needs one; with --password-stdin each is read as \
            one line of standard input, in the order of the files. Progress is shown on standard error when it is a \
            terminal; the summary goes to standard output, with anything a file holds that could not be imported. \
            Through keychaind only this tool may import, and the person approves it.
            """
    )

    static let function = "import-keyring"

    @Option(name: .customLong("format"), help: "The store that wrote the files: gnome-keyring, kwallet, kdbx or pass (default: by extension).")
    var format: String?

    @Flag(name: .customLong("password-stdin"), help: "Read each file's password as one line of standard input, in order.")
    var passwordFromStandardInput = false

    @Option(name: .customLong("key-file"), help: "A KeePass database's key file.")
    var keyFile: String?

    @Option(name: .customLong("gpg"), help: "The GnuPG program that decrypts pass entries (default: gpg on PATH).")
    var gpg = "gpg"

    @Argument(help: "Files or folders to import.")
    var paths: [String] = []

    func validate() throws {
        if let format, ImportSource.Format(rawValue: format) == nil {
            throw ValidationError("--format takes gnome-keyring, kwallet, kdbx or pass.")
        }
        if paths.isEmpty {
            throw ValidationError(
                "Name the files or folders to import: ~/.local/share/keyrings (gnome-keyring), ~/.local/share/kwalletd (KWallet), a .kdbx file (KeePassXC), ~/.password-store (pass).")
        }
    }

    func run() async throws {
        let sources: [ImportSource]
        do {
            sources = try ImportSource.find(paths, format: format.flatMap(ImportSource.Format.init(rawValue:)))
        } catch {
            throw ToolFailure.input(Self.function, error.message)
        }
        let keychain = try ToolContext.keychain(function: Self.function)
        let progress = TerminalProgress()
        var report = ImportWriter.Report()
        for source in sources {
            var password: String?
            do {
                if let purpose = try source.passwordPurpose() {
                    password =
                        passwordFromStandardInput
                        ? try StandardInputSecret.text(function: Self.function, what: "the password of \(purpose)")
                        : try PasswordPrompt.ask(
                            "password for \(purpose)\(source.format == .kdbx && keyFile != nil ? " (empty for none)" : ""): ", function: Self.function,
                            hint: "Give the passwords on standard input with --password-stdin, one line per file.")
                }
                progress.show("reading \(source.name)")
                let collection = try source.read(password: password, keyFile: keyFile, gpg: gpg) { done, total in
                    progress.show("decrypting \(source.name): \(done)/\(total) entries")
                }
                let total = collection.items.count
                try ImportWriter.write(collection, into: &report, write: keychain.importSecretServiceItems) { done in
                    progress.show("importing \(source.name): \(done)/\(total) items")
                }
            } catch let error as KeychainError {
                progress.clear()
                let failure = Self.summary(report)
                if !failure.isEmpty { Output.standardOutput(failure) }
                if error.code == .authenticationFailed || error.code == .corruptData || error.code == .unimplemented || error.code == .invalidParameter {
                    throw ToolFailure.input(Self.function, "\(source.path): \(error.message)")
                }
                throw ToolFailure(Self.function, error)
            }
        }
        progress.clear()
        Output.standardOutput(Self.summary(report))
        let s = report.summary
        if s.failed > 0 {
            throw ToolFailure.input(
                Self.function,
                "\(s.failed) \(s.failed == 1 ? "item" : "items") could not be imported (over a bound, or with attributes a keychain item cannot carry).")
        }
    }

    /// The summary: what was imported, then each thing left out on a line of its own.
    static func summary(_ report: ImportWriter.Report) -> String {
        guard report.collections > 0 else { return "" }
        let s = report.summary
        var text = "imported \(s.added) \(s.added == 1 ? "item" : "items") from \(report.collections) \(report.collections == 1 ? "file" : "files") (\(s.skipped) already present)\n"
        if !report.notImported.isEmpty {
            text += "not imported:\n" + report.notImported.map { "  \($0)\n" }.joined()
        }
        return text
    }
}
