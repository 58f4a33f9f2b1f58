import ArgumentParser
import KeychainKit

/// `security verify-keychain`: reads every stored item and lists the damaged ones.
struct VerifyKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-keychain",
        abstract: "Check that every stored item can be read.",
        discussion: """
        Reads every item of every class (without opening secrets, so a locked keychain can be checked) and \
        prints one line per damaged item: its class, its row and what is wrong, never its contents. Ends with \
        "N items checked, M damaged". Exits 0 when no item is damaged, 1 otherwise. A damaged item is one whose \
        stored attributes fail authentication (the file was damaged or altered); restore it from a backup. \
        Through keychaind this is for the security tool installed beside it, after the keychain's passcode when \
        one is set.
        """
    )

    /// The function name printed in this verb's errors.
    static let function = "verify-keychain"

    @Argument(help: ArgumentHelp("Ignored: there is one keychain (macOS's keychain file argument).", valueName: "keychain"))
    var keychains: [String] = []

    func run() async throws {
        let report: KeychainStore.VerifyReport
        do {
            report = try ToolContext.keychain(createIfMissing: false, function: Self.function).verify()
        } catch let error as KeychainError {
            throw ToolFailure(Self.function, error)
        }
        var lines = report.damaged.map { "damaged: \($0.itemClass.rawValue) row \($0.row): \($0.problem)\n" }
        lines.append("\(report.checked) items checked, \(report.damaged.count) damaged\n")
        Output.standardOutput(lines.joined())
        if !report.damaged.isEmpty { throw ExitCode(1) }
    }
}
