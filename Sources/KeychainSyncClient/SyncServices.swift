#if Network
import Foundation
import KeychainCore
import Synchronization

/// The sync engines of the keychains this process serves (keychaind) or opened itself (embedded mode): one
/// ``SyncService`` per engine, made at its first use, its mirror at ``KeychainLocation/syncMirrorPath``, so that every
/// connection to a keychain reaches the same one and its background rounds and commands are serialised.
///
/// A service holds its engine: a keychain that synced in this process stays open until the process ends, as the
/// environment's keychain does.
package final class SyncServices: SyncEngines {
    /// The process-wide set.
    package static let shared = SyncServices()

    /// Registers the process-wide set as the process's sync engines (``SyncEngineRegistry``): done when a program
    /// that links the sync client starts, and by KeychainKit before its sync calls.
    package static func register() {
        SyncEngineRegistry.register(shared)
    }

    private let services = Mutex<[ObjectIdentifier: SyncService]>([:])

    /// The sync engine of `engine`, made on first use.
    package func service(for engine: KeychainEngine) -> SyncService {
        services.withLock { services in
            // The service holds the engine, so its identifier is never reused while the entry exists.
            if let service = services[ObjectIdentifier(engine)] { return service }
            // It logs where its keychain logs: keychaind's log, or only errors in the `security` tool.
            var logger = engine.logger
            logger[metadataKey: "sync"] = "\(engine.location.home)"
            let service = SyncService(engine: engine, mirrorPath: engine.location.syncMirrorPath, logger: logger)
            services[ObjectIdentifier(engine)] = service
            return service
        }
    }

    package func perform(_ command: SyncCommand, engine: KeychainEngine) async throws(KeychainError) -> SyncReply {
        try await service(for: engine).perform(command)
    }

    package func run(engine: KeychainEngine) async {
        await service(for: engine).run()
    }

    package func hasAccount(engine: KeychainEngine) -> Bool {
        service(for: engine).hasAccount
    }
}
#endif
