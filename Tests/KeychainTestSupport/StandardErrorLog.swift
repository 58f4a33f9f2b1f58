import Foundation

/// What a child process writes to standard error, collected by a thread of its own, and a signal once it shows that
/// the process is ready (or ended without saying so). Held apart from the process's wrapper, so that the reading
/// thread does not keep the wrapper alive (its deinit stops the process).
final class StandardErrorLog: @unchecked Sendable {
    private let lock = NSCondition()
    private var collected = ""
    private var ended = false
    private let ready = DispatchSemaphore(value: 0)

    /// Everything read so far.
    var text: String { lock.withLock { collected } }

    /// Reads `pipe` until it closes, signalling once `isReady` holds for the text read so far.
    func follow(_ pipe: Pipe, isReady: @escaping @Sendable (String) -> Bool) {
        let reader = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            var signalled = false
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                let text = lock.withLock {
                    collected += String(decoding: chunk, as: UTF8.self)
                    lock.broadcast()
                    return collected
                }
                if !signalled, isReady(text) {
                    signalled = true
                    ready.signal()
                }
            }
            if !signalled { ready.signal() }
            lock.withLock {
                ended = true
                lock.broadcast()
            }
        }
    }

    /// Waits up to `timeout` for `text` to be written; false when it was not (in time, or before the process ended).
    func waitFor(_ text: String, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        return lock.withLock {
            while !collected.contains(text) {
                if ended || !lock.wait(until: deadline) { return collected.contains(text) }
            }
            return true
        }
    }

    /// Waits up to `seconds` for the process to be ready or to end; false when neither happened in time.
    func waitUntilReady(seconds: Int = 60) -> Bool {
        ready.wait(timeout: .now() + .seconds(seconds)) == .success
    }
}
