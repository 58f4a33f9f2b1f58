import Foundation
import GRDB
import Synchronization

/// What a keychain's writer has committed since it was made (``KeychainEngine/commitStatistics``).
package struct CommitStatistics: Sendable, Hashable {
    /// Write transactions committed: each one fsync.
    package var transactions: Int
    /// The writes those transactions held.
    package var writes: Int
    /// How long the writer was busy committing them, during which no other write could commit.
    package var serialTime: Duration

    package init(transactions: Int, writes: Int, serialTime: Duration) {
        self.transactions = transactions
        self.writes = writes
        self.serialTime = serialTime
    }
}

/// Runs every write of one keychain through one transaction at a time, and commits the writes that arrive
/// while another is committing together, in a single transaction (group commit).
///
/// A caller's write is acknowledged only after the transaction that holds it has committed with
/// `synchronous=FULL`, so it is durable when the call returns. Each write runs inside its own savepoint:
/// one that fails (a duplicate item, say) rolls back alone and reports its error, and the others commit.
/// If the commit itself fails, every write in it fails; none is acknowledged.
///
/// There is no writer thread. The first caller to arrive commits (the leader); callers arriving meanwhile
/// queue, and when the leader's commit is done the oldest of them leads the next batch with everything
/// queued by then. Under load, one fsync serves many writes.
final class GroupCommitWriter: Sendable {
    private final class Job: @unchecked Sendable {
        /// Cleared by the leader before it wakes the job's owner: the owner's closure must not outlive its call.
        var body: ((Database) throws -> Void)?
        // Written by the leader before `wake`, read by the owner after it: the semaphore orders them.
        var outcome: Result<Void, any Error>?
        let wake = DispatchSemaphore(value: 0)
        init(_ body: @escaping (Database) throws -> Void) { self.body = body }
    }

    private struct Queue {
        var pending: [Job] = []
        var leading = false
    }

    private let pool: DatabasePool
    private let queue = Mutex(Queue())
    private let committedTransactions = Atomic<Int>(0)
    /// Counts transactions that ended (committed or not), raised after each: a reader that saw one value before it
    /// read knows nothing was written since when it still sees it (see ``generation``).
    private let ended = Atomic<UInt64>(0)
    private let committedWrites = Atomic<Int>(0)
    /// Nanoseconds leaders spent committing: from taking a batch off the queue to handing the queue to the next
    /// leader. No other write can commit meanwhile, so this is the write path's serial time.
    private let serialNanoseconds = Atomic<UInt64>(0)

    /// Transactions committed, the writes they held, and the time the writer was busy committing them (its serial
    /// time), since the writer was made: writes over transactions is how many writes share each fsync, serial time
    /// over writes what each write holds every other back.
    var statistics: CommitStatistics {
        CommitStatistics(
            transactions: committedTransactions.load(ordering: .relaxed), writes: committedWrites.load(ordering: .relaxed),
            serialTime: .nanoseconds(Int64(clamping: serialNanoseconds.load(ordering: .relaxed))))
    }
    /// How many write transactions have ended. Read it before reading the database: while it has not changed,
    /// no write made through this writer can have changed what was read (caches over the store check it).
    var generation: UInt64 { ended.load(ordering: .acquiring) }

    /// The most writes one transaction holds; a longer queue is split so no transaction grows unbounded.
    let maximumBatch: Int

    init(pool: DatabasePool, maximumBatch: Int = 512) {
        self.pool = pool
        self.maximumBatch = maximumBatch
    }

    /// Runs `body` in a write transaction (possibly shared with other callers' writes) and returns once that
    /// transaction has committed, or throws `body`'s error or the commit's.
    func perform<T>(_ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var value: T?
            let job = Job { db in value = try body(db) }
            let lead = queue.withLock { q in
                q.pending.append(job)
                if q.leading { return false }
                q.leading = true
                return true
            }
            if !lead {
                job.wake.wait()
                // Woken either with an outcome (a leader committed this job) or to lead the next batch.
            }
            if job.outcome == nil { commitBatches() }
            guard let outcome = job.outcome else {
                throw KeychainError(code: .internal, message: "A keychain write was never committed.")
            }
            try outcome.get()
            guard let value else { throw KeychainError(code: .internal, message: "A keychain write produced no result.") }
            return value
        }
    }

    /// Commits one batch from the queue's head (which holds this thread's own job), then hands leadership to
    /// the next queued job, if any.
    private func commitBatches() {
        let started = DispatchTime.now().uptimeNanoseconds
        let batch: [Job] = queue.withLock { q in
            let n = min(q.pending.count, maximumBatch)
            let batch = Array(q.pending.prefix(n))
            q.pending.removeFirst(n)
            return batch
        }
        commit(batch)
        for job in batch { job.body = nil }
        let next: Job? = queue.withLock { q in
            if let first = q.pending.first { return first }
            q.leading = false
            return nil
        }
        // The next leader first, so the next commit starts while the finished jobs' owners are still waking (each
        // wake is a system call, and a batch may hold hundreds); the leader's own job needs no wake.
        next?.wake.signal()
        serialNanoseconds.add(DispatchTime.now().uptimeNanoseconds &- started, ordering: .relaxed)
        for job in batch.dropFirst() { job.wake.signal() }
    }

    private func commit(_ batch: [Job]) {
        defer { ended.add(1, ordering: .releasing) }
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    if batch.count == 1 {
                        // Alone in its transaction: its error rolls the transaction back.
                        try batch[0].body?(db)
                        batch[0].outcome = .success(())
                        return .commit
                    }
                    // Each job in a savepoint of its own, through statements prepared once per connection (GRDB's
                    // `inSavepoint` prepares its SAVEPOINT and RELEASE again for every job).
                    let savepoint = try db.cachedStatement(sql: "SAVEPOINT job")
                    let release = try db.cachedStatement(sql: "RELEASE SAVEPOINT job")
                    // A savepoint statement that fails leaves the transaction in doubt: it rolls back whole, and
                    // every job in it fails.
                    for job in batch {
                        try savepoint.execute()
                        do {
                            try job.body?(db)
                            job.outcome = .success(())
                        } catch {
                            job.outcome = .failure(error)
                            try db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT job").execute()
                        }
                        try release.execute()
                    }
                    return .commit
                }
            }
            committedTransactions.add(1, ordering: .relaxed)
            var succeeded = 0
            for job in batch { if case .success = job.outcome { succeeded += 1 } }
            committedWrites.add(succeeded, ordering: .relaxed)
        } catch {
            // Nothing in this transaction committed, including the jobs whose bodies succeeded.
            for job in batch {
                if case .failure = job.outcome { continue }
                job.outcome = .failure(error)
            }
        }
    }
}
