import Foundation
import KeychainDBus
import KeychainSecretServiceClient
import Synchronization

/// The open sessions (`/org/freedesktop/secrets/session/ID`): each belongs to the bus connection that opened it,
/// carries its transfer keys, and ends with `Close`, or when that connection leaves the bus.
final class SecretSessions: Sendable {
    struct Entry: Sendable {
        var owner: String
        var crypto: SecretSessionCrypto
        /// When it was last used, in the table's own clock (one tick per open or use).
        var used: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var counts: [String: Int] = [:]
        var clock: UInt64 = 0
        var next: UInt64 = 1
    }

    private let state = Mutex(State())
    /// The most sessions one connection keeps: past it, the one it used least recently is closed (clients such as
    /// Python's secretstorage open one per item and never close them).
    static let maximumPerOwner = 8_192
    /// The most sessions of all connections together; past it, OpenSession is refused.
    static let maximum = 32_768

    /// Adds a session for `owner` (closing its least recently used one past ``maximumPerOwner``); nil when
    /// ``maximum`` is reached.
    func open(owner: String, crypto: SecretSessionCrypto) -> String? {
        state.withLock { state in
            if state.counts[owner, default: 0] >= Self.maximumPerOwner,
                let oldest = state.entries.filter({ $0.value.owner == owner }).min(by: { $0.value.used < $1.value.used })?.key
            {
                state.entries[oldest] = nil
                state.counts[owner, default: 1] -= 1
            }
            guard state.entries.count < Self.maximum else { return nil }
            let id = "s\(state.next)"
            state.next += 1
            state.clock += 1
            state.entries[id] = Entry(owner: owner, crypto: crypto, used: state.clock)
            state.counts[owner, default: 0] += 1
            return id
        }
    }

    /// The session `id` if `caller` owns it.
    func session(_ id: String, caller: String) -> SecretSessionCrypto? {
        state.withLock { state in
            guard var entry = state.entries[id], entry.owner == caller else { return nil }
            state.clock += 1
            entry.used = state.clock
            state.entries[id] = entry
            return entry.crypto
        }
    }

    /// Ends session `id` if `caller` owns it; whether it did.
    func close(_ id: String, caller: String) -> Bool {
        state.withLock { state in
            guard state.entries[id]?.owner == caller else { return false }
            state.entries[id] = nil
            state.counts[caller, default: 1] -= 1
            if state.counts[caller] == 0 { state.counts[caller] = nil }
            return true
        }
    }

    /// Ends every session of `owner`; how many there were.
    @discardableResult
    func closeAll(owner: String) -> Int {
        state.withLock { state in
            guard let count = state.counts.removeValue(forKey: owner) else { return 0 }
            state.entries = state.entries.filter { $0.value.owner != owner }
            return count
        }
    }

    /// How many sessions are open.
    var count: Int { state.withLock { $0.entries.count } }
}
