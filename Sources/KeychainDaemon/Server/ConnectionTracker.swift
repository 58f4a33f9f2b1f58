import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The open connections, so that a graceful shutdown can close the idle ones at once and let the busy ones finish
/// the request they are serving. A connection's descriptor is closed here, under the same lock that a shutdown
/// takes, so a shutdown never touches a descriptor number that has since been reused.
package final class ConnectionTracker: Sendable {
    private struct State {
        var open: [Int32: Bool] = [:]  // descriptor → busy
        var draining = false
        /// When the last connection closed (monotonic nanoseconds), or the tracker was made.
        var lastClosed = DispatchTime.now().uptimeNanoseconds
    }
    private let state = Mutex(State())
    private let allClosed = Mutex<[CheckedContinuation<Void, Never>]>([])

    package init() {}

    /// Whether requests are still accepted: false once a graceful shutdown began.
    package var isAccepting: Bool { state.withLock { !$0.draining } }

    /// Registers an accepted connection; false when the server is draining (the caller closes it).
    package func opened(_ fd: Int32) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[fd] = false
            return true
        }
    }

    /// Closes a registered connection's descriptor and forgets it.
    package func close(_ fd: Int32) {
        let last: Bool = state.withLock { s in
            guard s.open.removeValue(forKey: fd) != nil else { return false }
            _ = Glibc.close(fd)
            s.lastClosed = DispatchTime.now().uptimeNanoseconds
            return s.draining && s.open.isEmpty
        }
        if last { resumeWaiters() }
    }

    /// Marks a connection busy; false when the server is shutting down (no new request starts).
    package func begin(_ fd: Int32) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[fd] = true
            return true
        }
    }

    /// Marks a connection idle again; false when it should now close (shutting down).
    package func end(_ fd: Int32) -> Bool {
        state.withLock { s in
            if s.open[fd] != nil { s.open[fd] = false }
            return !s.draining
        }
    }

    /// Stops new connections and requests, and wakes every idle connection so that it closes.
    package func drain() {
        state.withLock { s in
            s.draining = true
            for (fd, busy) in s.open where !busy { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Waits until every connection has closed (call after ``drain()``).
    package func waitUntilAllClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            allClosed.withLock { $0.append(continuation) }
            if state.withLock({ $0.open.isEmpty }) { resumeWaiters() }
        }
    }

    /// How long no connection has been open; nil while one is.
    package var idleFor: Duration? {
        state.withLock { s in
            guard s.open.isEmpty else { return nil }
            return .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- s.lastClosed))
        }
    }

    /// The connections still open.
    package var count: Int { state.withLock { $0.open.count } }

    private func resumeWaiters() {
        let waiters = allClosed.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for waiter in waiters { waiter.resume() }
    }
}
