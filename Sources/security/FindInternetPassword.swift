import ArgumentParser
import Foundation
import KeychainKit

/// `security find-internet-password`: finds the first internet password matching the given attributes.
struct FindInternetPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-internet-password",
        abstract: "Find an internet password item.",
        discussion: "Prints the first matching item's attributes; -g adds its password on stderr, -w prints only its password."
    )

    @OptionGroup var match: InternetMatchOptions

    @Flag(name: .customShort("g"), help: "Display the password for the item found (on stderr).")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Display only the password on stdout.")
    var passwordOnly = false

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, createIfMissing: false)
        try PasswordItems.find(context, .internetPassword, match.given.searchAttributes, accessGroup: keychain.accessGroup,
                               showPassword: showPassword, passwordOnly: passwordOnly)
    }
}
