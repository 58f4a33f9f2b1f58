import ArgumentParser
import Foundation
import KeychainKit

/// A `-r` value of `add-trusted-cert`, as macOS's tool takes them.
enum TrustResultArgument: String, CaseIterable, ExpressibleByArgument {
    case trustRoot, trustAsRoot, deny, unspecified

    var result: KeychainTrustResult {
        switch self {
        case .trustRoot: .trustRoot
        case .trustAsRoot: .trustAsRoot
        case .deny: .deny
        case .unspecified: .unspecified
        }
    }
}

/// A `-p` value of `add-trusted-cert`, as macOS's tool takes them.
enum TrustPolicyArgument: String, CaseIterable, ExpressibleByArgument {
    case ssl, basic, smime, eap, IPSec, codeSign, revocation, timestamping

    var policy: KeychainTrustPolicy {
        switch self {
        case .ssl: .ssl
        case .basic: .basic
        case .smime: .smime
        case .eap: .eap
        case .IPSec: .ipsec
        case .codeSign: .codeSign
        case .revocation: .revocation
        case .timestamping: .timestamping
        }
    }
}

/// The one certificate of a file named on a trust settings command line.
enum TrustedCertificateFile {
    static func read(_ path: String, function: String) throws(ToolFailure) -> KeychainCertificate {
        guard let certificate = try CertificateItems.read([path], function: function).certificates.first else {
            throw ToolFailure.input(function, "\(path) holds no certificate.")
        }
        return certificate
    }
}

/// The `-d` (admin) and `-s` (system) flags of the trust settings verbs.
enum TrustDomainFlags {
    static func domain(admin: Bool, system: Bool) -> KeychainTrustDomain {
        system ? .system : admin ? .admin : .user
    }
}

/// `security add-trusted-cert`: sets a certificate's trust settings in the user's (or with -d the admin's) domain.
struct AddTrustedCert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-trusted-cert",
        abstract: "Add trusted certificate(s).",
        discussion: """
            Sets the certificate's trust settings (SecTrustSettingsSetTrustSettings) in the user's domain \
            ($XDG_CONFIG_HOME/keychain/trust-settings.plist, else ~/.config/keychain/…), or with -d in the admin domain \
            (/etc/keychain/trust-settings.plist; needs root). Without -r the result is trustRoot for a self-signed \
            certificate and trustAsRoot for another; with neither -r, -p nor -s the certificate is always trusted as a \
            root. Each -p limits the setting to that policy; -s (with -p ssl, the host name) limits it further.
            """
    )

    @Flag(name: .customShort("d"), help: "Add to the admin trust settings domain (needs root).")
    var admin = false

    @Option(name: .customShort("r"), help: ArgumentHelp("trustRoot, trustAsRoot, deny or unspecified.", valueName: "resultType"))
    var result: TrustResultArgument?

    @Option(name: .customShort("p"), help: ArgumentHelp("Limit the setting to a policy: ssl, basic, smime, eap, IPSec, codeSign, revocation, timestamping.", valueName: "policy"))
    var policies: [TrustPolicyArgument] = []

    @Option(name: .customShort("s"), help: ArgumentHelp("A policy-specific string (for ssl, the host name).", valueName: "policyString"))
    var policyString: String?

    @Option(name: .customShort("k"), help: ArgumentHelp("Keychain to add the certificate to (accepted for compatibility; ignored).", valueName: "keychain"))
    var keychain: String?

    @Argument(help: ArgumentHelp("The certificate file, PEM or DER.", valueName: "certFile"))
    var file: String

    func run() async throws {
        let function = "SecTrustSettingsSetTrustSettings"
        let certificate = try TrustedCertificateFile.read(file, function: function)
        var settings: [KeychainTrustSetting] = []
        if !policies.isEmpty {
            settings = policies.map { KeychainTrustSetting(policy: $0.policy, policyString: policyString, result: result?.result) }
        } else if result != nil || policyString != nil {
            settings = [KeychainTrustSetting(policyString: policyString, result: result?.result)]
        }
        do {
            try KeychainTrustSettings.set(settings, for: certificate, domain: admin ? .admin : .user)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security remove-trusted-cert`: removes a certificate's trust settings.
struct RemoveTrustedCert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-trusted-cert",
        abstract: "Remove trusted certificate(s).",
        discussion: "Removes the certificate's trust settings from the user's domain, or with -d from the admin domain (needs root)."
    )

    @Flag(name: .customShort("d"), help: "Remove from the admin trust settings domain (needs root).")
    var admin = false

    @Argument(help: ArgumentHelp("The certificate file, PEM or DER.", valueName: "certFile"))
    var file: String

    func run() async throws {
        let function = "SecTrustSettingsRemoveTrustSettings"
        let certificate = try TrustedCertificateFile.read(file, function: function)
        do {
            try KeychainTrustSettings.remove(certificate, domain: admin ? .admin : .user)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security dump-trust-settings`: lists the certificates with trust settings, and the settings, as macOS does.
struct DumpTrustSettings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump-trust-settings",
        abstract: "Display contents of trust settings.",
        discussion: "The user's trust settings; with -d the admin's; with -s the system's (the System Roots, each trusted as a root)."
    )

    @Flag(name: .customShort("s"), help: "Display the system trust settings (the System Roots).")
    var system = false

    @Flag(name: .customShort("d"), help: "Display the admin trust settings.")
    var admin = false

    func run() async throws {
        let trusted: [KeychainTrustedCertificate]
        do {
            trusted = try KeychainTrustSettings.trustedCertificates(TrustDomainFlags.domain(admin: admin, system: system))
        } catch  where error.status == .noTrustSettings {
            throw ToolFailure("SecTrustSettingsCopyCertificates", status: .noTrustSettings)
        } catch {
            throw ToolFailure("SecTrustSettingsCopyCertificates", error)
        }
        Output.standardOutput(Self.describe(trusted))
    }

    /// macOS's listing: the count, then per certificate its name and each setting's policy, string, allowed error,
    /// key usage and result.
    static func describe(_ trusted: [KeychainTrustedCertificate]) -> String {
        var out = "Number of trusted certs = \(trusted.count)\n"
        for (index, entry) in trusted.enumerated() {
            out += "Cert \(index): \(entry.certificate?.subjectSummary ?? entry.sha1Fingerprint)\n"
            out += "   Number of trust settings : \(entry.settings.count)\n"
            for (number, setting) in entry.settings.enumerated() {
                out += "   Trust Setting \(number):\n"
                if let policy = setting.policyDisplayName { out += "      Policy OID            : \(policy)\n" }
                if let string = setting.policyString { out += "      Policy String         : \(string)\n" }
                if let allowed = setting.allowedError { out += "      Allowed Error         : \(allowed)\n" }
                if let usage = setting.keyUsage { out += "      Key Usage             : 0x\(String(UInt32(truncatingIfNeeded: usage), radix: 16))\n" }
                if let result = setting.result { out += "      Result Type           : \(result.constantName)\n" }
            }
        }
        return out
    }
}

