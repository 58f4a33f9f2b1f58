import ArgumentParser
import Foundation
import KeychainKit

/// `security add-internet-password`: adds an internet password item, or with `-U` updates the existing one.
struct AddInternetPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-internet-password",
        abstract: "Add an internet password item.",
        discussion: """
        Without -w or -X, or with -w last on the command line, the password is asked for twice on the \
        terminal; with no terminal the command fails with errSecInteractionNotAllowed.
        """
    )

    /// The function name macOS prints when adding an internet password fails.
    static let addFunction = "SecKeychainAddInternetPassword <NULL>"

    @OptionGroup var attributes: InternetAttributeOptions<Specifying>

    @Option(name: .customShort("w"), parsing: .unconditional, help: ArgumentHelp("Specify password to be added. Put -w last to be prompted instead.", valueName: "password"))
    var password: String?

    @OptionGroup var options: AddOptions

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let secret = try PasswordPrompt.secret(text: password, hex: options.hexPassword, function: Self.addFunction)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.add(context, .internetPassword, attributes: attributes.attributes(forAdding: true),
                              searchAttributes: attributes.searchAttributes(forAdding: true),
                              secret: secret, accessGroup: keychain.accessGroup, update: options.update, addFunction: Self.addFunction)
    }
}
