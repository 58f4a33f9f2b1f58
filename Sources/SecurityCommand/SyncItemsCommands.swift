import ArgumentParser
import Foundation
import KeychainKit

/// `security sync items`: makes existing password items synchronizable, or local again.
struct SyncItems: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "items",
        abstract: "Make existing password items sync to your other machines, or stay on this one.",
        discussion: """
            `security sync items add generic-password -s SERVICE` makes the matching local items synchronizable \
            (kSecAttrSynchronizable); `remove` makes synchronizable ones local again, which deletes them on the \
            other machines at their next round. Items are chosen with the flags of find-generic-password and \
            find-internet-password (every match, not only the first), or --all. New items: `security \
            add-generic-password --sync`, or `security sync default on`.
            """,
        subcommands: [SyncItemsAdd.self, SyncItemsRemove.self]
    )
}

/// `security sync items add`.
struct SyncItemsAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make matching local password items synchronizable.",
        discussion: """
            Prints "synchronizable: N" for the items changed. Items whose accessibility is ThisDeviceOnly, or whose \
            access control needs your presence, cannot leave this machine: they are left as they are and counted \
            on a "left on this machine:" line. No matching local item exits 44 (errSecItemNotFound).
            """,
        subcommands: [SyncItemsChange<GenericPasswordKind, MakeSynchronizable>.self, SyncItemsChange<InternetPasswordKind, MakeSynchronizable>.self]
    )
}

/// `security sync items remove`.
struct SyncItemsRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Make matching synchronizable password items local to this machine.",
        discussion: """
            Prints "local: N". The other machines of the account delete their copies at their next round; this \
            machine keeps the items. No matching synchronizable item exits 44 (errSecItemNotFound).
            """,
        subcommands: [SyncItemsChange<GenericPasswordKind, MakeLocal>.self, SyncItemsChange<InternetPasswordKind, MakeLocal>.self]
    )
}

/// Which way `security sync items` changes items.
protocol SyncItemsDirection {
    /// Whether the items become synchronizable.
    static var synchronizable: Bool { get }
}

/// `security sync items add`: local items become synchronizable.
enum MakeSynchronizable: SyncItemsDirection {
    static var synchronizable: Bool { true }
}

/// `security sync items remove`: synchronizable items become local.
enum MakeLocal: SyncItemsDirection {
    static var synchronizable: Bool { false }
}

/// `security sync items add|remove generic-password|internet-password`: changes every match.
struct SyncItemsChange<Kind: PasswordKind, Direction: SyncItemsDirection>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "\(Kind.name)-password",
            abstract: "\(Direction.synchronizable ? "Sync" : "Stop syncing") the \(Kind.name) passwords that match.",
            discussion: "Takes find-\(Kind.name)-password's flags; every match is changed. --all changes every \(Kind.name) password instead."
        )
    }

    static var function: String { "sync items \(Direction.synchronizable ? "add" : "remove")" }

    @OptionGroup var match: Kind.Match

    @Flag(help: "Every \(Kind.name) password (in --access-group when given), instead of those the flags match.")
    var all = false

    @OptionGroup var keychain: KeychainOptions

    func validate() throws {
        if all && !match.isEmpty { throw ValidationError("Give the flags that choose the items, or --all: not both.") }
        if !all && match.isEmpty {
            throw ValidationError("Choose the items with find-\(Kind.name)-password's flags (\(Kind.exampleFlags), …), or give --all.")
        }
    }

    func run() async throws {
        try RawArguments.requireCarried(match.byteValues, function: Self.function)
        let context = try ToolContext.open(accessGroup: keychain.accessGroup, createIfMissing: false, keychains: keychain.keychains)
        var query = KeychainQuery(Kind.Match.itemClass)
        query.attributes = all ? [:] : match.attributes(forAdding: false)
        if let group = keychain.accessGroup { query.attributes["agrp"] = .string(group) }
        query.synchronizable = Direction.synchronizable ? .local : .synchronizable
        query.limit = .all
        let items: [KeychainItem]
        do {
            items = try context.find(query)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        var changed = 0
        var stayed = 0
        var clashes = 0
        for item in items {
            if Direction.synchronizable && !Self.mayLeaveThisMachine(item) {
                stayed += 1
                continue
            }
            var one = KeychainQuery(Kind.Match.itemClass)
            one.persistentReference = item.persistentReference
            do {
                try context.update(one, attributes: [KeychainQuery.synchronizableCode: .int(Direction.synchronizable ? 1 : 0)], data: nil)
                changed += 1
            } catch  where error.code == .duplicateItem {
                // A twin on the other side (same account and service, synchronizable or not) keeps its place.
                clashes += 1
            } catch {
                throw SyncToolCommand.failure(Self.function, error)
            }
        }
        var lines = ["\(Direction.synchronizable ? "synchronizable" : "local"): \(changed)"]
        if stayed > 0 {
            lines.append("left on this machine: \(stayed) (ThisDeviceOnly accessibility, or an access control that needs your presence)")
        }
        if clashes > 0 {
            lines.append(
                "unchanged: \(clashes) (a \(Direction.synchronizable ? "synchronizable" : "local") item with the same attributes exists: delete one of the two first)")
        }
        Output.standardOutput(lines.map { $0 + "\n" }.joined())
    }

    /// Whether `item` may sync: its accessibility lets it leave the machine and no access control asks for the
    /// user's presence (Apple refuses those on synchronizable items).
    static func mayLeaveThisMachine(_ item: KeychainItem) -> Bool {
        let accessibility = item.attributes["pdmn"]?.stringValue.flatMap(KeychainAccessibility.init(rawValue:))
        switch accessibility {
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: return false
        default: break
        }
        return item.accessControl?.isProtected != true
    }
}

/// `security sync default`: whether the items `security` adds sync unless told.
struct SyncDefault: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "default",
        abstract: "Show or set whether new items added with `security` sync by default.",
        discussion: """
            `on`: add-generic-password and add-internet-password make synchronizable items unless given --no-sync; \
            `off` (the default): local items unless given --sync. Without an argument, prints the setting as \
            "new items sync: on" or "off". Programs are not affected: an item a program adds without \
            kSecAttrSynchronizable stays on this machine, as on Apple's platforms. Through keychaind the setting \
            is changed by the daemon, after the keychain's passcode when one is set.
            """
    )

    static let function = "sync default"

    /// The setting's two values.
    enum Value: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    @Argument(help: ArgumentHelp("on or off; none: print the setting.", valueName: "on|off"))
    var value: Value?

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        do {
            var settings = try store.settings()
            if let value {
                // Without settings of its own the keychain keeps keychaind's idle lock default.
                var changed = settings ?? KeychainStore.Settings(idleTimeout: KeychainStore.Settings.defaultIdleTimeout)
                changed.syncNewItems = value == .on
                if changed != settings { try store.setSettings(changed) }
                settings = changed
            }
            Output.standardOutput("new items sync: \(settings?.syncNewItems == true ? "on" : "off")\n")
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
    }
}
