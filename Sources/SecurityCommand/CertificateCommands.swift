import ArgumentParser
import Foundation
import KeychainKit

/// The certificates (or identities) in the keychain, each with its parsed DER.
enum CertificateItems {
    static func all(_ context: ToolContext, _ itemClass: KeychainItem.Class = .certificate) throws(ToolFailure) -> [(KeychainItem, KeychainCertificate)] {
        try context.all(itemClass).compactMap { item in
            item.data.flatMap { try? KeychainCertificate(der: $0) }.map { (item, $0) }
        }
    }

    /// The certificates, keys and public keys in the files named on a command line.
    static func read(_ paths: [String], function: String) throws(ToolFailure) -> KeychainKeyAndCertificateFile {
        var out = KeychainKeyAndCertificateFile()
        for path in paths {
            let data = try KeychainBackups.read(path, function: function)
            let contents: KeychainKeyAndCertificateFile?
            do {
                contents = try KeychainKeyAndCertificateFile.read(data)
            } catch {
                throw ToolFailure(function, error)
            }
            guard let contents else {
                throw ToolFailure(function, status: .unknownFormat, detail: "\(path) is not a PEM or DER certificate or key.")
            }
            out.certificates += contents.certificates
            out.privateKeys += contents.privateKeys
            out.publicKeys += contents.publicKeys
        }
        return out
    }

    /// Adds certificates; a duplicate fails like macOS's `SecCertificateAddToKeychain`, unless `ignoringDuplicates`
    /// (as macOS's PKCS#12 import does: two identities from one CA share its certificate): then a certificate the
    /// keychain already holds is left as it is.
    static func add(
        _ certificates: [KeychainCertificate], _ context: ToolContext, function: String,
        ignoringDuplicates: Bool = false
    ) throws(ToolFailure) {
        for certificate in certificates {
            do {
                try context.store.add(certificate)
            } catch  where ignoringDuplicates && error.status == .duplicateItem {
                continue
            } catch {
                throw ToolFailure(function, error)
            }
        }
    }

    /// Adds keys as `kSecClassKey` items.
    static func add(keys: [KeychainKey], _ context: ToolContext, function: String) throws(ToolFailure) {
        for key in keys {
            do {
                try context.store.add(key)
            } catch {
                throw ToolFailure(function, error)
            }
        }
    }
}

/// `security add-certificates`: adds PEM or DER certificates to the keychain.
struct AddCertificates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-certificates",
        abstract: "Add certificates to a keychain.",
        discussion:
            "Each file holds one DER certificate or any number of PEM certificates. The keychain derives each certificate's attributes (subject, issuer, serial number, key hashes); the same certificate twice is a duplicate."
    )

    @Option(name: .customShort("k"), help: ArgumentHelp("The keychain to add to (a name such as `work`, or its path; default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    @Argument(help: ArgumentHelp("Certificate files.", valueName: "file"))
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("Name at least one certificate file.") }
    }

    func run() async throws {
        let function = "SecCertificateAddToKeychain"
        let contents = try CertificateItems.read(files, function: function)
        try CertificateItems.add(contents.certificates, try ToolContext.open(accessGroup: nil, keychains: keychain.map { [$0] } ?? []), function: function)
    }
}

/// Which certificates a find or delete means: `-c` (a name the label or a common name contains), `-e` (an email address).
struct CertificateMatch {
    var name: String?
    var email: String?

    func matches(_ item: KeychainItem, _ certificate: KeychainCertificate) -> Bool {
        if let name {
            let label = item.attributes["labl"]?.stringValue ?? ""
            guard label.contains(name) || certificate.commonNames.contains(where: { $0.contains(name) }) else { return false }
        }
        if let email {
            guard certificate.emailAddresses.contains(where: { $0.caseInsensitiveCompare(email) == .orderedSame }) else { return false }
        }
        return true
    }
}

/// The `-c` flag of the certificate verbs: a name the certificate's label or a common name contains.
struct CertificateNameOption: ParsableArguments {
    @Option(name: .customShort("c"), help: ArgumentHelp("Match on a name the certificate's label or common name contains.", valueName: "name"))
    var name: String?
}

/// `security find-certificate`: finds certificates by name or email and prints them.
struct FindCertificate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-certificate",
        abstract: "Find a certificate item.",
        discussion: "Prints the first match's attributes (all matches with -a), its PEM with -p, and its SHA-256 and SHA-1 hashes with -Z."
    )

    @OptionGroup var selection: CertificateNameOption

    @Option(name: .customShort("e"), help: ArgumentHelp("Match on an email address of the certificate.", valueName: "emailAddress"))
    var email: String?

    @Flag(name: .customShort("a"), help: "Find all matching certificates, not just the first one.")
    var all = false

    @Flag(name: .customShort("m"), help: "Show the email addresses in the certificate.")
    var showEmail = false

    @Flag(name: .customShort("p"), help: "Output certificates in PEM format.")
    var pem = false

    @Flag(name: .customShort("Z"), help: "Print SHA-256 (and SHA-1) hash of the certificate.")
    var hashes = false

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        let context = try ToolContext.open(accessGroup: nil, createIfMissing: false, keychains: keychainNames.keychains)
        let match = CertificateMatch(name: selection.name, email: email)
        var found = try CertificateItems.all(context).filter { match.matches($0.0, $0.1) }
        guard !found.isEmpty else { throw ToolFailure("SecKeychainSearchCopyNext", status: .itemNotFound) }
        if !all { found = [found[0]] }
        var out = ""
        for (item, certificate) in found {
            if hashes { out += "SHA-256 hash: \(certificate.sha256Fingerprint)\nSHA-1 hash: \(certificate.sha1Fingerprint)\n" }
            if showEmail { out += "email addresses: " + certificate.emailAddresses.joined(separator: ", ") + "\n" }
            out += pem ? certificate.pem : ItemPrinter.describe(item, keychainPath: context.keychainPath)
        }
        Output.standardOutput(out)
    }
}

