import Foundation
import KeychainCore
import Logging

/// The keychain the tool works on and the caller it acts as: the user's own admin tool, which may use
/// every access group and creates new items in one default group.
struct ToolContext {
    /// Where the items are: keychaind when it runs (as SecItem calls choose), else the store opened here.
    enum Store {
        case engine(KeychainEngine)
        case daemon(DaemonClient, path: String)
    }

    let store: Store
    let caller: AccessPolicy

    /// The store opened in this process, when the tool is not going through keychaind.
    var engine: KeychainEngine? {
        if case .engine(let engine) = store { return engine }
        return nil
    }

    /// Opens the keychain named by the environment (`KEYCHAIN_HOME`, …). New items go to `accessGroup` when
    /// given, else to the first group of the caller's entitlements (the executable's name without
    /// `KEYCHAIN_ENTITLEMENTS`).
    static func open(accessGroup: String?) throws(ToolFailure) -> ToolContext {
        let group: String
        if let accessGroup {
            group = accessGroup
        } else {
            do {
                group = try AccessPolicy.fromEnvironment().groups.first ?? AccessPolicy.currentExecutableName()
            } catch {
                throw ToolFailure("SecKeychainOpen", error)
            }
        }
        if let daemon = ToolDaemon.fromEnvironment() {
            // Items print the daemon's keychain path, which its status gives.
            var path = KeychainLocation.fromEnvironment().databasePath
            if case .dictionary(let status)? = try? daemon.call(.status, [:]), case .string(let home)? = status["home"] {
                path = KeychainLocation(home: home).databasePath
            }
            return ToolContext(store: .daemon(daemon, path: path), caller: .unrestricted(defaultGroup: group))
        }
        return ToolContext(store: .engine(try sharedEngine()), caller: .unrestricted(defaultGroup: group))
    }

    private static let engineLock = NSLock()
    nonisolated(unsafe) private static var engine: KeychainEngine?

    /// The keychain this process works on, opened once, so that an unlock lasts for the whole command.
    static func sharedEngine() throws(ToolFailure) -> KeychainEngine {
        engineLock.lock()
        defer { engineLock.unlock() }
        if let engine { return engine }
        do {
            // The tool's stderr is macOS's exact text: only errors are logged there.
            var logger = Logger(label: "security")
            logger.logLevel = .error
            let opened = try KeychainEngine(location: .fromEnvironment(), logger: logger)
            engine = opened
            return opened
        } catch {
            throw ToolFailure("SecKeychainOpen", error)
        }
    }

    /// The path printed on each item's `keychain:` line.
    var keychainPath: String {
        switch store {
        case .engine(let engine): engine.location.databasePath
        case .daemon(_, let path): path
        }
    }

    // MARK: Item calls, in-process or through keychaind

    /// The items `query` matches (an empty result is `itemNotFound`, as from the engine).
    func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        switch store {
        case .engine(let engine):
            return try engine.find(query, caller: caller)
        case .daemon(let client, _):
            var request = ToolContext.dictionary(query)
            request["r_Attributes"] = .bool(true)
            request["r_PersistentRef"] = .bool(true)
            request["m_Limit"] = query.limit == .one ? .string("m_LimitOne") : .string("m_LimitAll")
            let result = try client.call(.copyMatching, daemonArguments(request))
            var rows: [PlistValue] = []
            switch result {
            case .array(let list)?: rows = list
            case .dictionary?: rows = [result].compactMap { $0 }
            default: break
            }
            return rows.compactMap { ToolContext.foundItem($0, query.itemClass) }
        }
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
        switch store {
        case .engine(let engine):
            _ = try engine.add(query, caller: caller)
        case .daemon(let client, _):
            _ = try client.call(.add, daemonArguments(ToolContext.dictionary(query)))
        }
    }

    /// Adds an item given as a SecItem dictionary (the engine derives what it derives, a certificate's
    /// attributes for one).
    func add(_ item: [String: PlistValue]) throws(KeychainError) {
        switch store {
        case .engine(let engine):
            _ = try engine.secItemAdd(item, caller: caller)
        case .daemon(let client, _):
            _ = try client.call(.add, daemonArguments(item))
        }
    }

    func update(_ query: ItemQuery, attributes: [String: AttributeValue], data: Data?) throws(KeychainError) {
        switch store {
        case .engine(let engine):
            try engine.update(query, attributes: attributes, sync: nil, data: data, caller: caller)
        case .daemon(let client, _):
            var changes = attributes.mapValues(\.plist)
            if let data { changes["v_Data"] = .data(data) }
            var arguments = daemonArguments(ToolContext.dictionary(query))
            arguments["u"] = .dictionary(changes)
            _ = try client.call(.update, arguments)
        }
    }

    func delete(_ query: ItemQuery) throws(KeychainError) {
        switch store {
        case .engine(let engine):
            _ = try engine.delete(query, caller: caller)
        case .daemon(let client, _):
            _ = try client.call(.delete, daemonArguments(ToolContext.dictionary(query)))
        }
    }

    /// The request for keychaind: the query, and the tool's groups as its claim (every group, new items in
    /// the default one).
    private func daemonArguments(_ query: [String: PlistValue]) -> [String: PlistValue] {
        let claim = (caller.unrestricted ? caller.groups + ["*"] : caller.groups).map(PlistValue.string)
        return ["q": .dictionary(query), "claim": .array(claim)]
    }

    /// A parsed query as the SecItem dictionary it came from.
    static func dictionary(_ query: ItemQuery) -> [String: PlistValue] {
        var d: [String: PlistValue] = ["class": .string(query.itemClass.rawValue)]
        for (code, value) in query.attributes { d[code] = value.plist }
        switch query.sync {
        case .local: break
        case .synchronizable: d["sync"] = .bool(true)
        case .any: d["sync"] = .string("syna")
        }
        if let data = query.valueData { d["v_Data"] = .data(data) }
        if let reference = query.persistentRef { d["v_PersistentRef"] = .data(reference.data) }
        if query.returns.data { d["r_Data"] = .bool(true) }
        return d
    }

    /// An item from keychaind's attribute dictionary, typed by the class's schema.
    static func foundItem(_ value: PlistValue, _ itemClass: ItemClass) -> FoundItem? {
        guard case .dictionary(let d) = value, case .data(let ref)? = d["v_PersistentRef"],
              let reference = PersistentReference(ref) else { return nil }
        var attributes: [String: AttributeValue] = [:]
        for descriptor in itemClass.attributes {
            guard let raw = d[descriptor.code], let typed = try? QueryParser.coerce(raw, to: descriptor) else { continue }
            attributes[descriptor.code] = typed
        }
        var data: Data?
        if case .data(let secret)? = d["v_Data"] { data = secret }
        return FoundItem(itemClass: reference.itemClass, uuid: reference.uuid, attributes: attributes, data: data)
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
    /// The keychaind client the failing call went through, when it went through one: a retry after asking
    /// for the passcode unlocks through this client's connection (which keychaind then trusts), not in-process.
    var daemon: DaemonClient?
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
