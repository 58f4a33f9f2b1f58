import Foundation
import KeychainClient
import KeychainCore
import Logging

/// A keychain on disk, together with the access groups the calling code acts as.
///
/// Every ``Keychain`` works against a store. Without one it uses ``default``: the keychain folder the
/// environment names (`$KEYCHAIN_HOME`, else `$XDG_DATA_HOME/keychain`, else `~/.local/share/keychain`) and
/// the access groups of the entitlements plist named by `KEYCHAIN_ENTITLEMENTS` (else the executable's
/// name). Give a store explicitly to use another folder or other access groups, as tests and apps without
/// an entitlements plist do:
///
/// ```swift
/// let store = try KeychainStore(directory: "/tmp/my-keychain", accessGroups: ["com.example.shared"])
/// let keychain = Keychain(service: "com.example.app", in: store)
/// ```
///
/// Stores are cheap: every store of one folder shares one open keychain (the files are opened once per
/// process and closed when the last store of the folder is gone). A store is safe to use from any thread.
public struct KeychainStore: Sendable {
    /// The keychain calls go to: keychaind when it serves this keychain, else the engine opened in this process.
    let connection: any KeychainConnection
    /// The folder holding the keychain's files.
    public let directory: String
    /// The access groups the store's callers act as, in order; the first is where new items go unless a
    /// ``Keychain`` names another with ``Keychain/accessGroup(_:)``. `"*"` (last) means every group.
    ///
    /// Through keychaind these are what the store asks for: keychaind grants only the groups the calling
    /// program is registered for (see `security app add`), and refuses the call otherwise.
    public let accessGroups: [String]

    /// Opens (creating when missing) the keychain in `directory`, acting as the access groups of the
    /// environment (`KEYCHAIN_ENTITLEMENTS`, else the executable's name).
    ///
    /// - Throws: `KeychainError` when the folder cannot be created or opened, or the entitlements plist
    ///   cannot be read.
    public init(directory: String) throws(KeychainError) {
        try self.init(directory: directory, accessGroups: [])
    }

    /// Opens (creating when missing) the keychain in `directory`, acting as `accessGroups`.
    ///
    /// When keychaind runs and serves `directory`, calls go through it; otherwise the keychain is opened in
    /// this process.
    ///
    /// - Parameters:
    ///   - directory: The keychain folder; created with mode 0700 when missing.
    ///   - accessGroups: The access groups callers are entitled to, in order: the first is the default for new
    ///     items; `"*"` grants every group. Empty means "read them from the environment", as
    ///     ``init(directory:)`` does.
    ///   - logger: Where the keychain logs its operations (item classes and counts, never values). Used when
    ///     this is the first store of `directory` in the process.
    /// - Throws: `KeychainError` with `KeychainError/Code/invalidParameter` for an empty folder path or an
    ///   empty group name, or the engine's error when the keychain cannot be opened.
    public init(directory: String, accessGroups: [String], logger: Logger = Logger(label: "swift-keychain")) throws(KeychainError) {
        guard !directory.isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "The keychain directory is empty. Pass the path of a folder.")
        }
        guard !accessGroups.contains(where: \.isEmpty) else {
            throw KeychainError(code: .invalidParameter, message: "An access group name is empty. Pass non-empty group names, or no groups to use the environment's.")
        }
        let home = URL(fileURLWithPath: directory).standardizedFileURL.path
        let caller: KeychainCaller = accessGroups.isEmpty ? .environment : .groups(accessGroups)
        try self.init(
            connection: KeychainConnector.connection(for: caller, home: home, logger: logger), directory: home,
            accessGroups: accessGroups.isEmpty ? KeychainStore.environmentGroups() : accessGroups)
    }

    init(connection: any KeychainConnection, directory: String, accessGroups: [String]) {
        self.connection = connection
        self.directory = directory
        self.accessGroups = accessGroups
    }

    /// The process-wide store: the keychain and access groups the environment names, through keychaind when it
    /// runs.
    ///
    /// The environment's entitlements are read once per process; the keychain is opened on first use and
    /// kept open.
    ///
    /// - Throws: `KeychainError` when the keychain cannot be opened or the entitlements plist cannot be read.
    public static var `default`: KeychainStore {
        get throws(KeychainError) {
            let connection = try KeychainConnector.environment()
            let directory = (connection as? InProcessKeychain)?.engine.location.home ?? KeychainLocation.fromEnvironment().home
            return KeychainStore(connection: connection, directory: directory, accessGroups: try environmentGroups())
        }
    }

    /// The groups of the environment's entitlements, `"*"` last when they grant every group.
    static func environmentGroups() throws(KeychainError) -> [String] {
        let policy = try EngineRegistry.shared.environmentPolicy()
        return policy.unrestricted ? policy.groups + ["*"] : policy.groups
    }
}
