import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The clocks the lock settings are measured with.
package struct LockClocks: Sendable {
    /// Seconds since boot, time spent suspended included (`CLOCK_BOOTTIME`): idle time keeps counting while the
    /// machine sleeps.
    package var sinceBoot: @Sendable () -> Double
    /// Seconds the machine has spent suspended (asleep or hibernated) since boot: how far `CLOCK_BOOTTIME` has
    /// run ahead of `CLOCK_MONOTONIC`, which stops during a suspend. It grows only across a suspend.
    package var suspended: @Sendable () -> Double

    package init(sinceBoot: @escaping @Sendable () -> Double, suspended: @escaping @Sendable () -> Double) {
        self.sinceBoot = sinceBoot
        self.suspended = suspended
    }

    /// The machine's clocks.
    package static let system = LockClocks(
        sinceBoot: { LockClocks.seconds(CLOCK_BOOTTIME) },
        suspended: { max(0, LockClocks.seconds(CLOCK_BOOTTIME) - LockClocks.seconds(CLOCK_MONOTONIC)) }
    )

    static func seconds(_ clock: clockid_t) -> Double {
        var time = timespec()
        clock_gettime(clock, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The growth of ``suspended`` that counts as a suspend: the two clocks are read one after the other, so
    /// they differ by microseconds between calls even when the machine never slept.
    static let suspendThreshold = 0.5
}

/// What applying the lock settings remembers between calls.
struct AutoLockState {
    /// When the keychain was last used (``LockClocks/sinceBoot``).
    var lastUse: Double
    /// The machine's suspended time at the last call.
    var suspended: Double
    /// `keychain.settings` as last read (nil: none were ever set).
    var settings: KeychainSettings?
    /// When it was read; nil: read it at the next call.
    var settingsReadAt: Double?
}

/// The keychain's lock settings applied where the keys are held: keychaind, or a process that opened the keychain
/// itself (an app's SecItem calls, KeychainKit, the `security` tool without keychaind).
///
/// `security set-keychain-settings -t N` locks after N seconds without use (the time counts while the machine
/// sleeps); without settings, after the engine's default (keychaind's `--idle-lock`, 600 seconds in-process).
/// `-l` locks when the machine has been suspended: Linux tells a process that it slept by `CLOCK_BOOTTIME` having
/// run ahead of `CLOCK_MONOTONIC`, so the lock happens on resume, before the keychain answers anything (keychaind
/// also checks every second while idle). It does not happen at the moment of suspending, which would take logind's
/// `PrepareForSleep` signal over D-Bus. Locking drops the WhenUnlocked keys of the process that holds them.
extension KeychainEngine {
    /// Applies the lock settings before a use of the keychain: locks if the keychain has not been used for the idle
    /// timeout, or (lock on sleep) if the machine was suspended since the last call. With `countingAsUse`, the call
    /// then counts as use and the idle time starts again; keychaind's periodic check passes false.
    package func applyLockSettings(countingAsUse: Bool = true) {
        // Without a passcode there is nothing to lock (and setting one counts as a use, see markUsed()).
        guard lockState != .noPasscode else { return }
        let now = clocks.sinceBoot()
        let suspended = clocks.suspended()
        let reason: String? = autoLock.withLock { state in
            defer {
                state.suspended = suspended
                if countingAsUse { state.lastUse = now }
            }
            let settings = currentSettings(&state, now: now)
            if settings?.lockOnSleep == true, suspended - state.suspended >= LockClocks.suspendThreshold {
                return "machine slept"
            }
            if let timeout = idleTimeout(settings), now - state.lastUse >= timeout {
                return "inactivity"
            }
            return nil
        }
        if let reason, lockState == .unlocked {
            lock()
            logger.notice("locked", metadata: ["reason": "\(reason)"])
        }
    }

    /// Seconds without use after which the keychain locks now (nil: never): the settings', else the default.
    package var lockIdleTimeout: Double? {
        let now = clocks.sinceBoot()
        return autoLock.withLock { state in idleTimeout(currentSettings(&state, now: now)) }
    }

    /// Reads `keychain.settings` again at the next call (they were just changed).
    package func lockSettingsChanged() {
        autoLock.withLock { $0.settingsReadAt = nil }
    }

    /// Starts the idle time again: an unlock or a new passcode is a use of the keychain.
    func markUsed() {
        let (now, suspended) = (clocks.sinceBoot(), clocks.suspended())
        autoLock.withLock { state in
            state.lastUse = now
            state.suspended = suspended
        }
    }

    /// The settings, read from the file at most once a second (a change by another process shows within that).
    private func currentSettings(_ state: inout AutoLockState, now: Double) -> KeychainSettings? {
        if let readAt = state.settingsReadAt, now - readAt < 1, now >= readAt { return state.settings }
        do {
            state.settings = try KeychainSettings.load(location)
        } catch {
            // A damaged file: `security set-keychain-settings` rewrites it; meanwhile the default applies.
            if state.settingsReadAt == nil || state.settings != nil {
                logger.warning("unreadable keychain.settings, using the default lock settings", metadata: ["reason": "\(error.message)"])
            }
            state.settings = nil
        }
        state.settingsReadAt = now
        return state.settings
    }

    private func idleTimeout(_ settings: KeychainSettings?) -> Double? {
        guard let settings else { return defaultIdleTimeout.flatMap { $0 > 0 ? $0 : nil } }
        return settings.idleTimeout.map(Double.init)
    }
}
