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
    static func keychain(
        accessGroup: String? = nil, createIfMissing: Bool = true, function: String = "SecKeychainOpen",
        named: String? = nil
    ) throws(ToolFailure) -> KeychainStore {
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
        } catch  where error.code == .itemNotFound {
            return []
        } catch {
            throw ToolFailure(function, error)
        }
    }

    func add(_ query: KeychainQuery, data: Data?, accessControl: KeychainAccessControl? = nil) throws(KeychainError) {
        try store.addItem(query.itemClass, attributes: query.attributes, data: data, accessControl: accessControl)
    }

    func update(
        _ query: KeychainQuery, attributes: [String: KeychainItem.Value], data: Data?,
        accessControl: KeychainAccessControl? = nil
    ) throws(KeychainError) {
        try store.updateItems(matching: searching(query), attributes: attributes, data: data, accessControl: accessControl)
    }

    func delete(_ query: KeychainQuery) throws(KeychainError) {
        try store.deleteItems(matching: searching(query))
    }
}

/// A failed keychain call, reported as macOS does: `security: <Function>: <message>` on stderr, and the low
/// byte of the `OSStatus` as the exit status. When Apple's message is a generic one (``genericStatuses``) and
/// the failure has a cause, the cause comes first instead (see ``text``).
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

    /// The statuses whose Apple text says nothing a person can act on ("No keychain is available. You may need to
    /// restart your computer.", "I/O error."): a failure with one of them and a ``detail`` leads with the detail.
    static let genericStatuses: Set<KeychainStatus> = [
        .notAvailable, .io, .param, .internal, .internalError, .internalComponent,
        .unimplemented, .wrongSecVersion, .badRequest,
    ]

    /// Whether the first line is the cause (``detail``) rather than the status's Apple text: for the generic
    /// statuses. The others keep macOS's exact line first ("The specified item could not be found in the
    /// keychain.", "User interaction is not allowed."), which scripts match, with the detail after it.
    var leadsWithCause: Bool { summary == nil && detail != nil && Self.genericStatuses.contains(status) }

    /// The text written to stderr. For a generic status with a cause: what happened, what to do, then the
    /// function and `OSStatus` (whose Apple text `security error N` prints); otherwise macOS's
    /// `security: <function>: <message>`, then the explanation when there is one.
    var text: String {
        if leadsWithCause, let detail {
            let (what, next) = Self.splitFirstSentence(detail)
            var out = "security: \(what)\n"
            for line in next?.split(separator: "\n") ?? [] { out += "security: \(line)\n" }
            out += "security: \(function): OSStatus \(status.rawValue) (see `security error \(status.rawValue)`)\n"
            return out
        }
        var out = "security: \(function): \(summary ?? status.message)\n"
        for line in detail?.split(separator: "\n") ?? [] { out += "security: \(line)\n" }
        return out
    }

    /// `text` cut after its first line, when it has several, else after its first sentence (a period outside
    /// parentheses, followed by a space and a capital letter or a backquote), so that what happened and what to do
    /// go on lines of their own; the whole text when it is one sentence.
    static func splitFirstSentence(_ text: String) -> (first: String, rest: String?) {
        if let newline = text.firstIndex(of: "\n") {
            let rest = text[text.index(after: newline)...].trimmingCharacters(in: .whitespacesAndNewlines)
            return (String(text[..<newline]), rest.isEmpty ? nil : rest)
        }
        var depth = 0
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            switch character {
            case "(": depth += 1
            case ")": depth = max(0, depth - 1)
            case "." where depth == 0 && next < text.endIndex && text[next] == " ":
                let start = text.index(after: next)
                if start < text.endIndex, text[start].isUppercase || text[start] == "`" {
                    let rest = text[start...].trimmingCharacters(in: .whitespacesAndNewlines)
                    return (String(text[...index]), rest.isEmpty ? nil : rest)
                }
            default: break
            }
            index = next
        }
        return (text, nil)
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
