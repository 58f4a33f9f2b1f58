import ArgumentParser
import Foundation
import KeychainCore

/// `security find-generic-password`: finds the first generic password matching the given attributes.
struct FindGenericPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-generic-password",
        abstract: "Find a generic password item.",
        discussion: "Prints the first matching item's attributes; -g adds its password on stderr, -w prints only its password."
    )

    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Match \"account\" string.", valueName: "account"))
    var account: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: ArgumentHelp("Match \"creator\" (four-character code).", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("C"), parsing: .unconditional, help: ArgumentHelp("Match \"type\" (four-character code).", valueName: "type"))
    var type: FourCharCode?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Match \"kind\" string.", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("G"), parsing: .unconditional, help: ArgumentHelp("Match \"value\" string (generic attribute).", valueName: "value"))
    var generic: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Match \"comment\" string.", valueName: "comment"))
    var comment: String?

    @Option(name: .customShort("l"), parsing: .unconditional, help: ArgumentHelp("Match \"label\" string.", valueName: "label"))
    var label: String?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Match \"service\" string.", valueName: "service"))
    var service: String?

    @Flag(name: .customShort("g"), help: "Display the password for the item found (on stderr).")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Display only the password on stdout.")
    var passwordOnly = false

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let given = GenericPasswordAttributes(account: account, service: service, label: label, comment: comment,
                                              kind: kind, generic: generic, creator: creator, type: type)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.find(context, .genericPassword, given.searchAttributes, accessGroup: keychain.accessGroup,
                               showPassword: showPassword, passwordOnly: passwordOnly)
    }
}
