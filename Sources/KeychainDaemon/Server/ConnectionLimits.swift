import Synchronization

/// What one keychaind lets its clients hold, so that no client (and no number of them) can exhaust its memory,
/// descriptors or threads. Over a limit, the connection that crossed it is closed and every other one is served.
package struct ConnectionLimits: Sendable {
    /// Open connections, all users together.
    package var connections: Int
    /// Open connections of one user (one uid, as the kernel tells it).
    package var connectionsPerUser: Int
    /// Bytes of frames that are still arriving, all connections together. A frame larger than
    /// ``unreservedFrameBytes`` reserves its announced length here before its body is read.
    package var bufferedBytes: Int
    /// A frame up to this size is read without a reservation (every connection may hold one).
    package var unreservedFrameBytes: Int
    /// How long a frame may take to arrive once its first byte has; a connection idle between frames waits as long
    /// as it likes.
    package var frameTimeout: Duration
    /// How long writing one response may wait on a client that does not read.
    package var sendTimeout: Duration

    /// The defaults: 1,024 connections, 256 per user, 64 MiB of frames in flight, 10 seconds per frame.
    package static let standard = ConnectionLimits(
        connections: 1024, connectionsPerUser: 256, bufferedBytes: 64 << 20,
        unreservedFrameBytes: 16 << 10, frameTimeout: .seconds(10), sendTimeout: .seconds(10))

    package init(
        connections: Int, connectionsPerUser: Int, bufferedBytes: Int, unreservedFrameBytes: Int,
        frameTimeout: Duration, sendTimeout: Duration
    ) {
        self.connections = connections
        self.connectionsPerUser = connectionsPerUser
        self.bufferedBytes = bufferedBytes
        self.unreservedFrameBytes = unreservedFrameBytes
        self.frameTimeout = frameTimeout
        self.sendTimeout = sendTimeout
    }
}

/// The counts behind ``ConnectionLimits``: connections per user and in total, and the bytes reserved by frames in
/// flight. Every reservation is given back when its frame completes or its connection ends.
package final class ResourceBudget: Sendable {
    private struct State {
        var connections = 0
        var perUser: [UInt32: Int] = [:]
        var reservedBytes = 0
    }
    private let state = Mutex(State())
    package let limits: ConnectionLimits

    package init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Connections kept for users who hold few (at most ``fewConnections``): once the others have taken all but
    /// these, only such users are admitted, so that users who each stay within their own limit still cannot, together,
    /// shut another user out.
    package var reservedConnections: Int { min(limits.connections / 8, 64) }
    /// What counts as holding few connections, for ``reservedConnections``.
    package let fewConnections = 4

    /// Counts a new connection of `uid`; nil when it may open, else why not.
    package func admit(uid: UInt32) -> String? {
        state.withLock { s in
            if s.connections >= limits.connections {
                return "keychaind already serves \(limits.connections) connections"
            }
            let held = s.perUser[uid, default: 0]
            if held >= limits.connectionsPerUser {
                return "user \(uid) already has \(limits.connectionsPerUser) connections to keychaind"
            }
            if s.connections >= limits.connections - reservedConnections && held >= fewConnections {
                return "keychaind keeps its last \(reservedConnections) connections for users with fewer than \(fewConnections), and user \(uid) has \(held)"
            }
            s.connections += 1
            s.perUser[uid, default: 0] += 1
            return nil
        }
    }

    /// Forgets a connection that ``admit(uid:)`` counted.
    package func release(uid: UInt32) {
        state.withLock { s in
            s.connections -= 1
            let left = s.perUser[uid, default: 1] - 1
            s.perUser[uid] = left > 0 ? left : nil
        }
    }

    /// Reserves `bytes` for a frame in flight; false when that would pass ``ConnectionLimits/bufferedBytes``.
    package func reserve(_ bytes: Int) -> Bool {
        state.withLock { s in
            guard s.reservedBytes + bytes <= limits.bufferedBytes else { return false }
            s.reservedBytes += bytes
            return true
        }
    }

    /// Gives back a reservation.
    package func unreserve(_ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { $0.reservedBytes -= bytes }
    }

    /// Connections open and bytes reserved now.
    package var usage: (connections: Int, reservedBytes: Int) {
        state.withLock { ($0.connections, $0.reservedBytes) }
    }
}
