import Foundation
import Synchronization

/// The sync engines of the keychains a process serves, one per ``KeychainEngine``: keychaind's for the keychains it
/// serves, a program's own for the keychains it opens itself (embedded mode).
///
/// The sync client (HTTP, TLS and WebSockets) is not part of the library: the module that links it,
/// KeychainSyncClient (built with the package's `Network` trait), registers its engines here
/// (``SyncEngineRegistry/register(_:)``) when a program starts, so that an app built on Keychain Services alone
/// links no network client and resolves none of those packages.
package protocol SyncEngines: Sendable {
    /// Answers `command` with the sync engine of `engine` (one per engine in the process).
    func perform(_ command: SyncCommand, engine: KeychainEngine) async throws(KeychainError) -> SyncReply
    /// Runs the background work of `engine`'s sync engine until the task is cancelled.
    func run(engine: KeychainEngine) async
    /// Whether `engine`'s keychain is in a sync account (a keychaind that syncs it stays running).
    func hasAccount(engine: KeychainEngine) -> Bool
}

/// Where keychaind and ``KeychainEngine``'s in-process callers find the process's ``SyncEngines``.
package enum SyncEngineRegistry {
    private static let registered = Mutex<(any SyncEngines)?>(nil)

    /// Makes `engines` the process's sync engines (the first registration stays).
    package static func register(_ engines: any SyncEngines) {
        registered.withLock { if $0 == nil { $0 = engines } }
    }

    /// The registered engines, if this program links a sync client.
    package static var current: (any SyncEngines)? { registered.withLock { $0 } }

    /// The registered engines.
    /// - Throws: ``KeychainError`` `unimplemented` when this program links no sync client.
    package static func engines() throws(KeychainError) -> any SyncEngines {
        guard let engines = current else {
            throw KeychainError(
                code: .unimplemented,
                message:
                    "This program was built without the sync client. Sync with the installed `security sync` commands (or keychaind), or build with the package's Network trait (swift build --traits Network)."
            )
        }
        return engines
    }
}
