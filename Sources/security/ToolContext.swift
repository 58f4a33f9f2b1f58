import Foundation
import KeychainKit
import Logging

/// The keychain the tool works on: the administrator's store (every access group, new items in one default group),
/// which is keychaind's when it runs and the keychain opened in this process otherwise — KeychainKit decides.
struct ToolContext {
    let store: KeychainStore
    /// The keychains searches look in, in order, when the command named several (`security find-… kc1 kc2`).
    var searchList: [String]? = nil

    /// The path printed on each item's `keychain:` line.
    var keychainPath: String { store.databasePath }

    /// The admin tool's store, new items going to `accessGroup` when given, else to the first group of the
    /// caller's entitlements (the executable's name without `KEYCHAIN_ENTITLEMENTS`). With `createIfMissing`
    /// false (read-only verbs), a keychain that does not exist is not created.
    /// With `named`, the store acting on that keychain (a name such as `work`, or a path ending in one).
    static func keychain(accessGroup: String? = nil, createIfMissing: Bool = true, function: String = "SecKeychainOpen",
                         named: String? = nil) throws(ToolFailure) -> KeychainStore {
        do {
            let store = try KeychainStore.administrator(defaultAccessGroup: accessGroup, createIfMissing: createIfMissing)
            return try named.map { (name) throws(KeychainError) in try store.keychain(named: name) } ?? store
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// Opens the keychain for the item verbs (see ``keychain(accessGroup:createIfMissing:function:named:)``): the
    /// keychain named when one is, the search list (and default keychain for adds) when none is, and with several,
    /// those in order for searches and the first for adds.
    static func open(accessGroup: String?, createIfMissing: Bool = true, keychains: [String] = []) throws(ToolFailure) -> ToolContext {
        var context = ToolContext(store: try keychain(accessGroup: accessGroup, createIfMissing: createIfMissing, named: keychains.first))
        if keychains.count > 1 { context.searchList = keychains }
        return context
    }

    // MARK: Item calls

    /// The items `query` matches (an empty result is `itemNotFound`).
    func find(_ query: KeychainQuery) throws(KeychainError) -> [KeychainItem] {
        try store.items(matching: searching(query))
    }

    /// The query with the command's keychains, when it named several.
    private func searching(_ query: KeychainQuery) throws(KeychainError) -> KeychainQuery {
        guard let searchList else { return query }
        var query = query
        query.searchList = try searchList.map { (name) throws(KeychainError) in try store.keychainName(name) }
        return query
    }

    /// Every item of a class the tool may see, with attributes and data; empty when there is none.
    func all(_ itemClass: KeychainItem.Class, function: String = "SecKeychainSearchCopyNext") throws(ToolFailure) -> [KeychainItem] {
        var query = KeychainQuery(itemClass)
        query.limit = .all
        query.returnsData = true
        do {
            return try find(query)
        } catch where error.code == .itemNotFound {
            return []
        } catch {
            throw ToolFailure(function, error)
        }
    }

    func add(_ query: KeychainQuery, data: Data?, accessControl: KeychainAccessControl? = nil) throws(KeychainError) {
        try store.addItem(query.itemClass, attributes: query.attributes, data: data, accessControl: accessControl)
    }

    func update(_ query: KeychainQuery, attributes: [String: KeychainItem.Value], data: Data?,
                accessControl: KeychainAccessControl? = nil) throws(KeychainError) {
        try store.updateItems(matching: searching(query), attributes: attributes, data: data, accessControl: accessControl)
    }

    func delete(_ query: KeychainQuery) throws(KeychainError) {
        try store.deleteItems(matching: searching(query))
    }
}

/// A failed keychain call, reported as macOS does: `security: <Function>: <message>` on stderr, and the low
/// byte of the `OSStatus` as the exit status.
struct ToolFailure: Error {
    /// The Apple function macOS names in the message (`SecKeychainSearchCopyNext`, …).
    var function: String
    var status: KeychainStatus
    /// Our explanation of what to do next, printed on a second line for failures macOS has no fixed text for.
    var detail: String?
    /// Whether the keychain itself reported the failure (rather than a prompt or the command line).
    var fromKeychain = false
    /// The first line's text when it is not the status's message (a bad file name on the command line).
    var summary: String?
    /// The exit status when it is not the status's low byte.
    var exitStatus: Int32?

    init(_ function: String, status: KeychainStatus, detail: String? = nil) {
        self.function = function
        self.status = status
        self.detail = detail
    }

    /// A failure of the command's input rather than of a keychain call (a file that is missing or not
    /// executable): `security: <function>: <message>` and exit status 1, as macOS's tool exits for a bad file.
    static func input(_ function: String, _ message: String) -> ToolFailure {
        var failure = ToolFailure(function, status: .param)
        failure.summary = message
        failure.exitStatus = 1
        return failure
    }

    /// Wraps an engine error. Misses and duplicates print exactly macOS's line; other failures add the
    /// engine's explanation (which never contains a secret or an attribute value).
    init(_ function: String, _ error: KeychainError) {
        let plain: Set<KeychainError.Code> = [.itemNotFound, .duplicateItem]
        self.init(function, status: error.status, detail: plain.contains(error.code) ? nil : error.message)
        fromKeychain = true
    }

    /// The text written to stderr.
    var text: String {
        var out = "security: \(function): \(summary ?? status.message)\n"
        if let detail { out += "security: \(detail)\n" }
        return out
    }

    /// The process exit status: the status's low byte, never 0 for a failure.
    var exitCode: Int32 {
        if let exitStatus { return exitStatus }
        let code = status.exitCode
        return code == 0 ? 1 : code
    }
}

/// Writes to the standard streams without buffering surprises: each call is one `write`.
enum Output {
    static func standardOutput(_ text: String) { standardOutput(Data(text.utf8)) }
    static func standardOutput(_ data: Data) { FileHandle.standardOutput.write(data) }
    static func standardError(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}
