import KeychainCore
import ServiceLifecycle

/// Locks the keychain while no request comes, as macOS does with a keychain's "lock after N minutes of
/// inactivity" and "lock when sleeping": the engine applies the settings (``KeychainEngine/applyLockSettings(countingAsUse:)``)
/// before every request, and this service applies them between requests, at least once a second, so that an idle
/// keychain locks on time and on resume without waiting for the next caller.
struct IdleLock: Service {
    let engine: KeychainEngine

    func run() async throws {
        // Nothing to finish on shutdown: stop sleeping at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let limit = engine.lockIdleTimeout ?? 0
                try await Task.sleep(for: .seconds(limit > 0 ? min(max(limit / 4, 0.05), 1) : 1))
                engine.applyLockSettings(countingAsUse: false)
            }
        }
    }
}
