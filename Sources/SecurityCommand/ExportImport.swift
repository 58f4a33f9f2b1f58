import ArgumentParser
import Foundation
import KeychainKit

/// The `-f` formats of macOS's `security export` and `import`, plus `backup`, this keychain's own backup
/// format (what `backup-keychain` writes).
enum ExchangeFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case openssl, openssh1, openssh2, bsafe, raw, pkcs7, pkcs8, pkcs12, netscape, pemseq, x509, backup

    /// What export writes besides backups.
    static let notYet = "Certificates and public keys export as PEM (-f pemseq) or one DER certificate (-f x509); identities as PKCS#12 (-t identities -f pkcs12); -f backup moves the whole keychain."
}

/// `security export`: writes keychain items to a file (the whole keychain with `-f backup`).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export items from a keychain.",
        discussion: """
            -f backup -t all writes the whole keychain in the backup format, sealed under the passphrase (asked \
            twice on the terminal, or one line of standard input with --passphrase-stdin), exactly as backup-keychain does; import -f backup reads it back. Otherwise \
            certificates (-t certs) and public keys (-t pubKeys) are written as PEM (pemseq, the default), or one \
            certificate as DER (-f x509, PEM with -p). -t identities -f pkcs12 writes every identity (a certificate \
            and its private key), with the certificates of its chain found in the keychain, into one PKCS#12 file \
            sealed under the passphrase as OpenSSL 3 does (PBKDF2, AES-256-CBC, HMAC-SHA-256); keys that never leave \
            the keychain (token keys) are not exported. Bare private keys are not exported.
            """
    )

    static let function = "SecKeychainItemExport"

    /// What macOS's `-t` takes.
    enum ItemType: String, ExpressibleByArgument, CaseIterable, Sendable {
        case certs, allKeys, pubKeys, privKeys, identities, all
    }

    @Option(name: .customShort("k"), help: ArgumentHelp("Keychain to export items from (default: the search list; with -f backup, the login keychain).", valueName: "keychain"))
    var keychain: String?

    @Option(name: .customShort("t"), help: ArgumentHelp("Type of items to export.", valueName: "type"))
    var type: ItemType = .all

    @Option(name: .customShort("f"), help: ArgumentHelp("Format of the output.", valueName: "format"))
    var format: ExchangeFormat?

    @Flag(name: .customShort("w"), help: "Private keys are wrapped (accepted for compatibility).")
    var wrapped = false

    @Flag(name: .customShort("p"), help: "PEM encode the output (accepted for compatibility).")
    var pem = false

    @Option(
        name: .customShort("P"), parsing: .unconditional,
        help: ArgumentHelp(
            "The passphrase the export is sealed under, on the command line where other users can read it (leave it out to be asked twice on the terminal, or use --passphrase-stdin).",
            valueName: "passphrase"))
    var passphrase: String?

    @Flag(
        name: [.customLong("passphrase-stdin"), .customLong("password-stdin")],
        help: "Read the passphrase from standard input: one line, without its trailing newline (for scripts).")
    var passphraseFromStandardInput = false

    @Option(name: .customShort("o"), help: ArgumentHelp("The file to write (mode 0600; default: standard output).", valueName: "outfile"))
    var output: String?

    func validate() throws {
        if passphraseFromStandardInput && passphrase != nil { throw ValidationError("--passphrase-stdin reads the passphrase from standard input: leave out -P.") }
    }

    func run() async throws {
        if format == .pkcs12 {
            try exportIdentities()
            return
        }
        guard format == .backup else {
            try exportCertificatesAndPublicKeys()
            return
        }
        guard type == .all else {
            throw ToolFailure(Self.function, status: .param, detail: "The backup format holds the whole keychain: use -t all (the default).")
        }
        let secret = try KeychainBackups.newPassword(
            passphrase, fromStandardInput: passphraseFromStandardInput, function: Self.function,
            hint: "Give it on standard input with --passphrase-stdin.")
        try write(KeychainBackups.make(password: secret, keychain: keychain, function: Self.function).data)
    }

    /// Writes the export to `-o` (mode 0600, atomically), or to standard output.
    func write(_ bytes: Data) throws(ToolFailure) {
        guard let output else {
            Output.standardOutput(bytes)
            return
        }
        do {
            try KeychainFiles.write(bytes, to: output)
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}

extension ExportCommand {
    /// `-t certs|pubKeys|all` in PEM (`pemseq`, `openssl`, the default) or one DER certificate (`x509`, PEM with -p).
    /// Private keys never leave the keychain this way.
    func exportCertificatesAndPublicKeys() throws(ToolFailure) {
        let function = Self.function
        let pemFormats: Set<ExchangeFormat> = [.pemseq, .openssl]
        guard format == nil || pemFormats.contains(format ?? .pemseq) || (format == .x509 && type == .certs) else {
            throw ToolFailure(function, status: .unsupportedFormat, detail: ExchangeFormat.notYet)
        }
        guard [.certs, .pubKeys, .all].contains(type) else {
            throw ToolFailure(
                function, status: .unsupportedFormat,
                detail: "Identities export as PKCS#12 (-t identities -f pkcs12); bare private keys stay in the keychain: export certificates (-t certs) or public keys (-t pubKeys).")
        }
        let context = try ToolContext.open(accessGroup: nil, createIfMissing: false, keychains: keychain.map { [$0] } ?? [])
        let certificates = type == .pubKeys ? [] : try CertificateItems.all(context).map(\.1)
        let publicKeys = type == .certs ? [] : try Self.publicKeys(context)
        guard !certificates.isEmpty || !publicKeys.isEmpty else { throw ToolFailure(function, status: .itemNotFound) }
        var bytes: Data
        if format == .x509 {
            guard certificates.count == 1 else {
                throw ToolFailure(function, status: .param, detail: "x509 holds one certificate and the keychain has \(certificates.count): use -f pemseq.")
            }
            bytes = pem ? Data(certificates[0].pem.utf8) : certificates[0].der
        } else {
            bytes = Data(certificates.map(\.pem).joined().utf8)
            bytes += Data(publicKeys.joined().utf8)
        }
        try write(bytes)
    }

    /// Every key item's public key in PEM, once per key (a private key and its stored public half are one).
    static func publicKeys(_ context: ToolContext) throws(ToolFailure) -> [String] {
        var seen: Set<Data> = []
        var out: [String] = []
        for item in try context.all(.key, function: function) {
            guard let key = KeychainKey(item: item),
                let label = try? key.applicationLabel(), seen.insert(label).inserted,
                let pem = try? key.publicKeyPEM()
            else { continue }
            out.append(pem)
        }
        return out
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
            changes nothing. PEM files (certificates, private and public keys), DER certificates and keys, and \
            password-protected PKCS#12 files (an identity and its chain) are added to the keychain. The passphrase of \
            a backup or PKCS#12 file is asked for on the terminal (echo off); scripts give it as one line on standard \
            input with --passphrase-stdin.
            """
    )

    static let function = "SecKeychainItemImport"

    /// What macOS's `-t` takes.
    enum ItemType: String, ExpressibleByArgument, CaseIterable, Sendable {
        case pub, priv, session, cert, agg
    }

    @Argument(help: ArgumentHelp("The file to import.", valueName: "inputfile"))
    var input: String

    @Option(name: .customShort("k"), help: ArgumentHelp("Keychain to import into (default: the default keychain; with -f backup, the login keychain).", valueName: "keychain"))
    var keychain: String?

    @Option(name: .customShort("t"), help: ArgumentHelp("Type of the items in the file.", valueName: "type"))
    var type: ItemType?

    @Option(name: .customShort("f"), help: ArgumentHelp("Format of the file (recognized when omitted).", valueName: "format"))
    var format: ExchangeFormat?

    @Flag(name: .customShort("w"), help: "Private keys are wrapped (accepted for compatibility).")
    var wrapped = false

    @Flag(name: .customShort("x"), help: "Imported private keys are not extractable (accepted for compatibility).")
    var nonExtractable = false

    @Option(
        name: .customShort("P"), parsing: .unconditional,
        help: ArgumentHelp(
            "The passphrase the file is sealed under, on the command line where other users can read it (leave it out to be asked on the terminal, or use --passphrase-stdin).", valueName: "passphrase"
        ))
    var passphrase: String?

    @Flag(
        name: [.customLong("passphrase-stdin"), .customLong("password-stdin")],
        help: "Read the passphrase from standard input: one line, without its trailing newline (for scripts).")
    var passphraseFromStandardInput = false

    @Flag(name: .customShort("A"), help: "Allow any application to use the imported items (accepted for compatibility).")
    var anyApplication = false

    @Option(name: .customShort("T"), help: ArgumentHelp("An application that may use the imported items (accepted for compatibility).", valueName: "appPath"))
    var applications: [String] = []

    func validate() throws {
        if passphraseFromStandardInput && passphrase != nil { throw ValidationError("--passphrase-stdin reads the passphrase from standard input: leave out -P.") }
    }

    /// The passphrase: one line of standard input, `-P`, or asked once on the terminal with `prompt`.
    func secret(prompt: String) throws(ToolFailure) -> String {
        if passphraseFromStandardInput { return try StandardInputSecret.text(function: Self.function, what: "the passphrase") }
        if let passphrase { return passphrase }
        return try PasswordPrompt.ask(prompt, function: Self.function, hint: "Give it on standard input with --passphrase-stdin.")
    }

    func run() async throws {
        let data = try KeychainBackups.read(input, function: Self.function)
        if format == .backup || (format == nil && KeychainBackups.looksLikeBackup(data)) {
            guard KeychainBackups.looksLikeBackup(data) else {
                throw ToolFailure(Self.function, status: .decode, detail: "\(input) is not a keychain backup.")
            }
            guard type == nil || type == .agg else {
                throw ToolFailure(Self.function, status: .param, detail: "A keychain backup holds the whole keychain: leave out -t or use -t agg.")
            }
            let secret = try secret(prompt: "Backup password: ")
            Output.standardOutput(KeychainBackups.describe(try KeychainBackups.restore(data, password: secret, keychain: keychain, function: Self.function)))
            return
        }
        let supported: Set<ExchangeFormat> = [.openssl, .pemseq, .x509, .pkcs8, .raw, .pkcs12]
        if let format, !supported.contains(format) {
            throw ToolFailure(Self.function, status: .unsupportedFormat, detail: "\(format.rawValue) files cannot be imported: use PEM, DER or PKCS#12.")
        }
        var contents: KeychainKeyAndCertificateFile?
        if format != .pkcs12 {
            do {
                contents = try KeychainKeyAndCertificateFile.read(data)
            } catch {
                throw ToolFailure(Self.function, error)
            }
        }
        let context = try ToolContext.open(accessGroup: nil, keychains: keychain.map { [$0] } ?? [])
        if let contents {
            try CertificateItems.add(keys: contents.privateKeys + contents.publicKeys, context, function: Self.function)
            try CertificateItems.add(contents.certificates, context, function: Self.function)
            Output.standardOutput(
                Self.summary(
                    keys: contents.privateKeys.count + contents.publicKeys.count,
                    certificates: contents.certificates.count, identities: 0))
            return
        }
        // Not PEM, a DER certificate or a key: a PKCS#12 file, or nothing this tool reads.
        guard format == .pkcs12 || data.first == 0x30 else {
            throw ToolFailure(Self.function, status: .unknownFormat, detail: "\(input) is not a keychain backup, PEM, DER or PKCS#12.")
        }
        let secret = try secret(prompt: "PKCS#12 passphrase: ")
        let archive: KeychainKeyAndCertificateFile.PKCS12Archive
        do {
            archive = try KeychainKeyAndCertificateFile.pkcs12(data, password: secret)
        } catch  where error.code == .corruptData && format == nil {
            throw ToolFailure(Self.function, status: .unknownFormat, detail: "\(input): \(error.message)")
        } catch {
            throw ToolFailure(Self.function, error)
        }
        // Every key of the file, each with its certificate when the file has it, then the certificates of no key. A
        // key already in the keychain fails the import (errSecDuplicateItem); a certificate already there is kept,
        // as macOS's import keeps it (two identities from one CA carry the same CA certificate).
        var identities = 0
        for identity in archive.identities {
            try CertificateItems.add(keys: [identity.key], context, function: Self.function)
            if let certificate = identity.certificate {
                try CertificateItems.add([certificate], context, function: Self.function, ignoringDuplicates: true)
                identities += 1
            }
        }
        try CertificateItems.add(archive.certificates, context, function: Self.function, ignoringDuplicates: true)
        Output.standardOutput(Self.summary(keys: archive.identities.count - identities, certificates: archive.certificates.count, identities: identities))
    }

    /// macOS's report: "1 identity imported.", "2 certificates imported.", "1 key imported.", one line each.
    static func summary(keys: Int, certificates: Int, identities: Int) -> String {
        var out = ""
        for (count, one, many) in [(identities, "identity", "identities"), (keys, "key", "keys"), (certificates, "certificate", "certificates")] where count > 0 {
            out += "\(count) \(count == 1 ? one : many) imported.\n"
        }
        return out
    }
}
