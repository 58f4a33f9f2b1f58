import Logging
import ServiceLifecycle

/// The service that runs ``SyncStore/runMaintenance(tombstoneHorizon:)`` at start-up and then periodically.
/// Several instances may run it at once: each pass is idempotent.
struct MaintenanceService: Service {
    /// The storage.
    let store: SyncStore
    /// The tombstone horizon, in seconds.
    let tombstoneHorizonSeconds: Int64
    /// The time between passes.
    let interval: Duration
    /// Where passes log.
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let report = try await store.runMaintenance(tombstoneHorizon: tombstoneHorizonSeconds)
                    logger.debug(
                        "Maintenance pass",
                        metadata: [
                            "purged_tombstones": "\(report.purgedTombstones)", "expired_nonces": "\(report.expiredNonces)",
                            "lapsed_joins": "\(report.lapsedJoins)",
                        ]
                    )
                } catch {
                    if !Task.isCancelled {
                        logger.warning("Maintenance pass failed; will retry", metadata: ["error": "\(type(of: error))"])
                    }
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
