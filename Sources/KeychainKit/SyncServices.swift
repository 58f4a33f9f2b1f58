import Foundation
import KeychainClient
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
final class SyncServices: InProcessSyncEngines {
    /// The process-wide set.
    static let shared = SyncServices()

    /// Registers the process-wide set as the engines ``InProcessKeychain`` uses (done before every sync call).
    static func register() {
        InProcessSyncEngineRegistry.register(shared)
    }

    private let services = Mutex<[ObjectIdentifier: SyncService]>([:])

    /// The sync engine of `engine`, made on first use.
    func service(for engine: KeychainEngine) -> SyncService {
        services.withLock { services in
            // The service holds the engine, so its identifier is never reused while the entry exists.
            if let service = services[ObjectIdentifier(engine)] { return service }
            let service = SyncService(engine: engine, mirrorPath: engine.location.syncMirrorPath)
            services[ObjectIdentifier(engine)] = service
            return service
        }
    }

    func perform(_ command: SyncCommand, engine: KeychainEngine) async throws(KeychainError) -> SyncReply {
        try await service(for: engine).perform(command)
    }

    func run(engine: KeychainEngine) async {
        await service(for: engine).run()
    }
}
