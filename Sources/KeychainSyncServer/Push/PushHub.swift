#if Network
import Synchronization

/// What a push socket is handed.
enum PushDelivery: Sendable, Equatable {
    /// A text frame to send.
    case frame(String)
    /// The device was removed from the account: close the socket.
    case removed
}

/// The push sockets of this server instance, by account and device, and the fan-out of notifications to them.
///
/// Each socket subscribes an `AsyncStream` of text frames; the listener hands every notification to the hub, which
/// sends a change to the account's sockets and ends the streams of a removed device (its sockets then close).
/// Bounded per account and in all.
package final class PushHub: Sendable {
    private struct Subscriber {
        var device: String
        var continuation: AsyncStream<PushDelivery>.Continuation
    }

    private struct State {
        var subscribers: [String: [UInt64: Subscriber]] = [:]
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

    /// Subscribes a socket of a device; `nil` when the bounds are reached. The stream ends after ``PushDelivery/removed``
    /// when the device is removed, and without it at shutdown.
    func subscribe(account: String, device: String) -> (id: UInt64, deliveries: AsyncStream<PushDelivery>)? {
        let (stream, continuation) = AsyncStream.makeStream(of: PushDelivery.self, bufferingPolicy: .bufferingNewest(64))
        let id: UInt64? = state.withLock { state in
            guard state.count < total, (state.subscribers[account]?.count ?? 0) < perAccount else { return nil }
            state.nextID += 1
            state.subscribers[account, default: [:]][state.nextID] = Subscriber(device: device, continuation: continuation)
            state.count += 1
            return state.nextID
        }
        guard let id else { return nil }
        return (id, stream)
    }

    /// Ends a socket's subscription.
    func unsubscribe(account: String, id: UInt64) {
        let subscriber = state.withLock { state -> Subscriber? in
            guard let subscriber = state.subscribers[account]?.removeValue(forKey: id) else { return nil }
            state.count -= 1
            if state.subscribers[account]?.isEmpty == true { state.subscribers[account] = nil }
            return subscriber
        }
        subscriber?.continuation.finish()
    }

    /// Hands a notification to the account's sockets.
    func publish(_ notification: PushNotification) {
        let subscribers = state.withLock { Array(($0.subscribers[notification.account] ?? [:]).values) }
        switch notification {
        case .changed(_, let zone, let seq):
            let frame = PushNotification.frame(zone: zone, seq: seq)
            for subscriber in subscribers { subscriber.continuation.yield(.frame(frame)) }
        case .removed(_, let device):
            for subscriber in subscribers where subscriber.device == device {
                subscriber.continuation.yield(.removed)
                subscriber.continuation.finish()
            }
        }
    }

    /// Ends every subscription (at shutdown).
    func finishAll() {
        let subscribers = state.withLock { state in
            let all = state.subscribers.values.flatMap(\.values)
            state.subscribers = [:]
            state.count = 0
            return all
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
    }
}
#endif
