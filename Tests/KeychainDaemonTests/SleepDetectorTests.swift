import Foundation
import KeychainCore
import Logging
import Synchronization
import Testing
@testable import KeychainDaemon

/// keychaind's lock-on-sleep trigger, driven by clocks the test controls.
@Suite struct SleepDetectorTests {
    final class FakeClocks: Sendable {
        let now = Mutex<(boot: Double, monotonic: Double)>((1_000, 900))
        func advance(awake: Double, asleep: Double = 0) {
            now.withLock { $0 = ($0.boot + awake + asleep, $0.monotonic + awake) }
        }
    }

    @Test func aSuspendIsSeenOnceAndOrdinaryTimeIsNot() {
        let clocks = FakeClocks()
        var detector = SleepDetector(clocks: { clocks.now.withLock { $0 } })
        clocks.advance(awake: 30)
        let slept1 = detector.sleptSinceLastCheck()
        #expect(!slept1, "time awake is not sleep")
        clocks.advance(awake: 1, asleep: 600)
        let slept2 = detector.sleptSinceLastCheck()
        #expect(slept2, "ten minutes suspended")
        let slept3 = detector.sleptSinceLastCheck()
        #expect(!slept3, "each sleep is reported once")
        clocks.advance(awake: 1, asleep: 0.5)
        let slept4 = detector.sleptSinceLastCheck()
        #expect(!slept4, "a blip below the threshold is not a sleep")
    }

    @Test func theSystemClocksAreReadable() {
        let now = SleepDetector.systemClocks()
        #expect(now.boot + 0.01 >= now.monotonic, "boot time includes every second the monotonic clock counts")
        var detector = SleepDetector()
        let slept5 = detector.sleptSinceLastCheck()
        #expect(!slept5)
    }
}

/// The lock itself: an unlocked keychain locks on the first check after a suspend, only with lock-on-sleep on.
@Suite struct SuspendLockTests {
    @Test func aSuspendLocksTheKeychainWhenAskedTo() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("suspend-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let engine = try KeychainEngine(location: KeychainLocation(home: home))
        try engine.changePasscode(from: nil, to: "1234")
        try engine.unlock(passcode: "1234")
        let clocks = SleepDetectorTests.FakeClocks()
        let lock = SuspendLock(detector: SleepDetector(clocks: { clocks.now.withLock { $0 } }))
        let logger = Logger(label: "suspend-test")

        clocks.advance(awake: 1, asleep: 300)
        lock.lockIfSlept(engine, logger: logger)
        #expect(engine.lockState == .unlocked, "lock-on-sleep is off")

        lock.isEnabled = true
        clocks.advance(awake: 5)
        lock.lockIfSlept(engine, logger: logger)
        #expect(engine.lockState == .unlocked, "no suspend since the last check")
        clocks.advance(awake: 1, asleep: 60)
        lock.lockIfSlept(engine, logger: logger)
        #expect(engine.lockState == .locked)
        try engine.close()
    }
}
