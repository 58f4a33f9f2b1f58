import ArgumentParser
import Foundation
import KeychainKit

/// What sets the generic and internet password verbs apart: the name in the verb, and the flags.
protocol PasswordKind {
    associatedtype Match: ParsableArguments & PasswordAttributes
    /// `generic` or `internet`.
    static var name: String { get }
    /// The flags a delete's usage error suggests.
    static var exampleFlags: String { get }
}

enum GenericPasswordKind: PasswordKind {
    typealias Match = GenericAttributeOptions<Matching>
    static let name = "generic"
    static let exampleFlags = "-a and -s"
}

enum InternetPasswordKind: PasswordKind {
    typealias Match = InternetAttributeOptions<Matching>
    static let name = "internet"
    static let exampleFlags = "-s and -a"
}

/// `security find-generic-password` and `find-internet-password`: finds the first password matching the given
/// attributes.
struct FindPassword<Kind: PasswordKind>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "find-\(Kind.name)-password",
            abstract: "Find a\(Kind.name == "internet" ? "n" : "") \(Kind.name) password item.",
            discussion: "Prints the first matching item's attributes; -g adds its password on stderr, -w prints only its password."
        )
    }

    @OptionGroup var match: Kind.Match

    @Flag(name: .customShort("g"), help: "Display the password for the item found (on stderr).")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Display only the password on stdout.")
    var passwordOnly = false

    @OptionGroup var keychain: KeychainOptions

    func run() async throws {
        try RawArguments.requireCarried(match.byteValues, function: PasswordItems.searchFunction)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, createIfMissing: false, keychains: keychain.keychains)
        try PasswordItems.find(
            context, Kind.Match.itemClass, match.searchAttributes(), accessGroup: keychain.accessGroup,
            showPassword: showPassword, passwordOnly: passwordOnly)
    }
}

/// `security delete-generic-password` and `delete-internet-password`: deletes the first password matching the
/// given attributes.
struct DeletePassword<Kind: PasswordKind>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "delete-\(Kind.name)-password",
            abstract: "Delete a\(Kind.name == "internet" ? "n" : "") \(Kind.name) password item.",
            discussion: "Prints the first matching item's attributes, then deletes that one item. At least one attribute must be given."
        )
    }

    @OptionGroup var match: Kind.Match

    @OptionGroup var keychain: KeychainOptions

    func validate() throws {
        if match.isEmpty {
            throw ValidationError("Give at least one attribute to match, for example \(Kind.exampleFlags).")
        }
    }

    func run() async throws {
        try RawArguments.requireCarried(match.byteValues, function: PasswordItems.searchFunction)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, keychains: keychain.keychains)
        try PasswordItems.delete(context, Kind.Match.itemClass, match.searchAttributes(), accessGroup: keychain.accessGroup)
    }
}

typealias FindGenericPassword = FindPassword<GenericPasswordKind>
typealias FindInternetPassword = FindPassword<InternetPasswordKind>
typealias DeleteGenericPassword = DeletePassword<GenericPasswordKind>
typealias DeleteInternetPassword = DeletePassword<InternetPasswordKind>
