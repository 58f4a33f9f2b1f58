import KeychainCore
import ServiceLifecycle

/// Locks each keychain while no request comes, as macOS does with a keychain's "lock after N minutes of
/// inactivity" and "lock when sleeping": the engine applies the settings (``KeychainEngine/applyLockSettings(countingAsUse:)``)
/// before every request, and this service applies them between requests, at least once a second, so that an idle
/// keychain locks on time and on resume without waiting for the next caller. In system mode every open user's
/// keychain is checked, each by its own settings.
struct IdleLock: Service {
    let keychains: ServedKeychains

    func run() async throws {
        // Nothing to finish on shutdown: stop sleeping at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                // Each user's login keychain and the keychains opened beside it (`security create-keychain`).
                let engines = keychains.open.flatMap { [$0.engine] + $0.engine.openKeychains }
                let limit = engines.compactMap(\.lockIdleTimeout).filter { $0 > 0 }.min() ?? 0
                try await Task.sleep(for: .seconds(limit > 0 ? min(max(limit / 4, 0.05), 1) : 1))
                for engine in engines { engine.applyLockSettings(countingAsUse: false) }
            }
        }
    }
}
