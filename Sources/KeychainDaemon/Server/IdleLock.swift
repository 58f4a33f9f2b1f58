import Foundation
import KeychainCore
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Locks the keychain after a quiet spell, as macOS does with a keychain's "lock after N minutes of
/// inactivity", and, when `security set-keychain-settings -l` asked for it, when the machine has slept: the
/// WhenUnlocked class keys leave memory until the next unlock.
struct IdleLock: Service {
    let engine: KeychainEngine
    let activity: ActivityClock
    /// Locks after a suspend; shared with the request dispatcher, which checks it before every request.
    let suspendLock: SuspendLock
    /// Seconds without a request before locking (0: never), unless `keychain.settings` says otherwise.
    let timeout: Double
    let logger: Logger

    func run() async throws {
        // Nothing to finish on shutdown: stop sleeping at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let settings = currentSettings()
                suspendLock.isEnabled = settings.lockOnSleep
                let limit = settings.timeout
                try await Task.sleep(for: .seconds(limit > 0 ? min(max(limit / 4, 0.05), 1) : 1))
                suspendLock.lockIfSlept(engine, logger: logger)
                if limit > 0, engine.lockState == .unlocked, activity.idleSeconds >= limit {
                    engine.lock()
                    logger.notice("locked after inactivity", metadata: ["seconds": "\(Int(limit))"])
                }
            }
        }
    }

    /// `security set-keychain-settings` wins over the daemon's own default idle time; lock-on-sleep is off
    /// unless it was set.
    func currentSettings() -> (timeout: Double, lockOnSleep: Bool) {
        guard let settings = try? KeychainSettings.load(engine.location) else { return (timeout, false) }
        return (settings.idleTimeout.map(Double.init) ?? 0, settings.lockOnSleep)
    }
}

/// Locks the keychain once the machine has been suspended, when `security set-keychain-settings -l` asked for it.
/// keychaind checks before every request and once a second, so nothing is served from keys that slept.
package final class SuspendLock: Sendable {
    private let state: Mutex<(detector: SleepDetector, enabled: Bool)>

    package init(detector: SleepDetector = SleepDetector()) {
        state = Mutex((detector, false))
    }

    /// Whether lock-on-sleep is on (from the keychain's settings).
    package var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Locks `engine` when the machine slept since the last check and lock-on-sleep is on.
    package func lockIfSlept(_ engine: KeychainEngine, logger: Logger) {
        let lock = state.withLock { s in s.detector.sleptSinceLastCheck() && s.enabled }
        guard lock, engine.lockState == .unlocked else { return }
        engine.lock()
        logger.notice("locked after the machine slept")
    }
}

/// Tells when the machine was suspended. `CLOCK_BOOTTIME` counts the time asleep and `CLOCK_MONOTONIC` does not,
/// so the gap between them grows by exactly the time spent suspended; no D-Bus or logind is needed, and a
/// process that was merely descheduled does not look asleep.
package struct SleepDetector: Sendable {
    /// Reads both clocks, in seconds.
    package typealias Clocks = @Sendable () -> (boot: Double, monotonic: Double)

    private let clocks: Clocks
    private var gap: Double

    /// - Parameter clocks: the clock source (the system's by default; tests pass their own).
    package init(clocks: @escaping Clocks = SleepDetector.systemClocks) {
        self.clocks = clocks
        let now = clocks()
        gap = now.boot - now.monotonic
    }

    /// Whether the machine slept for at least `threshold` seconds since the last call (or since init).
    package mutating func sleptSinceLastCheck(threshold: Double = 2) -> Bool {
        let now = clocks()
        let newGap = now.boot - now.monotonic
        defer { gap = newGap }
        return newGap - gap >= threshold
    }

    /// The system's boot-time and monotonic clocks.
    package static func systemClocks() -> (boot: Double, monotonic: Double) {
        func read(_ clock: clockid_t) -> Double {
            var ts = timespec()
            clock_gettime(clock, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
        return (read(CLOCK_BOOTTIME), read(CLOCK_MONOTONIC))
    }
}
