import Foundation
import KeychainBiometry
import KeychainCore
import KeychainDBus
import Testing

/// The verifier where fprintd is not: a private bus without it, and no bus at all.
@Suite(
    .enabled(if: Machine.hasDBusDaemon, "needs dbus-daemon (Debian package dbus-daemon) for a private bus"),
    .timeLimit(.minutes(10)))
struct FprintdAbsentTests {
    @Test func noFprintdOnTheBusIsUnavailableAtOnce() throws {
        let bus = try PrivateBus()
        let verifier = FprintdVerifier(busAddress: bus.address, username: "nobody", verifyTimeout: .seconds(30))
        let start = ContinuousClock.now
        #expect(!verifier.isAvailable())
        #expect(verifier.enrolledSetDigest() == nil)
        let outcome = verifier.verify(reason: "test")
        #expect(ContinuousClock.now - start < .seconds(10))
        guard case .unavailable(let why) = outcome else {
            Issue.record("expected unavailable, got \(outcome)")
            return
        }
        #expect(why.contains("fprintd is not running"))
    }

    @Test func noBusIsUnavailable() throws {
        let directory = try TemporaryDirectory()
        let verifier = FprintdVerifier(busAddress: "unix:path=\(directory.path)/no-bus", username: "nobody")
        #expect(!verifier.isAvailable())
        guard case .unavailable(let why) = verifier.verify(reason: "test") else {
            Issue.record("expected unavailable")
            return
        }
        #expect(why.contains("system bus cannot be reached"))
    }

    @Test func theDefaultUserIsTheEffectiveUser() {
        #expect(FprintdVerifier().username == FprintdVerifier.effectiveUserName())
        #expect(FprintdVerifier.effectiveUserName()?.isEmpty == false)
    }

    @Test func theDigestCoversTheReaderAndTheSortedFingerNames() {
        let one = FprintdReader(path: "/net/reactivated/Fprint/Device/0", name: "Reader", enrolledFingers: ["right-index-finger", "left-thumb"])
        let sameOtherOrder = FprintdReader(path: "/net/reactivated/Fprint/Device/1", name: "Reader", enrolledFingers: ["left-thumb", "right-index-finger"])
        let added = FprintdReader(path: one.path, name: "Reader", enrolledFingers: one.enrolledFingers + ["left-index-finger"])
        let otherReader = FprintdReader(path: one.path, name: "Other", enrolledFingers: one.enrolledFingers)
        #expect(one.enrolledSetDigest == sameOtherOrder.enrolledSetDigest)
        #expect(one.enrolledSetDigest.count == 32)
        #expect(one.enrolledSetDigest != added.enrolledSetDigest)
        #expect(one.enrolledSetDigest != otherReader.enrolledSetDigest)
    }
}

/// The verifier against the real fprintd (Debian's /usr/libexec/fprintd) on a private bus, with libfprint's virtual
/// device and python-dbusmock's polkitd template as a permissive polkit. One fprintd per test; one test at a time
/// (they start daemons).
@Suite(
    .serialized,
    .enabled(
        if: Machine.hasFprintd,
        "needs fprintd (/usr/libexec/fprintd, Debian package fprintd), dbus-daemon and python3-dbusmock (polkitd template) to run the real fprintd on a private bus"),
    .timeLimit(.minutes(10)))
struct FprintdVerifierTests {
    let user = FprintdVerifier.effectiveUserName() ?? "root"

    private func makeVerifier(_ fprintd: FprintdUnderTest, verifyTimeout: Duration = .seconds(20)) -> FprintdVerifier {
        FprintdVerifier(busAddress: fprintd.bus.address, username: user, verifyTimeout: verifyTimeout)
    }

    /// Runs `verify` on another thread while `scans` are fed to the virtual device (it listens once the verifier has
    /// claimed the reader; the commands wait in its queue until the verification reads them).
    private func verify(
        _ verifier: FprintdVerifier, _ fprintd: FprintdUnderTest, feeding scans: [String],
        timeout: Duration = .seconds(30)
    ) throws -> PromptOutcome<Bool> {
        let started = DispatchSemaphore(value: 0)
        let result = try onThread(timeout: timeout + .seconds(5)) { () -> PromptOutcome<Bool> in
            started.signal()
            return verifier.verify(reason: "test")
        } alongside: {
            _ = started.wait(timeout: .now() + 5)
            for scan in scans { try fprintd.device.send(scan) }
        }
        return result
    }

    @Test func listsEnrolledFingersAndTheDigestFollowsThem() throws {
        let fprintd = try FprintdUnderTest()
        let verifier = makeVerifier(fprintd)
        guard case .unavailable(let before) = verifier.status() else {
            Issue.record("a user without fingers should not be available")
            return
        }
        #expect(before.contains("No finger is enrolled"))
        #expect(!verifier.isAvailable())
        #expect(verifier.enrolledSetDigest() == nil)

        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        guard case .ready(let reader) = verifier.status() else {
            Issue.record("expected a ready reader: \(verifier.status())\n\(fprintd.fprintd.output.suffix(2000))")
            return
        }
        #expect(reader.enrolledFingers == ["right-index-finger"])
        #expect(reader.name == "Virtual device for debugging")
        #expect(verifier.isAvailable())
        let first = try #require(verifier.enrolledSetDigest())
        #expect(verifier.enrolledSetDigest() == first)
        #expect(first == reader.enrolledSetDigest)

        try fprintd.enrol("left-index-finger", print: "finger-two", user: user)
        let second = try #require(verifier.enrolledSetDigest())
        #expect(second != first)
        guard case .ready(let after) = verifier.status() else {
            Issue.record("expected a ready reader")
            return
        }
        #expect(Set(after.enrolledFingers) == ["right-index-finger", "left-index-finger"])
    }

