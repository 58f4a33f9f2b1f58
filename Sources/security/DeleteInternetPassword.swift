import ArgumentParser
import Foundation
import KeychainKit

/// `security delete-internet-password`: deletes the first internet password matching the given attributes.
struct DeleteInternetPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-internet-password",
        abstract: "Delete an internet password item.",
        discussion: "Prints the first matching item's attributes, then deletes that one item. At least one attribute must be given."
    )

    @OptionGroup var match: InternetMatchOptions

    @OptionGroup var keychain: KeychainOptions

    func validate() throws {
        if match.given.isEmpty {
            throw ValidationError("Give at least one attribute to match, for example -s and -a.")
        }
    }

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.delete(context, .internetPassword, match.given.searchAttributes, accessGroup: keychain.accessGroup)
    }
}
