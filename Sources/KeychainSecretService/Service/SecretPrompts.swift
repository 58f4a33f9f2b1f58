import Foundation
import KeychainDBus
import Synchronization

/// The prompts waiting for their owner to call `Prompt` (`/org/freedesktop/secrets/prompt/ID`).
final class SecretPrompts: Sendable {
    /// What a prompt does once shown: returns the result (`v`) of `Completed`, or nil when dismissed.
    typealias Action = @Sendable () -> DBusValue?

    struct Entry: Sendable {
        var owner: String
        var action: Action
        /// The result a dismissed prompt completes with: clients check its type (an empty `ao` for Unlock).
        var dismissedResult: DBusValue
        var started = false
    }

    private let state = Mutex<(entries: [String: Entry], next: UInt64)>(([:], 1))
    static let maximumPerOwner = 16
    static let maximum = 1_024

    /// Adds a prompt for `owner`; nil when a limit is reached.
    func add(owner: String, dismissedResult: DBusValue, action: @escaping Action) -> String? {
        state.withLock { state in
            guard state.entries.count < Self.maximum,
                state.entries.values.lazy.filter({ $0.owner == owner }).count < Self.maximumPerOwner
            else { return nil }
            let id = "p\(state.next)"
            state.next += 1
            state.entries[id] = Entry(owner: owner, action: action, dismissedResult: dismissedResult)
            return id
        }
    }

    /// Marks prompt `id` of `caller` as started and returns its action (nil: no such prompt, another's, or already
    /// started).
    func start(_ id: String, caller: String) -> (action: Action, dismissedResult: DBusValue)? {
        state.withLock { state in
            guard var entry = state.entries[id], entry.owner == caller, !entry.started else { return nil }
            entry.started = true
            state.entries[id] = entry
            return (entry.action, entry.dismissedResult)
        }
    }

    /// Removes prompt `id` (of `caller`, when given); its dismissed result when it was there.
    @discardableResult
    func remove(_ id: String, caller: String? = nil) -> DBusValue? {
        state.withLock { state in
            guard let entry = state.entries[id], caller == nil || entry.owner == caller else { return nil }
            state.entries[id] = nil
            return entry.dismissedResult
        }
    }

    /// Whether prompt `id` exists.
    func exists(_ id: String) -> Bool { state.withLock { $0.entries[id] != nil } }

    /// Removes every prompt of `owner`; how many there were.
    @discardableResult
    func removeAll(owner: String) -> Int {
        state.withLock { state in
            let before = state.entries.count
            state.entries = state.entries.filter { $0.value.owner != owner }
            return before - state.entries.count
        }
    }

    /// How many prompts are waiting.
    var count: Int { state.withLock { $0.entries.count } }
}
