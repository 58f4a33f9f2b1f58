import ArgumentParser
import Foundation
import KeychainCore

/// `security dump-keychain`: prints every password item of the keychain, in every access group.
struct DumpKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump-keychain",
        abstract: "Dump the contents of the keychain.",
        discussion: "Prints every generic and internet password, local and synchronizable; secrets only with -d."
    )

    @Flag(name: .customShort("a"), help: "Dump access control list of items (accepted for compatibility; ignored).")
    var accessControl = false

    @Flag(name: .customShort("d"), help: "Dump (decrypted) data of items.")
    var showData = false

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.dump(context, accessGroup: keychain.accessGroup, showData: showData)
    }
}
