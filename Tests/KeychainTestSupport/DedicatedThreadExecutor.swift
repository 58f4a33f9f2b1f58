import Foundation

/// A task executor with threads of its own, for a test whose async work (and the tasks the libraries it calls start,
/// which inherit the preference) must not queue behind the tests that block Swift's global pool while they wait for
/// processes. With two cores the pool has two threads, and a test that needed a turn on it has waited many minutes
/// there while the rest of the suite ran, until its HTTP exchange timed out.
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