/// `security delete-certificate`: deletes one certificate, named by its common name or its SHA-1 hash.
struct DeleteCertificate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-certificate",
        abstract: "Delete a certificate from a keychain.",
        discussion: "-c must name exactly one certificate; when several match, give the SHA-1 hash with -Z (security find-certificate -a -Z lists them)."
    )

    @OptionGroup var selection: CertificateNameOption

    @Option(name: .customShort("Z"), help: ArgumentHelp("The certificate's SHA-1 hash, in hex.", valueName: "hash"))
    var hash: String?

    @Flag(name: .customShort("t"), help: "Also delete the certificate's user trust settings.")
    var trustSettings = false

    @OptionGroup var keychainNames: KeychainNames

    func validate() throws {
        if selection.name == nil && hash == nil { throw ValidationError("Name the certificate with -c or -Z.") }
    }

    func run() async throws {
        let function = "SecKeychainItemDelete"
        let context = try ToolContext.open(accessGroup: nil, keychains: keychainNames.keychains)
        let match = CertificateMatch(name: selection.name, email: nil)
        let found = try CertificateItems.all(context).filter { item, certificate in
            match.matches(item, certificate) && (hash.map { certificate.sha1Fingerprint == $0.uppercased() } ?? true)
        }
        guard let (item, certificate) = found.first else { throw ToolFailure("SecKeychainSearchCopyNext", status: .itemNotFound) }
        guard found.count == 1 else {
            throw ToolFailure.input(function, "\(found.count) certificates match; give the one to delete by its SHA-1 hash with -Z.")
        }
        var query = KeychainQuery(.certificate)
        query.synchronizable = .any
        query.persistentReference = item.persistentReference
        do {
            try context.delete(query)
        } catch {
            throw ToolFailure(function, error)
        }
        if trustSettings {
            do {
                try KeychainTrustSettings.remove(certificate, domain: .user)
            } catch  where error.status == .itemNotFound {
                // It had none.
            } catch {
                throw ToolFailure("SecTrustSettingsRemoveTrustSettings", error)
            }
        }
    }
}

/// The trust policies `find-identity -p` and `verify-cert -p` name.
enum TrustPolicyName: String, ExpressibleByArgument, CaseIterable, Sendable {
    case basic, ssl = "ssl-server", sslClient = "ssl-client"

    /// The heading macOS prints.
    var title: String {
        switch self {
        case .basic: "X.509 Basic"
        case .ssl: "SSL (Server)"
        case .sslClient: "SSL (Client)"
        }
    }
}

/// `security find-identity`: lists identities (certificates with their private keys) and which are valid.
struct FindIdentity: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-identity",
        abstract: "Find an identity (certificate + private key).",
        discussion:
            "Lists each identity's SHA-1 hash and name; an identity is valid when its certificate chains to a trusted root (the system's, and the keychain's certificates as intermediates) under the policy."
    )

    @Option(name: .customShort("p"), help: ArgumentHelp("The policy identities are evaluated with.", valueName: "policy"))
    var policy: TrustPolicyName = .basic

    @Option(name: .customShort("s"), help: ArgumentHelp("The host name an SSL server policy checks.", valueName: "string"))
    var string: String?

    @Flag(name: .customShort("v"), help: "Show valid identities only.")
    var validOnly = false

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        let context = try ToolContext.open(accessGroup: nil, createIfMissing: false, keychains: keychainNames.keychains)
        let identities = try CertificateItems.all(context, .identity)
        let intermediates = try CertificateItems.all(context).map(\.1)
        let rows = identities.map { _, certificate -> (line: String, valid: Bool) in
            let valid = (try? certificate.verify(intermediates: intermediates, hostname: policy == .ssl ? string : nil)) != nil
            return ("\(certificate.sha1Fingerprint) \"\(certificate.subjectSummary ?? "")\"", valid)
        }
        let valid = rows.filter(\.valid)
        func list(_ rows: [(line: String, valid: Bool)], marking: Bool) -> String {
            rows.enumerated().map { "  \($0.offset + 1)) \($0.element.line)" + (marking && !$0.element.valid ? " (CSSMERR_TP_NOT_TRUSTED)" : "") + "\n" }.joined()
        }
        var out = ""
        if validOnly {
            out = list(valid, marking: false) + "     \(valid.count) valid identities found\n"
        } else {
            out = "Policy: \(policy.title)\n  Matching identities\n" + list(rows, marking: true) + "     \(rows.count) identities found\n\n"
            out += "  Valid identities only\n" + list(valid, marking: false) + "     \(valid.count) valid identities found\n"
        }
        Output.standardOutput(out)
    }
}

