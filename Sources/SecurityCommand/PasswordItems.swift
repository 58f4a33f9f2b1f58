import Foundation
import KeychainKit

/// The operations every password verb shares, with macOS's output and error messages.
enum PasswordItems {
    /// macOS's function name for a search that finds nothing.
    static let searchFunction = "SecKeychainSearchCopyNext"
    /// macOS's function name for failed updates (`-U`).
    static let modifyFunction = "SecKeychainItemModifyContent"
    /// macOS's function name for failed deletions.
    static let deleteFunction = "SecKeychainItemDelete"
    /// macOS's function name for a password that could not be read.
    static let copyContentFunction = "SecKeychainItemCopyContent"
    /// The statuses of a read that needed the user's presence and did not get it.
    static let presenceStatuses: Set<KeychainStatus> = [.interactionNotAllowed, .userCanceled, .authFailed]

    /// What a search matches on, macOS's rule: when every attribute of the class's own primary key is given
    /// (account and service; for internet passwords also domain, server, protocol, authentication type, port
    /// and path), only those, so `-U` can change the others; otherwise everything given.
    static func narrowedToPrimaryKey(_ given: [String: KeychainItem.Value], _ itemClass: KeychainItem.Class) -> [String: KeychainItem.Value] {
        let common: Set = ["agrp", "sync", "vwht", "tkid", "ggrp"]
        let key = itemClass.primaryKeyAttributes.filter { !common.contains($0) }
        guard key.allSatisfy({ given[$0] != nil }) else { return given }
        return given.filter { key.contains($0.key) }
    }

    /// A search for the first item of `itemClass` matching `attributes`, in `accessGroup` when given and in
    /// every group otherwise, local and synchronizable alike.
    static func searchQuery(
        _ itemClass: KeychainItem.Class, _ attributes: [String: KeychainItem.Value], accessGroup: String?,
        data: Bool
    ) -> KeychainQuery {
        var query = KeychainQuery(itemClass)
        query.attributes = attributes
        if let accessGroup { query.attributes["agrp"] = .string(accessGroup) }
        query.synchronizable = .any
        query.limit = .one
        query.returnsData = data
        return query
    }

    /// The first matching item, or a `SecKeychainSearchCopyNext` failure.
    static func findFirst(
        _ context: ToolContext, _ itemClass: KeychainItem.Class, _ attributes: [String: KeychainItem.Value],
        accessGroup: String?, data: Bool
    ) throws(ToolFailure) -> KeychainItem {
        let query = searchQuery(itemClass, attributes, accessGroup: accessGroup, data: data)
        let items: [KeychainItem]
        do {
            items = try context.find(query)
        } catch {
            throw ToolFailure(searchFunction, error)
        }
        guard let item = items.first else { throw ToolFailure(searchFunction, status: .itemNotFound) }
        return item
    }

    /// `find-…-password`: the item's description on stdout; with `-g` the password on stderr; with `-w`
    /// only the password on stdout.
    static func find(
        _ context: ToolContext, _ itemClass: KeychainItem.Class, _ attributes: [String: KeychainItem.Value],
        accessGroup: String?, showPassword: Bool, passwordOnly: Bool
    ) throws(ToolFailure) {
        let item: KeychainItem
        do {
            item = try findFirst(context, itemClass, attributes, accessGroup: accessGroup, data: showPassword || passwordOnly)
        } catch  where (showPassword || passwordOnly) && presenceStatuses.contains(error.status) {
            // An item with an access control: its attributes are readable without the user's presence, its
            // password is not. Show the item, then why its password is not shown (macOS's content-copy failure).
            let described = try findFirst(context, itemClass, attributes, accessGroup: accessGroup, data: false)
            guard described.accessControl?.isProtected == true else { throw error }
            if !passwordOnly { Output.standardOutput(ItemPrinter.describe(described, keychainPath: context.keychainPath)) }
            throw ToolFailure(copyContentFunction, status: error.status, detail: error.detail)
        }
        if passwordOnly {
            Output.standardOutput(ItemPrinter.passwordOnly(item.data) + Data("\n".utf8))
            return
        }
        Output.standardOutput(ItemPrinter.describe(item, keychainPath: context.keychainPath))
        if showPassword {
            Output.standardError(ItemPrinter.passwordLine(item.data) + "\n")
        }
    }

    /// `delete-…-password`: finds the first match, prints it as `find` does, deletes exactly that item.
    static func delete(
        _ context: ToolContext, _ itemClass: KeychainItem.Class, _ attributes: [String: KeychainItem.Value],
        accessGroup: String?
    ) throws(ToolFailure) {
        let item = try findFirst(context, itemClass, attributes, accessGroup: accessGroup, data: false)
        Output.standardOutput(ItemPrinter.describe(item, keychainPath: context.keychainPath))
        var query = KeychainQuery(itemClass)
        query.persistentReference = item.persistentReference
        do {
            try context.delete(query)
        } catch {
            throw ToolFailure(deleteFunction, error)
        }
        Output.standardError("password has been deleted.\n")
    }

