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

    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Specify account name.", valueName: "account"))
    var account: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: ArgumentHelp("Specify item creator (four-character code).", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("C"), parsing: .unconditional, help: ArgumentHelp("Specify item type (four-character code).", valueName: "type"))
    var type: FourCharCode?

    @Option(name: .customShort("d"), parsing: .unconditional, help: ArgumentHelp("Specify security domain string.", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Specify kind.", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Specify comment string.", valueName: "comment"))
    var comment: String?

    @Option(name: .customShort("l"), parsing: .unconditional, help: ArgumentHelp("Specify label (default: the server name).", valueName: "label"))
    var label: String?

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("Specify path string.", valueName: "path"))
    var path: String?

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("Specify port number.", valueName: "port"))
    var port: UInt16?

    @Option(name: .customShort("r"), parsing: .unconditional, help: ArgumentHelp("Specify protocol (four-character code, e.g. \"http\", \"htps\", \"ftp \").", valueName: "protocol"))
    var `protocol`: FourCharCode?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Specify server name.", valueName: "server"))
    var server: String?

    @Option(name: .customShort("t"), parsing: .unconditional, help: ArgumentHelp("Specify authentication type (four-character code; default \"dflt\").", valueName: "authenticationType"))
    var authenticationType: FourCharCode?

    @Option(name: .customShort("w"), parsing: .unconditional, help: ArgumentHelp("Specify password to be added. Put -w last to be prompted instead.", valueName: "password"))
    var password: String?

    @Option(name: .customShort("X"), parsing: .unconditional, help: ArgumentHelp("Specify password data to be added as a hexadecimal string.", valueName: "hex"))
    var hexPassword: HexData?

    @Flag(name: .customShort("U"), help: "Update item if it already exists (if omitted, the item cannot already exist).")
    var update = false

    @Flag(name: .customShort("A"), help: "Allow any application to access this item (accepted for compatibility; ignored).")
    var allowAnyApplication = false

    @Option(name: .customShort("T"), parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Specify an application which may access this item; repeatable (accepted for compatibility; ignored).", valueName: "appPath"))
    var trustedApplications: [String] = []

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        let given = InternetPasswordAttributes(
            account: account, server: server, label: label ?? server, comment: comment, kind: kind,
            securityDomain: securityDomain, path: path, port: port, protocol: `protocol`,
            authenticationType: authenticationType ?? FourCharCode(argument: "dflt"), creator: creator, type: type)
        let secret = try PasswordPrompt.secret(text: password, hex: hexPassword, function: Self.addFunction)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup)
        try PasswordItems.add(context, .internetPassword, attributes: given.attributes, searchAttributes: given.searchAttributes,
                              secret: secret, accessGroup: keychain.accessGroup, update: update, addFunction: Self.addFunction)
    }
}
