import KeychainCore
import Logging
import ServiceLifecycle

/// Locks the keychain after a quiet spell, as macOS does with a keychain's "lock after N minutes of
/// inactivity": the WhenUnlocked class keys leave memory until the next unlock.
struct IdleLock: Service {
    let engine: KeychainEngine
    let activity: ActivityClock
    /// Seconds without a request before locking; 0 never locks.
    let timeout: Double
    let logger: Logger

    func run() async throws {
        guard timeout > 0 else { return }
        let tick = min(max(timeout / 4, 0.05), 5)
        // Nothing to finish on shutdown: stop sleeping at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(tick))
                if engine.lockState == .unlocked, activity.idleSeconds >= timeout {
                    engine.lock()
                    logger.notice("locked after inactivity", metadata: ["seconds": "\(Int(timeout))"])
                }
            }
        }
    }
}
