import Foundation
import KeychainKit
import Logging

/// The keychain the tool works on: the administrator's store (every access group, new items in one default group),
/// which is keychaind's when it runs and the keychain opened in this process otherwise — KeychainKit decides.
struct ToolContext {
    let store: KeychainStore

    /// The path printed on each item's `keychain:` line.
    var keychainPath: String { store.databasePath }

    /// The admin tool's store, new items going to `accessGroup` when given, else to the first group of the
    /// caller's entitlements (the executable's name without `KEYCHAIN_ENTITLEMENTS`). With `createIfMissing`
    /// false (read-only verbs), a keychain that does not exist is not created.
    static func keychain(accessGroup: String? = nil, createIfMissing: Bool = true, function: String = "SecKeychainOpen") throws(ToolFailure) -> KeychainStore {
        do {
            return try KeychainStore.administrator(defaultAccessGroup: accessGroup, createIfMissing: createIfMissing)
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// Opens the keychain for the item verbs (see ``keychain(accessGroup:createIfMissing:function:)``).
    static func open(accessGroup: String?, createIfMissing: Bool = true) throws(ToolFailure) -> ToolContext {
        ToolContext(store: try keychain(accessGroup: accessGroup, createIfMissing: createIfMissing))
    }

    // MARK: Item calls

    /// The items `query` matches (an empty result is `itemNotFound`).
    func find(_ query: KeychainQuery) throws(KeychainError) -> [KeychainItem] {
        try store.items(matching: query)
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
        try store.updateItems(matching: query, attributes: attributes, data: data, accessControl: accessControl)
    }

    func delete(_ query: KeychainQuery) throws(KeychainError) {
        try store.deleteItems(matching: query)
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