/// `security verify-cert`: evaluates a certificate chain against the system's roots (or the given ones).
struct VerifyCert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-cert",
        abstract: "Verify certificate(s).",
        discussion:
            "The first -c file's first certificate is the leaf; the other certificates are intermediates. With -r, only those roots are trusted; without, the System Roots (the Debian CA bundle and /etc/ssl/certs) and the user's and admin's trust settings. With -R crl (or --crl), revocation is checked against installed CRLs (security add-crl) and the --crl files; with -R ocsp, a certificate no current CRL covers is asked of the OCSP responder it names (not with -R offline)."
    )

    @Option(name: .customShort("c"), help: ArgumentHelp("Certificate file(s), PEM or DER; the leaf first.", valueName: "certFile"))
    var certificates: [String] = []

    @Option(name: .customShort("r"), help: ArgumentHelp("Root certificate file(s) to trust instead of the system's.", valueName: "rootCertFile"))
    var roots: [String] = []

    @Option(name: .customShort("p"), help: ArgumentHelp("The policy to verify with.", valueName: "policy"))
    var policy: TrustPolicyName = .basic

    @Option(name: .customShort("s"), help: ArgumentHelp("The SSL host name the leaf must name.", valueName: "sslHost"))
    var host: String?

    @Option(name: .customShort("k"), help: ArgumentHelp("Keychain (accepted for compatibility).", valueName: "keychain"))
    var keychain: String?

    @Flag(name: .customShort("L"), help: "Use local resources only (always the case).")
    var localOnly = false

    @Flag(name: .customShort("n"), help: "Avoid the network (always the case).")
    var noNetwork = false

    @Flag(name: .customShort("q"), help: "Quiet: print nothing on success.")
    var quiet = false

    @Option(
        name: .customShort("R"),
        help: ArgumentHelp(
            "Check revocation: crl, ocsp (ask the certificate's OCSP responder), require (fail when a status is unknown), offline (no network). Repeatable.", valueName: "revCheckOption"))
    var revocation: [RevocationCheckOption] = []

    @Option(name: .customLong("crl"), help: ArgumentHelp("A CRL file (PEM or DER) to use beside the installed ones (security add-crl). Repeatable.", valueName: "crlFile"))
    var crlFiles: [String] = []

    func validate() throws {
        if certificates.isEmpty { throw ValidationError("Name the certificate to verify with -c.") }
    }

    func run() async throws {
        let function = "SecTrustEvaluate"
        let chain = try CertificateItems.read(certificates, function: function).certificates
        let anchors = try CertificateItems.read(roots, function: function).certificates
        guard let leaf = chain.first else { throw ToolFailure.input(function, "\(certificates[0]) holds no certificate.") }
        var crls: [Data] = []
        for file in crlFiles { crls.append(try KeychainBackups.read(file, function: function)) }
        // -R require or -R offline alone, or --crl alone, check CRLs.
        var methods = revocation.reduce(into: KeychainRevocationOptions()) { $0.formUnion($1.options) }
        if !methods.contains(.crl) && !methods.contains(.ocsp) { methods.formUnion(.crl) }
        let options = revocation.isEmpty && crls.isEmpty ? nil : methods
        let verification: KeychainCertificateVerification
        do {
            verification = try leaf.verify(
                intermediates: Array(chain.dropFirst()), anchors: anchors, anchorsOnly: !anchors.isEmpty,
                hostname: policy == .ssl || host != nil ? host : nil, revocation: options, crls: crls)
        } catch {
            var failure = ToolFailure.input(function, "Cert Verify Result: \(Self.cssmName(error.status))")
            failure.detail = error.message
            throw failure
        }
        for note in verification.revocationNotes { Output.standardError("security: \(note)\n") }
        if !quiet { Output.standardOutput("...certificate verification successful.\n") }
    }

    /// The CSSM name macOS's tool prints for a failed evaluation.
    static func cssmName(_ status: KeychainStatus) -> String {
        switch status {
        case .certificateRevoked: "CSSMERR_TP_CERT_REVOKED"
        case .incompleteRevocationCheck: "CSSMERR_TP_INCOMPLETE_REVOCATION_CHECK"
        case .trustSettingDeny: "CSSMERR_APPLETP_TRUST_SETTING_DENY"
        default: "CSSMERR_TP_NOT_TRUSTED"
        }
    }
}

/// A `verify-cert -R` value, as macOS's tool takes them.
enum RevocationCheckOption: String, ExpressibleByArgument, CaseIterable {
    case ocsp, crl, require, offline

    var options: KeychainRevocationOptions {
        switch self {
        case .ocsp: .ocsp
        case .crl: .crl
        case .require: .requirePositiveResponse
        case .offline: .networkAccessDisabled
        }
    }
}
