import ArgumentParser
import Foundation
import KeychainKit

/// The preference domain macOS's keychain-list verbs take with `-d`.
enum PreferenceDomain: String, ExpressibleByArgument, CaseIterable, Sendable {
    case user, system, common, dynamic
}

/// Prints keychains as macOS does: each path quoted on a line of its own, indented four spaces.
enum KeychainLines {
    static func print(_ keychains: [KeychainStore.KeychainInfo]) {
        Output.standardOutput(keychains.map { "    \"\($0.path)\"\n" }.joined())
    }

    /// The user's keychains, as the listing gives them.
    static func listing(function: String) throws(ToolFailure) -> (store: KeychainStore, keychains: [KeychainStore.KeychainInfo]) {
        let store = try ToolContext.keychain(function: function)
        do {
            return (store, try store.keychains())
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security create-keychain`: makes a keychain beside the login keychain.
struct CreateKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-keychain",
        abstract: "Create keychains.",
        discussion: """
            Makes each keychain named (a name such as `work`, or a path ending in `work.keychain-db`) in the keychain \
            folder, under `keychains/NAME.keychain-db`, with its own keybag and passcode; it starts unlocked. It is not \
            searched until `security list-keychains -s` puts it in the search list. The password is asked for on the \
            terminal (twice, echo off); scripts give it on standard input with --password-stdin; an empty one makes a \
            keychain without a passcode. -p still works but puts it on the command line.
            """
    )

    static let function = "SecKeychainCreate"

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("Use password for the new keychains, on the command line where other users can read it.", valueName: "password"))
    var password: String?

    @Flag(name: .customShort("P"), help: "Ask for the password (on the terminal).")
    var prompt = false

    @Flag(name: .customLong("password-stdin"), help: "Read the password from standard input: one line, without its trailing newline.")
    var passwordFromStandardInput = false

    @Argument(help: ArgumentHelp("The keychains to create.", valueName: "keychain"))
    var keychains: [String]

    func validate() throws {
        if keychains.isEmpty { throw ValidationError("Name the keychain to create.") }
        if [password != nil, prompt, passwordFromStandardInput].filter({ $0 }).count > 1 {
            throw ValidationError("Give the password one way: -p, -P or --password-stdin.")
        }
    }

    func run() async throws {
        let hint = "Give the password on standard input with --password-stdin."
        var passcode = password
        if passwordFromStandardInput {
            passcode = try StandardInputSecret.text(function: Self.function, what: "the password")
        } else if passcode == nil {
            let first = try PasswordPrompt.ask("password for new keychain: ", function: Self.function, hint: hint)
            let second = try PasswordPrompt.ask("retype password for new keychain: ", function: Self.function, hint: hint)
            guard first == second else { throw ToolFailure(Self.function, status: .param, detail: "The passwords do not match.") }
            passcode = first
        }
        let store = try ToolContext.keychain(function: Self.function)
        for name in keychains {
            do {
                try store.createKeychain(named: store.keychainName(name), passcode: passcode?.isEmpty == true ? nil : passcode)
            } catch {
                throw ToolFailure(Self.function, error)
            }
        }
    }
}

/// `security delete-keychain`: deletes keychains and their items.
struct DeleteKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-keychain",
        abstract: "Delete keychains and remove them from the search list.",
        discussion: "The login, System and SystemRoots keychains cannot be deleted."
    )

    @Argument(help: ArgumentHelp("The keychains to delete (names such as `work`, or their paths).", valueName: "keychain"))
    var keychains: [String]

    func validate() throws {
        if keychains.isEmpty { throw ValidationError("Name the keychain to delete.") }
    }

    func run() async throws {
        let function = "SecKeychainDelete"
        let store = try ToolContext.keychain(function: function)
        for name in keychains {
            do {
                try store.deleteKeychain(named: store.keychainName(name))
            } catch {
                throw ToolFailure(function, error)
            }
        }
    }
}

/// `security list-keychains`: shows or sets the search list.
struct ListKeychains: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-keychains",
        abstract: "Display or manipulate the keychain search list.",
        discussion: """
            Prints the keychains a search with no keychain of its own looks in, in order. -s replaces the list with the \
            keychains named (none: an empty list). -d system (or common) shows the machine's keychains: the System \
            keychain, which system-mode keychaind keeps for root.
            """
    )

    @Option(name: .customShort("d"), help: ArgumentHelp("Use the specified preference domain (user, system, common, dynamic).", valueName: "domain"))
    var domain: PreferenceDomain = .user

    @Flag(name: .customShort("s"), help: "Set the search list to the keychains named.")
    var set = false

    @Argument(help: ArgumentHelp("With -s: the keychains of the new search list, in order.", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if !set && !keychains.isEmpty { throw ValidationError("Keychains are named only with -s, to set the search list.") }
        if set && domain != .user { throw ValidationError("Only the user domain's search list can be set here.") }
    }

    func run() async throws {
        let function = set ? "SecKeychainSetSearchList" : "SecKeychainCopySearchList"
        let (store, all) = try KeychainLines.listing(function: function)
        if set {
            do {
                try store.setSearchList(keychains.map { (name) throws(KeychainError) in try store.keychainName(name) })
            } catch {
                throw ToolFailure(function, error)
            }
            return
        }
        switch domain {
        case .user:
            let list: [String]
            do {
                list = try store.searchList
            } catch {
                throw ToolFailure(function, error)
            }
            KeychainLines.print(list.compactMap { name in all.first { $0.name == name } })
        case .system, .common:
            KeychainLines.print(all.filter { $0.name == "System" })
        case .dynamic:
            break
        }
    }
}

/// `security default-keychain`: shows or sets the keychain new items go to.
struct DefaultKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "default-keychain",
        abstract: "Display or set the default keychain.",
        discussion: "New items go to the default keychain when an add names none."
    )

    @Option(name: .customShort("d"), help: ArgumentHelp("Use the specified preference domain (user only here).", valueName: "domain"))
    var domain: PreferenceDomain = .user

    @Option(name: .customShort("s"), help: ArgumentHelp("Make this keychain the default.", valueName: "keychain"))
    var keychain: String?

    func run() async throws {
        let function = keychain == nil ? "SecKeychainCopyDefault" : "SecKeychainSetDefault"
        let (store, all) = try KeychainLines.listing(function: function)
        if let keychain {
            do {
                try store.setDefaultKeychain(store.keychainName(keychain))
            } catch {
                throw ToolFailure(function, error)
            }
            return
        }
        KeychainLines.print(all.filter(\.isDefault))
    }
}

/// `security login-keychain`: shows the login keychain.
struct LoginKeychain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login-keychain",
        abstract: "Display the login keychain.",
        discussion: "The login keychain is the one unlocked at login (see \"Unlocking at login\" in the README); it is always the keychain in the keychain folder itself, so -s can name only it."
    )

    @Option(name: .customShort("d"), help: ArgumentHelp("Use the specified preference domain (user only here).", valueName: "domain"))
    var domain: PreferenceDomain = .user

    @Option(name: .customShort("s"), help: ArgumentHelp("Set the login keychain (only `login` is accepted).", valueName: "keychain"))
    var keychain: String?

    func run() async throws {
        let function = keychain == nil ? "SecKeychainCopyLogin" : "SecKeychainSetLogin"
        let (store, all) = try KeychainLines.listing(function: function)
        if let keychain {
            let name: String
            do {
                name = try store.keychainName(keychain)
            } catch {
                throw ToolFailure(function, error)
            }
            guard name == "login" else {
                throw ToolFailure(
                    function, status: .unimplemented,
                    detail:
                        "The login keychain is always the keychain in the keychain folder itself; another cannot take its place. Make \(name) the default with `security default-keychain -s \(name)` instead."
                )
            }
            return
        }
        KeychainLines.print(all.filter { $0.name == "login" })
    }
}
