import Foundation
import KeychainKit

extension ExportCommand {
    /// `-t identities -f pkcs12`: every certificate whose private key is in the keychain, with that key and the
    /// certificate's issuers found in the keychain, in one PKCS#12 file sealed under the passphrase.
    func exportIdentities() throws(ToolFailure) {
        let function = Self.function
        guard type == .identities || type == .all else {
            throw ToolFailure(function, status: .unsupportedFormat, detail: "PKCS#12 holds identities: use -t identities.")
        }
        let context = try ToolContext.open(accessGroup: nil, createIfMissing: false, keychains: keychain.map { [$0] } ?? [])
        let certificates = try CertificateItems.all(context)
        var privateKeys: [Data: (KeychainItem, KeychainKey?)] = [:]
        for item in try context.all(.key, function: function) where item.attributes["kcls"]?.intValue == 1 {
            guard case .data(let label)? = item.attributes["klbl"] else { continue }
            let isToken = !(item.attributes["tkid"]?.stringValue ?? "").isEmpty
            privateKeys[label] = (item, isToken ? nil : KeychainKey(item: item))
        }
        var identities: [KeychainIdentityExport] = []
        var chain: [KeychainCertificate] = []
        var tokenIdentities = 0
        for (item, certificate) in certificates {
            guard let entry = privateKeys[certificate.publicKeyHash] else { continue }
            let (keyItem, key) = entry
            guard let key, key.isPrivate else {
                tokenIdentities += 1
                continue
            }
            let label = item.attributes["labl"]?.stringValue ?? keyItem.attributes["labl"]?.stringValue ?? certificate.subjectSummary
            identities.append(KeychainIdentityExport(key: key, certificate: certificate, friendlyName: label))
            for issuer in certificate.issuers(in: certificates.map(\.1))
            where !chain.contains(where: { $0.der == issuer.der })
                && !identities.contains(where: { $0.certificate.der == issuer.der })
            {
                chain.append(issuer)
            }
        }
        guard !identities.isEmpty else {
            if tokenIdentities > 0 {
                throw ToolFailure(
                    function, status: .unimplemented, detail: "The keychain's identities have keys that never leave it (token keys): they cannot be exported. Export their certificates with -t certs.")
            }
            throw ToolFailure(function, status: .itemNotFound, detail: "The keychain has no identity: a certificate together with its private key.")
        }
        if tokenIdentities > 0 {
            Output.standardError(
                "security: \(tokenIdentities) \(tokenIdentities == 1 ? "identity was" : "identities were") left out: \(tokenIdentities == 1 ? "its key never leaves" : "their keys never leave") the keychain.\n"
            )
        }
        let password = try newPassphrase()
        let data: Data
        do {
            data = try KeychainKeyAndCertificateFile.makePKCS12(identities, certificates: chain, password: password)
        } catch {
            throw ToolFailure(function, error)
        }
        try write(data)
    }

    /// The passphrase a PKCS#12 export is sealed under: one line of standard input, `-P`, or asked twice on the
    /// terminal.
    private func newPassphrase() throws(ToolFailure) -> String {
        let function = Self.function
        if passphraseFromStandardInput { return try StandardInputSecret.text(function: function, what: "the passphrase") }
        if let passphrase { return passphrase }
        let hint = "Give it on standard input with --passphrase-stdin."
        let first = try PasswordPrompt.ask("PKCS#12 passphrase: ", function: function, hint: hint)
        guard try PasswordPrompt.ask("Retype PKCS#12 passphrase: ", function: function, hint: hint) == first else {
            throw ToolFailure(function, status: .param, detail: "The passphrases do not match.")
        }
        return first
    }
}
