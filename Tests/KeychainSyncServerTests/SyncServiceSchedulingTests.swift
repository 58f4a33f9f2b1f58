#if Network
import KeychainCore
@testable import KeychainSyncClient
import Synchronization
import Testing

/// How the sync service schedules its work: the serial lane commands and rounds share, the wakeup its loops wait
/// on, and its retry delays. (A broken wait shows as the time limit, not as a timing assertion; the limit leaves room
/// for a suite on two cores whose other tests hold the cooperative threads for a while.)
@Suite("Sync service scheduling", .timeLimit(.minutes(10)))
struct SyncServiceSchedulingTests {
    @Test("The lane runs one piece of work at a time, and a piece that throws lets the next run")
    func laneIsSerial() async throws {
        let lane = SyncLane()
        let inside = Inside()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try? await lane.run { () async throws(KeychainError) in
                        inside.state.withLock {
                            $0.now += 1; $0.most = max($0.most, $0.now)
                        }
                        await Task.yield()
                        inside.state.withLock {
                            $0.now -= 1; $0.done += 1
                        }
                        if index.isMultiple(of: 3) { throw KeychainError(code: .io, message: "piece \(index) fails") }
                    }
                }
            }
        }
        #expect(inside.state.withLock { $0.most } == 1)
        #expect(inside.state.withLock { $0.done } == 64)
        #expect(try await lane.run { () throws(KeychainError) in 7 } == 7)
    }

    @Test("A wakeup signalled before the wait ends it at once; so do the deadline and cancellation")
    func wakeup() async throws {
        let wakeup = SyncWakeup()
        let far = ContinuousClock.now + .seconds(3600)
        wakeup.signal()
        wakeup.signal()
        await wakeup.wait(until: far)  // the two signals count as one, and end this wait
        await wakeup.wait(until: .now)  // a deadline already past
        let waiting = Task { await wakeup.wait(until: far) }
        waiting.cancel()
        await waiting.value
        // A signal from elsewhere, whether it comes before the loop waits or while it does.
        let woken = Task { await wakeup.wait(until: far) }
        wakeup.signal()
        await woken.value
    }

    /// How many pieces of work are inside the lane, the most there were at once, and how many ended.
    final class Inside: Sendable {
        let state = Mutex((now: 0, most: 0, done: 0))
    }

    @Test("Failed rounds are retried after 1 s, doubling up to 5 minutes; push reconnects wait half to all of 1 s doubling up to 60 s")
    func retryDelays() {
        #expect(
            (1...12).map { SyncService.retryDelay(afterFailures: $0) }
                == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300].map { Duration.seconds($0) })
        #expect(SyncService.retryDelay(afterFailures: 1000) == .seconds(300))
        for attempt in 1...12 {
            let full = Duration.seconds(min(60, 1 << (attempt - 1)))
            for _ in 0..<20 {
                let delay = SyncService.pushRetryDelay(attempt: attempt)
                #expect(delay >= full / 2 && delay <= full, "attempt \(attempt): \(delay)")
            }
        }
    }
}
#endif
