import Foundation
import KeychainClient
import KeychainCore
import KeychainTestSupport
import Synchronization
import Testing

/// Clocks a test moves by hand: time since boot, and time spent suspended (which a real suspend adds to both).
final class HandClocks: Sendable {
    private let state = Mutex((sinceBoot: 1000.0, suspended: 0.0))

    var clocks: LockClocks {
        LockClocks(sinceBoot: { self.state.withLock { $0.sinceBoot } }, suspended: { self.state.withLock { $0.suspended } })
    }

    /// Time passes with the machine awake.
    func pass(_ seconds: Double) { state.withLock { $0.sinceBoot += seconds } }

    /// The machine sleeps for `seconds`.
    func sleep(_ seconds: Double) {
        state.withLock {
            $0.sinceBoot += seconds
            $0.suspended += seconds
        }
    }
}

/// A real keychain in a temporary folder, opened in this process with hand-moved clocks, with a passcode and one
/// WhenUnlocked item.
struct AutoLockFixture {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("autolock-\(UUID().uuidString)").path
    let clocks = HandClocks()
    let engine: KeychainEngine
    let keychain: InProcessKeychain

    init(defaultIdleTimeout: Double? = 600) throws {
        engine = try KeychainEngine(location: KeychainLocation(home: root), defaultIdleTimeout: defaultIdleTimeout, clocks: clocks.clocks)
        keychain = InProcessKeychain(engine: engine, caller: AccessPolicy(groups: ["com.example.app"]))
        try keychain.changePasscode(from: nil, to: "pw-1")
        _ = try keychain.secItemAdd(["class": .string("genp"), "acct": .string("a"), "svce": .string("s"), "v_Data": .data(Data("x".utf8))])
    }

    /// Reads the WhenUnlocked item's secret: a use of the keychain.
    func read() throws(KeychainError) {
        _ = try keychain.secItemCopyMatching(["class": .string("genp"), "acct": .string("a"), "r_Data": .bool(true)])
    }

    func settings(_ settings: KeychainSettings) throws { try keychain.setSettings(settings) }

    func remove() {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// `set-keychain-settings -t` and `-l` applied by an engine opened in this process, as keychaind applies them.
@Suite struct AutoLockTests {
    @Test func locksAfterTheSettingsIdleTimeSinceLastUse() throws {
        let f = try AutoLockFixture()
        defer { f.remove() }
        try f.settings(KeychainSettings(idleTimeout: 60))
        f.clocks.pass(59)
        try f.read()
        f.clocks.pass(59)
        try f.read()  // each use starts the idle time again
        #expect(f.engine.lockState == .unlocked)
        f.clocks.pass(60)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { try f.read() }
        #expect(f.engine.lockState == .locked)
        // An unlock is a use: the next call finds it unlocked.
        try f.keychain.unlock(passcode: "pw-1")
        try f.read()
        // Time asleep counts as idle time.
        f.clocks.sleep(120)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { try f.read() }
    }

    @Test func withoutSettingsTheEnginesDefaultApplies() throws {
        let f = try AutoLockFixture(defaultIdleTimeout: 600)
        defer { f.remove() }
        f.clocks.pass(599)
        try f.read()
        f.clocks.pass(600)
        #expect(f.engine.lockIdleTimeout == 600)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { try f.read() }

        let never = try AutoLockFixture(defaultIdleTimeout: nil)
        defer { never.remove() }
        never.clocks.pass(100_000)
        try never.read()
        #expect(never.engine.lockIdleTimeout == nil)
    }

    @Test func settingsWithoutATimeoutNeverLockOnTheirOwn() throws {
        let f = try AutoLockFixture(defaultIdleTimeout: 1)
        defer { f.remove() }
        try f.settings(KeychainSettings(idleTimeout: nil, lockOnSleep: false))
        f.clocks.pass(100_000)
        f.clocks.sleep(3600)
        try f.read()
        #expect(f.engine.lockState == .unlocked)
    }

    @Test func lockOnSleepLocksWhenTheMachineWasSuspended() throws {
        let f = try AutoLockFixture()
        defer { f.remove() }
        try f.settings(KeychainSettings(idleTimeout: nil, lockOnSleep: true))
        f.clocks.pass(5)
        try f.read()
        f.clocks.sleep(30)
        // keychaind's periodic check (not a use) notices the suspend before any caller comes.
        f.engine.applyLockSettings(countingAsUse: false)
        #expect(f.engine.lockState == .locked)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { try f.read() }
        try f.keychain.unlock(passcode: "pw-1")
        try f.read()
        // A suspend before the unlock does not lock again after it; a new one does.
        f.clocks.pass(1)
        try f.read()
        f.clocks.sleep(2)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { try f.read() }
    }

    @Test func withoutLockOnSleepASuspendShorterThanTheTimeoutKeepsTheUnlock() throws {
        let f = try AutoLockFixture()
        defer { f.remove() }
        try f.settings(KeychainSettings(idleTimeout: 3600, lockOnSleep: false))
        f.clocks.sleep(600)
        try f.read()
        #expect(f.engine.lockState == .unlocked)
    }

    @Test func periodicChecksDoNotCountAsUse() throws {
        let f = try AutoLockFixture()
        defer { f.remove() }
        try f.settings(KeychainSettings(idleTimeout: 10))
        for _ in 0..<9 {
            f.clocks.pass(1)
            f.engine.applyLockSettings(countingAsUse: false)
        }
        #expect(f.engine.lockState == .unlocked)
        f.clocks.pass(1)
        f.engine.applyLockSettings(countingAsUse: false)
        #expect(f.engine.lockState == .locked)
    }

    @Test func theMachinesClocksMeasureSuspendedTime() {
        let clocks = LockClocks.system
        let (boot, suspended) = (clocks.sinceBoot(), clocks.suspended())
        #expect(boot > 0)
        #expect(suspended >= 0 && suspended <= boot)
        #expect(clocks.sinceBoot() >= boot)
        #expect(clocks.suspended() - suspended < 0.5, "no suspend between two readings")
    }
}