/// `security trust-settings-export`: writes a domain's trust settings in Apple's external representation.
struct TrustSettingsExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust-settings-export",
        abstract: "Export trust settings.",
        discussion:
            "Writes the user's (-d: the admin's, -s: the system's) trust settings to a file as macOS does: an XML property list with trustVersion and trustList, keyed by each certificate's SHA-1 (mode 0600, never through a link)."
    )

    @Flag(name: .customShort("s"), help: "Export the system trust settings.")
    var system = false

    @Flag(name: .customShort("d"), help: "Export the admin trust settings.")
    var admin = false

    @Argument(help: ArgumentHelp("The file to write.", valueName: "settings_file"))
    var file: String

    func run() async throws {
        let function = "SecTrustSettingsCreateExternalRepresentation"
        do {
            let data = try KeychainTrustSettings.exportSettings(TrustDomainFlags.domain(admin: admin, system: system))
            try KeychainFiles.write(data, to: file)
        } catch  where error.status == .noTrustSettings {
            throw ToolFailure(function, status: .noTrustSettings)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security trust-settings-import`: replaces a domain's trust settings with an exported file's.
struct TrustSettingsImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust-settings-import",
        abstract: "Import trust settings.",
        discussion: "Replaces the user's (with -d the admin's; needs root) trust settings with those of a file trust-settings-export wrote."
    )

    @Flag(name: .customShort("d"), help: "Import into the admin trust settings domain (needs root).")
    var admin = false

    @Argument(help: ArgumentHelp("The file to read.", valueName: "settings_file"))
    var file: String

    func run() async throws {
        let function = "SecTrustSettingsImportExternalRepresentation"
        let data = try KeychainBackups.read(file, function: function)
        do {
            try KeychainTrustSettings.importSettings(data, domain: admin ? .admin : .user)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}
