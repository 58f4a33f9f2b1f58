import Foundation
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
    let engine: KeychainEngine
    let caller: AccessPolicy

    /// The folder holding the keychain's files.
    public var directory: String { engine.location.home }

    /// The access groups the store's callers act as, in order; the first is where new items go unless a
    /// ``Keychain`` names another with ``Keychain/accessGroup(_:)``. `"*"` (last) means every group.
    public var accessGroups: [String] { caller.unrestricted ? caller.groups + ["*"] : caller.groups }

    /// Opens (creating when missing) the keychain in `directory`, acting as the access groups of the
    /// environment (`KEYCHAIN_ENTITLEMENTS`, else the executable's name).
    ///
    /// - Throws: ``KeychainError`` when the folder cannot be created or opened, or the entitlements plist
    ///   cannot be read.
    public init(directory: String) throws(KeychainError) {
        try self.init(directory: directory, accessGroups: [])
    }

    /// Opens (creating when missing) the keychain in `directory`, acting as `accessGroups`.
    ///
    /// - Parameters:
    ///   - directory: The keychain folder; created with mode 0700 when missing.
    ///   - accessGroups: The access groups callers are entitled to, in order: the first is the default for new
    ///     items; `"*"` grants every group. Empty means "read them from the environment", as
    ///     ``init(directory:)`` does.
    ///   - logger: Where the keychain logs its operations (item classes and counts, never values). Used when
    ///     this is the first store of `directory` in the process.
    /// - Throws: ``KeychainError`` with ``KeychainError/Code/invalidParameter`` for an empty folder path or an
    ///   empty group name, or the engine's error when the keychain cannot be opened.
    public init(directory: String, accessGroups: [String], logger: Logger = Logger(label: "swift-keychain")) throws(KeychainError) {
        guard !directory.isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "The keychain directory is empty. Pass the path of a folder.")
        }
        guard !accessGroups.contains(where: \.isEmpty) else {
            throw KeychainError(code: .invalidParameter, message: "An access group name is empty. Pass non-empty group names, or no groups to use the environment's.")
        }
        let home = URL(fileURLWithPath: directory).standardizedFileURL.path
        let caller = accessGroups.isEmpty ? try EngineRegistry.shared.environmentPolicy() : AccessPolicy(groups: accessGroups)
        self.engine = try EngineRegistry.shared.engine(for: KeychainLocation(home: home), pinned: false, logger: logger)
        self.caller = caller
    }

    init(engine: KeychainEngine, caller: AccessPolicy) {
        self.engine = engine
        self.caller = caller
    }

    /// The process-wide store: the keychain folder and access groups the environment names.
    ///
    /// The environment's entitlements are read once per process; the keychain is opened on first use and
    /// kept open.
    ///
    /// - Throws: ``KeychainError`` when the keychain cannot be opened or the entitlements plist cannot be read.
    public static var `default`: KeychainStore {
        get throws(KeychainError) {
            let (engine, caller) = try EngineRegistry.shared.environmentContext()
            return KeychainStore(engine: engine, caller: caller)
        }
    }
}
