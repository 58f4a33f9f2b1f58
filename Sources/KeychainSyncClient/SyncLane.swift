#if Network
import KeychainCore
import Synchronization

/// Runs asynchronous work one piece at a time, in the order it was asked for: the sync service's commands and
/// rounds share one, so that no two of them change the mirror, the keyring or the server's device list at once.
final class SyncLane: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `body` once everything asked for before it has ended.
    func run<T>(_ body: () async throws(KeychainError) -> T) async throws(KeychainError) -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if free { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        // The lane stays busy: it passes straight to the next one.
        next?.resume()
    }
}
#endif
