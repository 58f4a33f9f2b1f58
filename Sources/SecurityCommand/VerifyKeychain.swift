import ArgumentParser
import Foundation
import KeychainKit

/// `security verify-keychain`: checks every stored item for damage and lists the damaged ones.
struct VerifyKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-keychain",
        abstract: "Check every item of the keychain for damage.",
        discussion: """
            Checks each stored item of every class and access group: its row, its sealed attributes, its search \
            index and its sealed secret. Nothing is changed and no attribute or secret is printed. An intact \
            keychain prints "N items verified" and exits 0. Each damaged item is listed on stdout as \
            "damaged: <class> rowid <n> ref <persistent reference in hex>: <what is wrong>", and the command exits \
            with errSecDecode's status (93); restore-keychain with a backup replaces damaged items. Items of a \
            locked class can only be checked once the keychain is unlocked: you are asked for its passcode on the \
            terminal when one is set.
            """
    )

    /// The function name printed when the check fails or finds damage.
    static let function = "SecKeychainVerify"

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        let store = try ToolContext.keychain(createIfMissing: false, function: Self.function, named: keychainNames.first)
        // Through keychaind the daemon asks the tool for the passcode itself; in this process the locked classes
        // are unlocked first so that every item can be checked.
        if let status = try? store.status(), status.daemon == nil,
            status.lockStatus == .beforeFirstUnlock || status.lockStatus == .locked
        {
            let passcode = try PasswordPrompt.ask(
                "password to unlock default: ", function: UnlockKeychain.function,
                hint: "verify-keychain checks the items of the locked classes only after the keychain's passcode; run it from a terminal.")
            do {
                try store.unlock(passcode: passcode)
            } catch {
                throw ToolFailure(UnlockKeychain.function, error)
            }
        }
        let report: KeychainStore.Verification
        do {
            report = try store.verify()
        } catch {
            throw ToolFailure(Self.function, error)
        }
        var out = report.damagedItems.map(Self.describe).joined()
        out += Self.summary(report)
        Output.standardOutput(out)
        guard report.isIntact else { throw Self.damageFailure(report.damagedItems.count) }
    }

    /// One damaged item's line: where it is and what is wrong, never its contents.
    static func describe(_ item: KeychainStore.DamagedItem) -> String {
        let reference = item.persistentReference.map { " ref " + $0.map { String(format: "%02x", $0) }.joined() } ?? ""
        return "damaged: \(item.itemClass.rawValue) rowid \(item.rowID)\(reference): \(item.problem)\n"
    }

    /// The closing line: how many items checked out, were not checked, are damaged.
    static func summary(_ report: KeychainStore.Verification) -> String {
        var parts = ["\(report.verifiedCount) item\(report.verifiedCount == 1 ? "" : "s") verified"]
        if report.notCheckedCount > 0 { parts.append("\(report.notCheckedCount) not checked (their class is locked)") }
        if !report.isIntact { parts.append("\(report.damagedItems.count) damaged") }
        return parts.joined(separator: ", ") + "\n"
    }

    /// The failure a command reports after finding `count` damaged items (errSecDecode).
    static func damageFailure(_ count: Int?, function: String = function) -> ToolFailure {
        let what = count.map { "\($0) damaged item\($0 == 1 ? "" : "s")" } ?? "Damaged items"
        return ToolFailure(
            function, status: .decode,
            detail:
                "\(what) in the keychain: their attributes or secrets can no longer be read. Restore them from a backup with `security restore-keychain -i <file>`, which replaces damaged items; `security verify-keychain` lists them."
        )
    }
}
