import Foundation

/// The task executor that runs the async work a synchronous API waits for (``waitBlocking(_:)``): threads of its own,
/// never Swift's cooperative pool.
///
/// A synchronous call that waits for a task on the pool deadlocks once every pool thread is such a caller: the pool
/// has as many threads as the machine has cores, and an app's async code calling `SecTrustEvaluateWithError` on each
/// of them leaves no thread for the verifiers they wait for. Work started here (and its child tasks, and the actors
/// it calls) runs on these threads instead, so blocking the caller cannot starve it.
///
/// A thread is started whenever a job arrives and none is idle (up to ``maximumThreads``, after which jobs wait their
/// turn), so nested waits do not starve each other either; a thread idle for ``idleLifetime`` ends.
package final class WaitingThreads: TaskExecutor, @unchecked Sendable {
    /// The executor every synchronous wait in the process shares.
    package static let shared = WaitingThreads()

    /// The most threads at once: enough for far more concurrent synchronous calls than a process makes.
    package static let maximumThreads = 64
    /// How long a thread waits for a job before it ends.
    package static let idleLifetime: TimeInterval = 10

    // `condition` guards the three fields below (hence @unchecked Sendable).
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var threads = 0

    private init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Each idle thread takes one queued job; a job no idle thread will take gets a new thread.
        let startThread = jobs.count > idle && threads < Self.maximumThreads
        if startThread { threads += 1 } else { condition.signal() }
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in runJobs() }
            thread.name = "keychain-wait"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty {
                idle += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: Self.idleLifetime))
                idle -= 1
                if !woken && jobs.isEmpty {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
