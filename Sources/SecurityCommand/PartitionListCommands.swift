import ArgumentParser
import Foundation
import KeychainKit

/// What `-S` and `-k` mean to the `set-…-partition-list` verbs, and how each entry maps onto an item's trusted
/// applications (the same list `add-…-password -T` sets).
struct PartitionListOptions: ParsableArguments {
    @Option(
        name: .customShort("S"), parsing: .unconditional,
        help: ArgumentHelp(
            "Comma-separated partition IDs, which replace the item's trusted applications: apple-tool: (the security tool), apple: (Apple-signed programs: none here), teamid:TEAM (programs with an access group TEAM.…, as registered with `security app add`), or a program as -T names one (a path, flatpak:APPID, snap:NAME); \"\" trusts no other program.",
            valueName: "partition-list"))
    var partitionList: String

    @Option(
        name: .customShort("k"), parsing: .unconditional,
        help: ArgumentHelp(
            "The keychain's password (its passcode), needed when one is set; without -k it is asked for on the terminal. On the command line other users can read it.", valueName: "password"))
    var password: String?

    @Argument(help: ArgumentHelp("The keychain to use: a name such as `work` or its path; default: the search list.", valueName: "keychain"))
    var keychains: [String] = []

    /// The function macOS names when setting an item's access fails.
    static let function = "SecKeychainItemSetAccessWithPassword"

    /// The `-S` entries as the items' new trusted-applications attribute (paths resolved).
    func trustedApplicationsValue() throws(ToolFailure) -> KeychainItem.Value {
        let entries = partitionList.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let terms = try TrustedApplicationTerms.resolved(entries)
        return KeychainItem.trustedApplicationsValue(try TrustedApplicationTerms.checked(terms))
    }

    /// Gives every item of `itemClass` matching `attributes` (in every access group, local and synchronizable)
    /// the `-S` list, after the keychain's password when one is set: the change weakens or strengthens the items'
    /// protection, so as on macOS it needs the keychain password, not merely an unlocked keychain.
    func apply(_ itemClass: KeychainItem.Class, matching attributes: [String: KeychainItem.Value]) throws(ToolFailure) {
        let value = try trustedApplicationsValue()
        let context = try ToolContext.open(accessGroup: nil, keychains: keychains)
        try Self.requirePassword(context.store, given: password)
        var query = KeychainQuery(itemClass, attributes: attributes)
        query.limit = .all
        query.synchronizable = .any
        do {
            try context.update(query, attributes: [KeychainItem.trustedApplicationsCode: value], data: nil)
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }

    /// Checks the keychain's passcode when one is set: `given`, else asked for on the terminal (no terminal:
    /// errSecInteractionNotAllowed). A wrong one fails with errSecAuthFailed.
    static func requirePassword(_ store: KeychainStore, given: String?) throws(ToolFailure) {
        let status: KeychainStore.LockStatus
        do {
            status = try store.lockStatus
        } catch {
            throw ToolFailure(function, error)
        }
        guard status != .noPasscode else { return }
        var passcode = given ?? ""
        if given == nil {
            passcode = try PasswordPrompt.ask(
                "password to unlock default: ", function: function,
                hint: "Changing an item's partition list needs the keychain's password: give it with -k, or run the command from a terminal to be asked for it.")
        }
        do {
            try store.unlock(passcode: passcode)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security set-generic-password-partition-list`: sets the partition list (here: the trusted applications) of
/// the generic passwords matching the flags.
struct SetGenericPasswordPartitionList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-generic-password-partition-list",
        abstract: "Set the partition list of a generic password item.",
        discussion: """
            Every generic password matching the flags (every one when none is given) gets the -S list as its trusted \
            applications: the programs that may find and read it besides those of its access group (see -T of \
            add-generic-password). The list replaces the item's previous one. The keychain's password is needed when \
            one is set (-k, or asked for on the terminal).
            """
    )

    @OptionGroup var attributes: GenericAttributeOptions<Matching>
    @OptionGroup var options: PartitionListOptions

    func run() async throws {
        try options.apply(.genericPassword, matching: attributes.attributes(forAdding: false))
    }
}

/// `security set-internet-password-partition-list`: as for generic passwords, for internet passwords.
struct SetInternetPasswordPartitionList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-internet-password-partition-list",
        abstract: "Set the partition list of an internet password item.",
        discussion: """
            Every internet password matching the flags (every one when none is given) gets the -S list as its trusted \
            applications: the programs that may find and read it besides those of its access group (see -T of \
            add-internet-password). The list replaces the item's previous one. The keychain's password is needed when \
            one is set (-k, or asked for on the terminal).
            """
    )

    @OptionGroup var attributes: InternetAttributeOptions<Matching>
    @OptionGroup var options: PartitionListOptions

    func run() async throws {
        try options.apply(.internetPassword, matching: attributes.attributes(forAdding: false))
    }
}

/// `security set-key-partition-list`: sets the partition list (here: the trusted applications) of the keys
/// matching the flags.
struct SetKeyPartitionList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-key-partition-list",
        abstract: "Set the partition list of a key.",
        discussion: """
            Every key matching the flags (every one when none is given) gets the -S list as its trusted applications: \
            the programs that may find and use it besides those of its access group. The list replaces the key's \
            previous one. The keychain's password is needed when one is set (-k, or asked for on the terminal).
            """
    )

    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Match \"application label\" string.", valueName: "label"))
    var applicationLabel: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: ArgumentHelp("Match \"creator\" (four-character code).", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("l"), parsing: .unconditional, help: ArgumentHelp("Match \"label\" string.", valueName: "label"))
    var label: String?

    @Option(name: .customShort("t"), parsing: .unconditional, help: ArgumentHelp("Match the key type: public, private or symmetric (\"session\").", valueName: "type"))
    var type: String?

    @Flag(name: .customShort("s"), help: "Match keys that can sign.")
    var signing = false

    @OptionGroup var options: PartitionListOptions

    func validate() throws {
        if let type, Self.keyClasses[type] == nil {
            throw ValidationError("-t: '\(type)' is not a key type; use public, private or symmetric.")
        }
    }

    /// `kSecAttrKeyClass` by `-t` name.
    static let keyClasses: [String: Int64] = ["public": 0, "private": 1, "symmetric": 2, "session": 2]

    func run() async throws {
        var attributes: [String: KeychainItem.Value] = [:]
        attributes["klbl"] = applicationLabel.map { .data(Data($0.utf8)) }
        attributes["crtr"] = creator?.numberValue
        attributes["labl"] = label.map(KeychainItem.Value.string)
        attributes["kcls"] = type.flatMap { Self.keyClasses[$0] }.map(KeychainItem.Value.int)
        if signing { attributes["sign"] = .int(1) }
        try options.apply(.key, matching: attributes)
    }
}
