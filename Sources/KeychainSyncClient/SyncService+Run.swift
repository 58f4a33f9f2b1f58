#if Network
import Foundation
import KeychainCore

extension SyncService {
    /// Runs until the task is cancelled: a round at start when in an account, then on push from the server
    /// (WebSocket), soon after local writes, every ``pollInterval``, and after a failure again 1 s later, doubling
    /// up to 5 minutes while failures go on. A second call while one runs returns at once.
    package func run() async {
        let first = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard first else { return }
        defer { state.withLock { $0.running = false } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.roundLoop() }
            group.addTask { await self.watchWrites() }
            group.addTask { await self.pushLoop() }
        }
    }

    /// Rounds when woken or due.
    private func roundLoop() async {
        var next = ContinuousClock.now
        while !Task.isCancelled {
            await roundWakeup.wait(until: next)
            if Task.isCancelled { return }
            guard let session = try? sessionIfAny(), isSyncing(session) else {
                state.withLock { $0.syncing = false }
                next = .now + pollInterval
                continue
            }
            if !state.withLock({ state in
                defer { state.syncing = true }; return state.syncing
            }) {
                writesWakeup.signal()
            }
            do {
                _ = try await round()
                next = .now + pollInterval
            } catch {
                // At least a second: an error before the round began (a damaged device list) counts no failure.
                let failures = state.withLock { $0.failures }
                next = .now + Self.retryDelay(afterFailures: max(1, failures))
            }
        }
    }

    /// How long after `failures` failed rounds in a row the next one is tried: 1 s, doubling, at most 5 minutes.
    static func retryDelay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        return .seconds(min(300, 1 << min(failures - 1, 9)))
    }

    /// How often the write watcher looks.
    static let writeCheckInterval = Duration.milliseconds(200)
    /// The longest steady writing delays a round.
    static let longestWriteDelay = Duration.seconds(2)

    /// Wakes the round loop after local writes, while the keychain syncs: checked every 200 ms, a round is asked for once a check finds the
    /// keychain written since the last round and the next finds it unchanged (or after 2 s of steady writing). The
    /// same check sees the keychain being unlocked: rounds fail while it is locked (its items cannot be read or
    /// written), and one is asked for at once instead of at the next retry, minutes later.
    private func watchWrites() async {
        var previous = currentWrites()
        var changedSince: ContinuousClock.Instant?
        var wasLocked = engine.lockState == .locked || engine.lockState == .beforeFirstUnlock
        state.withLock { state in
            if state.seenWrites == nil { state.seenWrites = previous }
        }
        while !Task.isCancelled {
            guard state.withLock({ $0.syncing }) else {
                // In no account (or not joined yet): nothing to look at until the round loop or a command says so.
                await writesWakeup.wait(until: .now + pollInterval)
                previous = currentWrites()
                changedSince = nil
                continue
            }
            try? await Task.sleep(for: Self.writeCheckInterval)
            let locked = engine.lockState == .locked || engine.lockState == .beforeFirstUnlock
            if wasLocked && !locked && state.withLock({ $0.failures > 0 }) { roundWakeup.signal() }
            wasLocked = locked
            let mark = currentWrites()
            defer { previous = mark }
            let unseen = state.withLock { $0.seenWrites != mark }
            guard unseen else {
                changedSince = nil
                continue
            }
            let since = changedSince ?? .now
            changedSince = since
            guard mark == previous || ContinuousClock.now - since >= Self.longestWriteDelay else { continue }
            state.withLock { $0.seenWrites = mark }
            changedSince = nil
            roundWakeup.signal()
        }
    }
}
#endif
