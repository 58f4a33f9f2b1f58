import ArgumentParser
import Foundation
import KeychainCore

/// `security delete-generic-password`: deletes the first generic password matching the given attributes.
struct DeleteGenericPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-generic-password",
        abstract: "Delete a generic password item.",
        discussion: "Prints the first matching item's attributes, then deletes that one item. At least one attribute must be given."
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

    @OptionGroup var keychain: KeychainOptions

    var given: GenericPasswordAttributes {
        GenericPasswordAttributes(account: account, service: service, label: label, comment: comment,
                                  kind: kind, generic: generic, creator: creator, type: type)
    }

    func validate() throws {
        if given.isEmpty {
            throw ValidationError("Give at least one attribute to match, for example -a and -s.")
        }
    }

    func run() async throws {
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.delete(context, .genericPassword, given.searchAttributes, accessGroup: keychain.accessGroup)
    }
}
