#if Network
import Logging
import ServiceLifecycle

/// The service that runs ``SyncStore/runMaintenance(tombstoneHorizon:)`` once the schema is current (at start-up)
/// and then periodically. Several instances may run it at once: each pass is idempotent.
struct MaintenanceService: Service, CustomStringConvertible {
    /// The storage.
    let store: SyncStore
    /// The tombstone horizon, in seconds.
    let tombstoneHorizonSeconds: Int64
    /// The time between passes.
    let interval: Duration
    /// Where passes log.
    let logger: Logger
    /// Ends when the migrations have run (the service's only reader).
    let schemaReady: AsyncStream<Void>

    var description: String { "MaintenanceService" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in schemaReady {}
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
                        logger.error("Maintenance pass failed (the database?); will retry", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
                    }
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
#endif
