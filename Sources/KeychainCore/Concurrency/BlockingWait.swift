import Dispatch
import Synchronization

/// Runs async work to completion for a synchronous API: `body` runs on a task of its own while the calling thread
/// waits, the way every other ``KeychainEngine`` call blocks its caller.
///
/// The task runs on ``WaitingThreads`` (with its child tasks and the actors it calls), never on Swift's cooperative
/// pool: any thread may wait here, a pool thread included, without leaving `body` waiting for a thread.
package func waitBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws(KeychainError) -> T) throws(KeychainError) -> T {
    let outcome = Mutex<Result<T, KeychainError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task(executorPreference: WaitingThreads.shared) {
        let result: Result<T, KeychainError>
        do throws(KeychainError) {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    guard let result = outcome.withLock({ $0 }) else {
        throw KeychainError(code: .internal, message: "A background task ended without an answer. Try again.")
    }
    return try result.get()
}
