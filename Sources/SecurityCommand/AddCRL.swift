import ArgumentParser
import Foundation
import KeychainKit

/// `security add-crl`: installs certificate revocation lists where trust evaluation finds them.
struct AddCRL: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-crl",
        abstract: "Add certificate revocation list(s).",
        discussion:
            "Copies each CRL of the file (PEM or DER) into the user's CRL folder ($XDG_CONFIG_HOME/keychain/crls, else ~/.config/keychain/crls), or with -d into /etc/keychain/crls (needs root). Evaluations with a revocation policy (verify-cert -R crl) use every current CRL there whose issuer's key signed it."
    )

    @Flag(name: .customShort("d"), help: "Add for every user (the admin CRL folder; needs root).")
    var admin = false

    @Argument(help: ArgumentHelp("The CRL file, PEM or DER.", valueName: "crlFile"))
    var file: String

    func run() async throws {
        let function = "SecCRLAdd"
        let data = try KeychainBackups.read(file, function: function)
        let count: Int
        do {
            count = try KeychainTrustSettings.addCRL(data, admin: admin)
        } catch {
            throw ToolFailure(function, error)
        }
        Output.standardOutput("\(count) CRL\(count == 1 ? "" : "s") added.\n")
    }
}
