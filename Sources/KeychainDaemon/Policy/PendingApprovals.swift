import Dispatch
import Foundation
import KeychainCore
import Synchronization

/// The requests waiting for the person's approval from a terminal (`security approve`), because no prompt could
/// ask them where the request came from. Each waits a bounded time on its worker thread; at most
/// ``maximumWaiting`` wait at once (``perUser`` per user), so waiting requests cannot pile up.
package final class PendingApprovals: Sendable {
    private struct Entry: Sendable {
        var uid: UInt32
        var program: String
        var action: String
        var since: ContinuousClock.Instant
        var deadline: ContinuousClock.Instant
        var answer: ConsentAnswer?
        var signal: DispatchSemaphore
    }

    private struct State: Sendable {
        var entries: [UInt64: Entry] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())

    /// At most this many requests wait at once.
    package static let maximumWaiting = 64
    /// At most this many of one user's requests wait at once.
    package static let perUser = 8

    package init() {}

    /// Registers a request of user `uid` and blocks until it is answered or `timeout` passes: the answer, or nil.
    /// Throws `errSecInteractionNotAllowed` when too many requests wait already.
    package func wait(uid: UInt32, program: String, action: String, timeout: Duration, registered: (UInt64) -> Void = { _ in }) throws(KeychainError) -> ConsentAnswer? {
        let signal = DispatchSemaphore(value: 0)
        let now = ContinuousClock.now
        let id: UInt64? = state.withLock { state in
            guard state.entries.count < Self.maximumWaiting,
                state.entries.values.filter({ $0.uid == uid }).count < Self.perUser
            else { return nil }
            let id = state.next
            state.next += 1
            state.entries[id] = Entry(uid: uid, program: program, action: action, since: now, deadline: now + timeout, answer: nil, signal: signal)
            return id
        }
        guard let id else {
            throw KeychainError(code: .interactionNotAllowed, message: "Too many requests already wait for approval. Answer them with `security approve` from a terminal, then try again.")
        }
        registered(id)
        let components = timeout.components
        let nanoseconds = max(0, components.seconds) * 1_000_000_000 + components.attoseconds / 1_000_000_000
        _ = signal.wait(timeout: .now() + .nanoseconds(Int(min(nanoseconds, Int64(Int.max)))))
        return state.withLock { $0.entries.removeValue(forKey: id)?.answer }
    }

    /// The requests of user `uid` that wait now.
    func list(uid: UInt32) -> [PendingApproval] {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.entries.filter { $0.value.uid == uid && $0.value.answer == nil }.sorted { $0.key < $1.key }.map { id, entry in
                PendingApproval(
                    id: id, program: entry.program, action: entry.action, waited: Int((now - entry.since).components.seconds),
                    remaining: max(0, Int((entry.deadline - now).components.seconds)))
            }
        }
    }

    /// The waiting request `id` of user `uid`, or nil.
    func pending(id: UInt64, uid: UInt32) -> PendingApproval? {
        list(uid: uid).first { $0.id == id }
    }

    /// Answers the waiting request `id` of user `uid`; false when it no longer waits.
    func answer(id: UInt64, uid: UInt32, _ answer: ConsentAnswer) -> Bool {
        let signal: DispatchSemaphore? = state.withLock { state in
            guard var entry = state.entries[id], entry.uid == uid, entry.answer == nil else { return nil }
            entry.answer = answer
            state.entries[id] = entry
            return entry.signal
        }
        signal?.signal()
        return signal != nil
    }
}
