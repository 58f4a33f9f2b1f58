import ArgumentParser
import Foundation
import KeychainKit
import KeychainSecretServiceClient

#if canImport(Glibc)
import Glibc
#endif

/// `security import-secret-service`: copies every item of every collection of the Secret Service provider on the
/// session bus (gnome-keyring, KeePassXC) into the keychain's Secret Service collections, keeping labels,
/// attributes, content types, secrets and dates.
struct ImportSecretService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-secret-service",
        abstract: "Copy every item of the Secret Service provider on the session bus into the keychain.",
        discussion: """
            Reads the provider that owns org.freedesktop.secrets on the session bus (DBUS_SESSION_BUS_ADDRESS): \
            gnome-keyring, KeePassXC. Its default collection's items go to the keychain's default collection \
            (login), other collections' to the collection of the same label, made when missing. Labels, attributes, \
            content types, secrets and created/modified times are kept. An item already there with the same attributes \
            and secret is skipped, so running the import again adds nothing. Locked collections are unlocked (the \
            provider may ask for their password); one whose prompt is dismissed is left out and named. Secrets travel \
            encrypted (dh-ietf1024-sha256-aes128-cbc-pkcs7) unless the provider cannot, which is then said. Run it \
            before starting keychaind --secret-service: keychaind itself is refused as a source. Through keychaind only \
            this tool may import (as for restore-keychain). Progress is shown on standard error when it is a terminal; \
            the summary goes to standard output. Exits non-zero when an item or a collection could not be imported.
            """
    )

    static let function = "import-secret-service"

    func run() async throws {
        let keychain = try ToolContext.keychain(function: Self.function)
        let address: String
        let source: SecretServiceSource
        do {
            address = try SecretServiceSource.sessionBusAddress(ProcessInfo.processInfo.environment)
            source = try SecretServiceSource(address: address)
        } catch {
            throw Self.failure(error.message)
        }
        let progress = TerminalProgress()
        let report: SecretServiceImportReport
        do {
            report = try SecretServiceImporter.run(from: source, progress: { progress.show("importing: \($0.done)/\($0.total) items (\($0.collection))") }, write: keychain.importSecretServiceItems)
        } catch {
            progress.clear()
            switch error {
            case .source(let problem): throw Self.failure(problem.message)
            case .keychain(let problem): throw ToolFailure(Self.function, problem)
            }
        }
        progress.clear()
        if report.plain {
            Output.standardError("security: the provider does not encrypt secrets on the bus (dh-ietf1024-sha256-aes128-cbc-pkcs7 is not supported): they were read in the clear.\n")
        }
        let s = report.summary
        Output.standardOutput("imported \(s.added) items from \(report.collections) \(report.collections == 1 ? "collection" : "collections") (\(s.skipped) already present)\n")
        var problems: [String] = []
        if s.failed > 0 {
            problems.append(
                "\(s.failed) \(s.failed == 1 ? "item" : "items") could not be imported (gone or locked meanwhile, over a bound, or with attributes a keychain item cannot carry); run the import again to retry."
            )
        }
        if !report.lockedCollections.isEmpty {
            let names = report.lockedCollections.map { "\"\($0)\"" }.joined(separator: ", ")
            problems.append("left out, still locked (the unlock prompt was dismissed): \(names); unlock and run the import again.")
        }
        if !problems.isEmpty {
            var failure = Self.failure(problems[0])
            failure.detail = problems.count > 1 ? problems[1] : nil
            throw failure
        }
    }

    /// A failure printed as `security: import-secret-service: MESSAGE`, exit status 1.
    static func failure(_ message: String) -> ToolFailure {
        ToolFailure.input(function, message)
    }
}
