import Foundation
import Synchronization

/// A task executor with threads of its own, for a test whose async work (and the tasks the libraries it calls start,
/// which inherit the preference) must not queue behind the tests that block Swift's global pool while they wait for
/// processes. With two cores that pool has a handful of threads; in a full run an async test's body has waited there
/// for many minutes, once until its HTTP exchange timed out. A synchronous test that runs its async work with
/// ``runBlocking(_:)`` starts as the blocking tests do and never needs a turn on the pool.
public final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor the tests share: four threads that do nothing else.
    public static let shared = DedicatedThreadExecutor(threads: 4, name: "test-executor")

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    /// Starts `threads` threads named `name-N` that run the jobs enqueued here, first in first out, for as long as the
    /// process runs.
    public init(threads: Int, name: String) {
        for index in 0..<max(threads, 1) {
            let thread = Thread { [self] in runJobs() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs `body` in a task that starts on this executor (and whose child and unstructured tasks prefer it), and
    /// waits for it on the calling thread.
    public func runBlocking<T: Sendable>(_ body: sending @escaping () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, any Error>?>(nil)
        Task(executorPreference: self) {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw TestProcessError("the task ended without a result") }
        return try result.get()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
