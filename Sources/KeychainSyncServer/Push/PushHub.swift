import Synchronization

/// A change the push sockets announce: the zone changed and its feed reaches at least `seq`.
package struct PushMessage: Sendable, Equatable {
    /// The account written to.
    package var account: String
    /// The zone written to.
    package var zone: String
    /// The account's sequence number after the write.
    package var seq: Int64

    /// The message as it travels in a PostgreSQL notification: `account:zone:seq`.
    var notificationPayload: String { "\(account):\(zone):\(seq)" }

    /// Parses a notification payload; `nil` when it is not `account:zone:seq`.
    init?(notificationPayload payload: String) {
        let parts = payload.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let seq = Int64(parts[2]) else { return nil }
        self.init(account: String(parts[0]), zone: String(parts[1]), seq: seq)
    }

    /// A message with every field given.
    package init(account: String, zone: String, seq: Int64) {
        self.account = account
        self.zone = zone
        self.seq = seq
    }

    /// The text frame a socket receives: `{"zone": "...", "seq": N}`.
    var json: String {
        // Zones are limited to A-Z a-z 0-9 . _ - (RequestValidation.name), nothing to escape.
        #"{"zone":"\#(zone)","seq":\#(seq)}"#
    }
}

/// The push sockets of this server instance, by account, and the fan-out of notifications to them.
///
/// Each socket subscribes an `AsyncStream`; the listener publishes every notification to the streams of its
/// account. Bounded per account and in all (``SyncLimits``).
package final class PushHub: Sendable {
    private struct State {
        var subscribers: [String: [UInt64: AsyncStream<PushMessage>.Continuation]] = [:]
        var count = 0
        var nextID: UInt64 = 0
        var listening = false
    }

    private let state = Mutex(State())
    private let perAccount: Int
    private let total: Int

    /// An empty hub with the given bounds.
    package init(perAccount: Int = SyncLimits.maximumSocketsPerAccount, total: Int = SyncLimits.maximumSockets) {
        self.perAccount = perAccount
        self.total = total
    }

    /// Whether the listener is receiving notifications (sockets opened before it would miss changes).
    package var isListening: Bool { state.withLock { $0.listening } }

    /// Marks the listener as receiving notifications or not.
    func setListening(_ listening: Bool) { state.withLock { $0.listening = listening } }

    /// Whether one more socket for the account fits.
    func hasRoom(for account: String) -> Bool {
        state.withLock { $0.count < total && ($0.subscribers[account]?.count ?? 0) < perAccount }
    }

    /// Subscribes a socket of an account; `nil` when the bounds are reached.
    func subscribe(account: String) -> (id: UInt64, messages: AsyncStream<PushMessage>)? {
        let (stream, continuation) = AsyncStream.makeStream(of: PushMessage.self, bufferingPolicy: .bufferingNewest(64))
        let id: UInt64? = state.withLock { state in
            guard state.count < total, (state.subscribers[account]?.count ?? 0) < perAccount else { return nil }
            state.nextID += 1
            state.subscribers[account, default: [:]][state.nextID] = continuation
            state.count += 1
            return state.nextID
        }
        guard let id else { return nil }
        return (id, stream)
    }

    /// Ends a socket's subscription.
    func unsubscribe(account: String, id: UInt64) {
        let continuation = state.withLock { state -> AsyncStream<PushMessage>.Continuation? in
            guard let continuation = state.subscribers[account]?.removeValue(forKey: id) else { return nil }
            state.count -= 1
            if state.subscribers[account]?.isEmpty == true { state.subscribers[account] = nil }
            return continuation
        }
        continuation?.finish()
    }

    /// Hands a message to every socket of its account.
    func publish(_ message: PushMessage) {
        let continuations = state.withLock { Array(($0.subscribers[message.account] ?? [:]).values) }
        for continuation in continuations { continuation.yield(message) }
    }

    /// Ends every subscription (at shutdown).
    func finishAll() {
        let continuations = state.withLock { state in
            let all = state.subscribers.values.flatMap(\.values)
            state.subscribers = [:]
            state.count = 0
            return all
        }
        for continuation in continuations { continuation.finish() }
    }
}
