import KeychainCore
import Logging
import ServiceLifecycle

/// Locks the keychain after a quiet spell, as macOS does with a keychain's "lock after N minutes of
/// inactivity": the WhenUnlocked class keys leave memory until the next unlock.
struct IdleLock: Service {
    let engine: KeychainEngine
    let activity: ActivityClock
    /// Seconds without a request before locking (0: never), unless `keychain.settings` says otherwise.
    let timeout: Double
    let logger: Logger

    func run() async throws {
        // Nothing to finish on shutdown: stop sleeping at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let limit = effectiveTimeout()
                try await Task.sleep(for: .seconds(limit > 0 ? min(max(limit / 4, 0.05), 1) : 1))
                if limit > 0, engine.lockState == .unlocked, activity.idleSeconds >= limit {
                    engine.lock()
                    logger.notice("locked after inactivity", metadata: ["seconds": "\(Int(limit))"])
                }
            }
        }
    }

    /// `security set-keychain-settings` wins over the daemon's own default.
    func effectiveTimeout() -> Double {
        guard let settings = try? KeychainSettings.load(engine.location) else { return timeout }
        return settings.idleTimeout.map(Double.init) ?? 0
    }
}
