import Foundation
import NIOCore
import Synchronization

/// The open connections, so that a graceful shutdown can close the idle ones at once and let the busy
/// ones finish the request they are serving. Connections are registered only while the server is not draining.
package final class ConnectionTracker: Sendable {
    private struct State {
        var open: [ObjectIdentifier: (channel: any Channel, busy: Bool)] = [:]
        var draining = false
    }
    private let state = Mutex(State())
    /// `state.draining`, readable without the lock: a quick read checks only this.
    private let drainStarted = Atomic<Bool>(false)

    package init() {}

    /// Whether requests are still accepted: false once a graceful shutdown began. A request answered on the event
    /// loop checks this instead of marking its connection busy, since a close from ``drain()`` runs on that loop
    /// only after the answer is written.
    package var isAccepting: Bool { !drainStarted.load(ordering: .acquiring) }

    /// Registers an accepted channel (from the child channel initializer); false when the server is draining.
    package func opened(_ channel: any Channel) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[ObjectIdentifier(channel)] = (channel, false)
            return true
        }
    }

    package func closed(_ channel: any Channel) {
        _ = state.withLock { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Marks a connection busy; false when the server is shutting down (no new request starts).
    package func begin(_ channel: any Channel) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[ObjectIdentifier(channel)]?.busy = true
            return true
        }
    }

    /// Marks a connection idle again; false when it should now close (shutting down).
    package func end(_ channel: any Channel) -> Bool {
        state.withLock { s in
            s.open[ObjectIdentifier(channel)]?.busy = false
            return !s.draining
        }
    }

    /// Stops new connections and requests, and closes every idle connection.
    package func drain() {
        let idle: [any Channel] = state.withLock { s in
            s.draining = true
            drainStarted.store(true, ordering: .releasing)
            return s.open.values.filter { !$0.busy }.map(\.channel)
        }
        for channel in idle { channel.close(promise: nil) }
    }

    /// The connections still open (busy ones finishing their request).
    package var remaining: [any Channel] { state.withLock { $0.open.values.map(\.channel) } }
}
