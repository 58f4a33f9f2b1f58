import Foundation
import KeychainClient
import KeychainCore
import Logging

/// The keychain the tool works on and the caller it acts as: the user's own admin tool, which may use every
/// access group and creates new items in one default group. The keychain is what ``KeychainConnector`` chooses:
/// keychaind when it runs, else the store opened in this process (once per process, so an unlock lasts for the
/// whole command).
struct ToolContext {
    let connection: any KeychainConnection
    /// The path printed on each item's `keychain:` line.
    let keychainPath: String

    /// The admin tool's keychain, new items going to `accessGroup` when given, else to the first group of the
    /// caller's entitlements (the executable's name without `KEYCHAIN_ENTITLEMENTS`). With `createIfMissing`
    /// false (read-only verbs), a keychain that does not exist is not created.
    static func keychain(accessGroup: String? = nil, createIfMissing: Bool = true, function: String = "SecKeychainOpen") throws(ToolFailure) -> any KeychainConnection {
        do throws(KeychainError) {
            var group = accessGroup ?? AccessPolicy.currentExecutableName()
            if accessGroup == nil, let first = try AccessPolicy.fromEnvironment().groups.first { group = first }
            return try KeychainConnector.connection(for: .administrator(defaultGroup: group), createIfMissing: createIfMissing, logger: toolLogger)
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// The tool's stderr is macOS's exact text: only errors are logged there.
    static let toolLogger: Logger = {
        var logger = Logger(label: "security")
        logger.logLevel = .error
        return logger
    }()

    /// Opens the keychain for the item verbs (see ``keychain(accessGroup:createIfMissing:function:)``).
    static func open(accessGroup: String?, createIfMissing: Bool = true) throws(ToolFailure) -> ToolContext {
        let connection = try keychain(accessGroup: accessGroup, createIfMissing: createIfMissing)
        // Items print the keychain's database path, as keychaind or the engine reports its folder.
        var path = KeychainLocation.fromEnvironment().databasePath
        if let status = try? connection.status() { path = KeychainLocation(home: status.home).databasePath }
        return ToolContext(connection: connection, keychainPath: path)
    }

    // MARK: Item calls

    /// The items `query` matches (an empty result is `itemNotFound`, as from the engine).
    func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        var query = query
        query.returns.attributes = true
        return try connection.find(query)
    }

    /// Every item of a class the tool may see, with attributes and data; empty when there is none.
    func all(_ itemClass: ItemClass, function: String = "SecKeychainSearchCopyNext") throws(ToolFailure) -> [FoundItem] {
        var query = ItemQuery(itemClass: itemClass)
        query.limit = .all
        query.returns.data = true
        query.returns.attributes = true
        do {
            return try find(query)
        } catch where error.code == .itemNotFound {
            return []
        } catch {
            throw ToolFailure(function, error)
        }
    }

    func add(_ query: ItemQuery) throws(KeychainError) {
        _ = try connection.add(query)
    }

    /// Adds an item given as a SecItem dictionary (the engine derives what it derives, a certificate's
    /// attributes for one).
    func add(_ item: [String: PlistValue]) throws(KeychainError) {
        _ = try connection.secItemAdd(item)
    }

    func update(_ query: ItemQuery, attributes: [String: AttributeValue], data: Data?) throws(KeychainError) {
        try connection.update(query, with: ItemChanges(attributes: attributes, data: data))
    }

    func delete(_ query: ItemQuery) throws(KeychainError) {
        try connection.delete(query)
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
