import ArgumentParser
import Foundation
import KeychainKit

/// `security delete-generic-password`: deletes the first generic password matching the given attributes.
struct DeleteGenericPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-generic-password",
        abstract: "Delete a generic password item.",
        discussion: "Prints the first matching item's attributes, then deletes that one item. At least one attribute must be given."
    )

    @OptionGroup var match: GenericMatchOptions

    @OptionGroup var keychain: KeychainOptions

    func validate() throws {
        if match.given.isEmpty {
            throw ValidationError("Give at least one attribute to match, for example -a and -s.")
        }
    }

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.delete(context, .genericPassword, match.given.searchAttributes, accessGroup: keychain.accessGroup)
    }
}
