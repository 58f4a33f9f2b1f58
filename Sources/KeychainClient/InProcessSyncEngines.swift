import Foundation
import KeychainCore
import Synchronization

/// The sync engines of keychains this process opens itself (embedded mode), provided by the module that links the
/// sync client: KeychainKit registers them (``InProcessSyncEngineRegistry/register(_:)``) before its first sync
/// call, so that a program built on Keychain Services alone, or the git helper, links no HTTP or WebSocket client.
/// keychaind runs its own, one per keychain it serves.
package protocol InProcessSyncEngines: Sendable {
    /// Answers `command` with the sync engine of `engine` (one per engine in the process).
    func perform(_ command: SyncCommand, engine: KeychainEngine) async throws(KeychainError) -> SyncReply
    /// Runs the background work of `engine`'s sync engine until the task is cancelled.
    func run(engine: KeychainEngine) async
}

/// Where ``InProcessKeychain`` finds the process's ``InProcessSyncEngines``.
package enum InProcessSyncEngineRegistry {
    private static let registered = Mutex<(any InProcessSyncEngines)?>(nil)

    /// Makes `engines` the process's sync engines (the first registration stays).
    package static func register(_ engines: any InProcessSyncEngines) {
        registered.withLock { if $0 == nil { $0 = engines } }
    }

    /// The registered engines.
    /// - Throws: ``KeychainError`` `unimplemented` when this program links no sync client.
    static func engines() throws(KeychainError) -> any InProcessSyncEngines {
        guard let engines = registered.withLock({ $0 }) else {
            throw KeychainError(code: .unimplemented, message: "This program does not include the sync engine: sync through KeychainKit's sync API, the `security sync` commands, or keychaind.")
        }
        return engines
    }
}