    @Test func theEnrolledFingerMatches() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        let outcome = try verify(makeVerifier(fprintd), fprintd, feeding: ["SCAN finger-one"])
        guard case .answered(true) = outcome else {
            Issue.record("expected a match, got \(outcome)\n\(fprintd.fprintd.output.suffix(3000))")
            return
        }
    }

    @Test func anotherFingerDoesNotMatch() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        let outcome = try verify(makeVerifier(fprintd), fprintd, feeding: ["SCAN someone-else"])
        guard case .answered(false) = outcome else {
            Issue.record("expected no match, got \(outcome)\n\(fprintd.fprintd.output.suffix(3000))")
            return
        }
    }

    @Test func aRetryKeepsWaitingForTheFinger() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        // RETRY 1 is FP_DEVICE_RETRY_TOO_SHORT: fprintd says verify-swipe-too-short, not done.
        let outcome = try verify(makeVerifier(fprintd), fprintd, feeding: ["RETRY 1", "SCAN finger-one"])
        guard case .answered(true) = outcome else {
            Issue.record("expected a match after the retry, got \(outcome)\n\(fprintd.fprintd.output.suffix(3000))")
            return
        }
        #expect(fprintd.fprintd.output.contains("verify-swipe-too-short"))
    }

    @Test func noFingerTimesOutAndReleasesTheReader() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        let start = ContinuousClock.now
        let outcome = makeVerifier(fprintd, verifyTimeout: .seconds(1)).verify(reason: "test")
        #expect(ContinuousClock.now - start < .seconds(10))
        guard case .timedOut = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        // Released: another client can claim it now.
        let other = try fprintd.bus.connect()
        let path = try fprintd.devicePath(other)
        try other.call(
            destination: "net.reactivated.Fprint", path: path, interface: "net.reactivated.Fprint.Device",
            member: "Claim", [.string(user)])
        try other.call(
            destination: "net.reactivated.Fprint", path: path, interface: "net.reactivated.Fprint.Device",
            member: "Release")
    }

    @Test func aMatchFromAnotherConnectionDoesNotCount() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        let impostor = try fprintd.bus.connect()
        let path = try fprintd.devicePath(impostor)
        let started = DispatchSemaphore(value: 0)
        let verifier = makeVerifier(fprintd, verifyTimeout: .seconds(2))
        let outcome = try onThread(timeout: .seconds(15)) { () -> PromptOutcome<Bool> in
            started.signal()
            return verifier.verify(reason: "test")
        } alongside: {
            _ = started.wait(timeout: .now() + 5)
            // For a second, claim a match from another connection: broadcast, and sent to every connection on the bus
            // (the verifier's among them).
            let until = ContinuousClock.now + .seconds(1)
            while ContinuousClock.now < until {
                let match: [DBusValue] = [.string("verify-match"), .bool(true)]
                try impostor.emitSignal(path: path, interface: "net.reactivated.Fprint.Device", member: "VerifyStatus", match)
                for name in try impostor.listNames() where name.hasPrefix(":") && name != impostor.uniqueName {
                    try impostor.emitSignal(
                        path: path, interface: "net.reactivated.Fprint.Device", member: "VerifyStatus",
                        match, destination: name)
                }
                usleep(50_000)
            }
        }
        guard case .timedOut = outcome else {
            Issue.record("expected a timeout (no finger), got \(outcome)")
            return
        }
    }

    @Test func aReaderClaimedByAnotherProgramIsUnavailable() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        let other = try fprintd.bus.connect()
        let path = try fprintd.devicePath(other)
        try other.call(
            destination: "net.reactivated.Fprint", path: path, interface: "net.reactivated.Fprint.Device",
            member: "Claim", [.string(user)])
        let outcome = makeVerifier(fprintd).verify(reason: "test")
        guard case .unavailable(let why) = outcome else {
            Issue.record("expected unavailable, got \(outcome)")
            return
        }
        #expect(why.contains("in use by another program"))
    }

    @Test func polkitRefusingIsUnavailable() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        try fprintd.setPolkit(allowing: false)
        let verifier = makeVerifier(fprintd)
        #expect(!verifier.isAvailable())
        let outcome = verifier.verify(reason: "test")
        guard case .unavailable(let why) = outcome else {
            Issue.record("expected unavailable, got \(outcome)")
            return
        }
        #expect(why.contains("polkit denied"))
    }

    @Test func aReaderErrorIsUnavailable() throws {
        let fprintd = try FprintdUnderTest()
        try fprintd.enrol("right-index-finger", print: "finger-one", user: user)
        // ERROR 0 is FP_DEVICE_ERROR_GENERAL: fprintd ends the verification with verify-unknown-error.
        let outcome = try verify(makeVerifier(fprintd), fprintd, feeding: ["ERROR 0"])
        guard case .unavailable(let why) = outcome else {
            Issue.record("expected unavailable, got \(outcome)\n\(fprintd.fprintd.output.suffix(3000))")
            return
        }
        #expect(why.contains("verify-unknown-error"))
    }
}
