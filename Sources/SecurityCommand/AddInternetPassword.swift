import ArgumentParser
import Foundation
import KeychainKit

/// `security add-internet-password`: adds an internet password item, or with `-U` updates the existing one.
struct AddInternetPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-internet-password",
        abstract: "Add an internet password item.",
        discussion: """
            The password is asked for twice on the terminal (echo off) when -w ends the command or no password is \
            given; with no terminal the command fails with errSecInteractionNotAllowed. Scripts give it as one line \
            on standard input with --password-stdin. -w <password> and -X <hex> still work, but put the password \
            on the command line, where other users can read it (/proc/PID/cmdline).
            """
    )

    /// The function name macOS prints when adding an internet password fails.
    static let addFunction = "SecKeychainAddInternetPassword <NULL>"

    @OptionGroup var attributes: InternetAttributeOptions<Specifying>

    @Option(
        name: .customShort("w"), parsing: .unconditional,
        help: ArgumentHelp("Put -w last to be asked for the password on the terminal (recommended). -w <password> puts it on the command line, where other users can read it.", valueName: "password"))
    var password: String?

    @Flag(name: .customLong("password-stdin"), help: "Read the password from standard input: one line, without its trailing newline (for scripts).")
    var passwordFromStandardInput = false

    @OptionGroup var options: AddOptions

    @OptionGroup var keychain: KeychainOptions

    func validate() throws {
        if passwordFromStandardInput && (password != nil || options.hexPassword != nil) {
            throw ValidationError("--password-stdin reads the password from standard input: leave out -w and -X.")
        }
    }

    func run() async throws {
        try RawArguments.requireCarried(attributes.byteValues + [password], function: Self.addFunction)
        let secret = try PasswordPrompt.secret(
            text: password, hex: options.hexPassword, fromStandardInput: passwordFromStandardInput,
            function: Self.addFunction)
        var stored = self.attributes.attributes(forAdding: true)
        stored[KeychainItem.trustedApplicationsCode] = try options.trustedApplicationsValue()
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, keychains: keychain.keychains)
        try PasswordItems.add(
            context, .internetPassword, attributes: stored,
            searchAttributes: self.attributes.searchAttributes(forAdding: true),
            secret: secret, accessGroup: keychain.accessGroup, update: options.update, addFunction: Self.addFunction,
            accessControl: try options.accessControl(function: Self.addFunction), sync: options.sync)
    }
}
