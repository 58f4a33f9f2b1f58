import ArgumentParser
import Foundation
import KeychainKit

/// `security dump-keychain`: prints every password item of the keychain, in every access group.
struct DumpKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump-keychain",
        abstract: "Dump the contents of the keychain.",
        discussion: """
            Prints every generic and internet password, local and synchronizable; secrets only with -d, and when \
            the keychain has a passcode, only after it is given (asked for on the terminal). A damaged password \
            item (see verify-keychain) is listed on stderr and the command exits with errSecDecode's status (93).
            """
    )

    @Flag(name: .customShort("a"), help: "Dump access control list of items (accepted for compatibility; ignored).")
    var accessControl = false

    @Flag(name: .customShort("d"), help: "Dump (decrypted) data of items.")
    var showData = false

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, createIfMissing: false, keychains: keychain.keychains)
        // (Through keychaind, the daemon itself asks the tool for the passcode before any item call.)
        if showData, let status = try? context.store.status(), status.daemon == nil,
            status.lockStatus == .beforeFirstUnlock || status.lockStatus == .locked
        {
            // Every secret at once: the passcode first, even for the items that need none.
            let passcode = try PasswordPrompt.ask(
                "password to unlock default: ", function: UnlockKeychain.function,
                hint: "dump-keychain -d shows every secret only after the keychain's passcode; run it from a terminal.")
            do {
                try context.store.unlock(passcode: passcode)
            } catch {
                throw ToolFailure(UnlockKeychain.function, error)
            }
        }
        try PasswordItems.dump(context, accessGroup: keychain.accessGroup, showData: showData)
    }
}
