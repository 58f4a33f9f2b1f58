import Foundation
import KeychainCore
import KeychainSyncClient
import Synchronization

/// The sync engines of the keychains this process opened itself (embedded mode): one ``SyncService`` per engine,
/// made at its first sync call, its mirror at ``KeychainLocation/syncMirrorPath``, so that every connection to a
/// keychain (each caller's ``InProcessKeychain``) reaches the same one and its background rounds and commands are
/// serialised. keychaind keeps its own per served keychain.
///
/// A service holds its engine: a keychain that synced in this process stays open until the process ends, as the
/// environment's keychain does.
package final class SyncServices: Sendable {
    /// The process-wide set.
    package static let shared = SyncServices()

    private let services = Mutex<[ObjectIdentifier: SyncService]>([:])

    /// The sync engine of `engine`, made on first use.
    package func service(for engine: KeychainEngine) -> SyncService {
        services.withLock { services in
            // The service holds the engine, so its identifier is never reused while the entry exists.
            if let service = services[ObjectIdentifier(engine)] { return service }
            let service = SyncService(engine: engine, mirrorPath: engine.location.syncMirrorPath)
            services[ObjectIdentifier(engine)] = service
            return service
        }
    }
}