    /// `add-…-password`: adds the item; with `update`, first updates the first item matching
    /// `searchAttributes` (its password and every given attribute) and adds only when there is none.
    static func add(
        _ context: ToolContext, _ itemClass: KeychainItem.Class, attributes: [String: KeychainItem.Value],
        searchAttributes: [String: KeychainItem.Value], secret: Data, accessGroup: String?,
        update: Bool, addFunction: String, accessControl: KeychainAccessControl? = nil, sync: Bool? = nil
    ) throws(ToolFailure) {
        var attributes = attributes
        if let sync { attributes[KeychainQuery.synchronizableCode] = .int(sync ? 1 : 0) }
        if update {
            let existing: KeychainItem?
            do {
                existing = try findFirst(context, itemClass, searchAttributes, accessGroup: accessGroup, data: false)
            } catch  where error.status == .itemNotFound {
                existing = nil
            } catch {
                throw ToolFailure(modifyFunction, status: error.status, detail: error.detail)
            }
            if let existing {
                var query = KeychainQuery(itemClass)
                query.persistentReference = existing.persistentReference
                do {
                    try context.update(query, attributes: attributes, data: secret, accessControl: accessControl)
                    return
                } catch {
                    throw ToolFailure(modifyFunction, error)
                }
            }
        }
        var query = KeychainQuery(itemClass)
        query.attributes = attributes
        if let accessGroup { query.attributes["agrp"] = .string(accessGroup) }
        if sync == nil {
            // A new item without --sync or --no-sync follows the keychain's setting.
            do {
                if try context.store.settings()?.syncNewItems == true { query.attributes[KeychainQuery.synchronizableCode] = .int(1) }
            } catch {
                throw ToolFailure(addFunction, error)
            }
        }
        do {
            try context.add(query, data: secret, accessControl: accessControl)
        } catch {
            throw ToolFailure(addFunction, error)
        }
    }

    /// `dump-keychain`: every generic and internet password, in every group (or `accessGroup`), local and
    /// synchronizable; with `showData` each item's secret too. Damaged password items (every group) are listed on
    /// stderr afterwards and fail the command with errSecDecode.
    static func dump(_ context: ToolContext, accessGroup: String?, showData: Bool) throws(ToolFailure) {
        var out = ""
        var unreadable = false
        var withheld: (count: Int, error: KeychainError)?
        for itemClass in [KeychainItem.Class.genericPassword, .internetPassword] {
            var query = KeychainQuery(itemClass)
            if let accessGroup { query.attributes["agrp"] = .string(accessGroup) }
            query.synchronizable = .any
            query.limit = .all
            query.returnsData = showData
            let items: [KeychainItem]
            do {
                items = try context.find(query)
            } catch  where showData && presenceStatuses.contains(error.status) {
                // An item with an access control whose password needs the user's presence, not given: every item
                // is listed, those without their password, and the command fails after the listing.
                let (listed, count) = try listWithoutProtectedData(context, query)
                items = listed
                withheld = (count + (withheld?.count ?? 0), error)
            } catch  where error.code == .itemNotFound {
                items = []
            } catch  where error.code == .corruptData {
                // Every candidate is damaged: reported below, after the intact items.
                items = []
                unreadable = true
            } catch {
                throw ToolFailure(searchFunction, error)
            }
            for item in items {
                out += ItemPrinter.describe(item, keychainPath: context.keychainPath, showData: showData, showGroup: true)
            }
        }
        Output.standardOutput(out)
        // A damaged password item is never left out in silence: listed on stderr, and the command fails.
        let damaged = ((try? context.store.verify())?.damagedItems ?? []).filter { [.genericPassword, .internetPassword].contains($0.itemClass) }
        if !damaged.isEmpty || unreadable {
            Output.standardError(damaged.map(VerifyKeychain.describe).joined())
            throw VerifyKeychain.damageFailure(damaged.isEmpty ? nil : damaged.count, function: searchFunction)
        }
        if let withheld {
            let items = withheld.count == 1 ? "1 item's password" : "\(withheld.count) items' passwords"
            throw ToolFailure(
                copyContentFunction, status: withheld.error.status,
                detail: "\(items) (with an access control) not shown: \(withheld.error.message)")
        }
    }

    /// Every item `query` matches, with the passwords of those that need no presence; and how many do need it.
    private static func listWithoutProtectedData(_ context: ToolContext, _ query: KeychainQuery) throws(ToolFailure) -> ([KeychainItem], Int) {
        var attributesOnly = query
        attributesOnly.returnsData = false
        var readable = query
        readable.authentication = .skipProtected
        do {
            let all = try context.find(attributesOnly)
            let secrets: [KeychainItem]
            do {
                secrets = try context.find(readable)
            } catch  where error.code == .itemNotFound {
                secrets = []
            }
            let byReference = Dictionary(secrets.map { ($0.persistentReference, $0) }, uniquingKeysWith: { first, _ in first })
            return (all.map { byReference[$0.persistentReference] ?? $0 }, all.count - secrets.count)
        } catch {
            throw ToolFailure(searchFunction, error)
        }
    }
}
