import GRDB
import Synchronization

/// Read-only SQLite connections for the engine's reads, handed out from a lock-protected stack.
///
/// Every find is one SELECT. Through `DatabasePool.read`, GRDB's reader pool takes a semaphore and a
/// reader-writer lock built on a dispatch queue for each read, which cost as much as the SELECT itself; here an idle
/// connection is popped under a mutex. Each connection is a `DatabaseQueue` opened read-only on the same WAL
/// database as the pool (whose writer does every write), so a read sees the last committed state, as the pool's
/// readers do. When every connection is busy the read goes to the pool instead, so a burst never waits here.
final class ReadConnections: Sendable {
    private let path: String
    private let configuration: Configuration
    private struct State {
        var idle: [DatabaseQueue] = []
        var opened = 0
        /// Set by ``close()``: no connection is kept or opened after it.
        var closed = false
    }
    private let state = Mutex(State())
    /// The most connections kept; reads beyond go to the pool.
    let limit: Int

    init(path: String, configuration: Configuration, limit: Int) {
        var configuration = configuration
        configuration.readonly = true
        configuration.label = (configuration.label ?? "keychain") + ".read"
        self.path = path
        self.configuration = configuration
        self.limit = limit
    }

    /// Runs `body` on an idle connection outside any transaction (one statement is one snapshot), or on one of
    /// `pool`'s readers when none is idle and no more may be opened.
    func read<T>(fallback pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        guard let connection = take() else { return try pool.unsafeRead(body) }
        defer {
            let keep = state.withLock { state in
                if state.closed { return false }
                state.idle.append(connection)
                return true
            }
            if !keep { try? connection.close() }
        }
        return try connection.unsafeRead(body)
    }

    /// Closes the idle connections, and each busy one when its read ends, so that the last connection to the
    /// database goes with the engine's pool (SQLite then checkpoints and removes the write-ahead log).
    func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in idle { try? connection.close() }
    }

    /// An idle connection, a new one while fewer than ``limit`` are open, or nil.
    private func take() -> DatabaseQueue? {
        enum Next { case use(DatabaseQueue), open, none }
        let next: Next = state.withLock { state in
            if let connection = state.idle.popLast() { return .use(connection) }
            guard state.opened < limit, !state.closed else { return .none }
            state.opened += 1
            return .open
        }
        switch next {
        case .use(let connection):
            return connection
        case .none:
            return nil
        case .open:
            do {
                return try DatabaseQueue(path: path, configuration: configuration)
            } catch {
                // The pool's readers are still there; opening is tried again by a later read.
                state.withLock { $0.opened -= 1 }
                return nil
            }
        }
    }
}
