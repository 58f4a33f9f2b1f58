import Foundation
import Synchronization
import Crypto
import KeychainTestSupport
import Testing
@testable import KeychainCore

/// The wrong-passcode throttle lives in the keybag: deleting or editing files does not reset it.
@Suite struct PasscodeThrottleTests {
    final class Folder: @unchecked Sendable {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("throttle-\(UUID().uuidString)").path
        var location: KeychainLocation { KeychainLocation(home: path) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    final class Clock: Sendable {
        let seconds = Mutex(1_900_000_000.0)
        var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    static func engine(_ folder: Folder, _ clock: Clock) throws -> KeychainEngine {
        try KeychainEngine(location: folder.location, now: { clock.now }, tpm: nil, passcodePolicy: .testing)
    }

    static func keybag(_ folder: Folder) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder.location.keybagPath)))
    }

    @Test func deletingOrEditingFilesDoesNotResetTheThrottle() throws {
        let folder = Folder()
        let clock = Clock()
        let first = try Self.engine(folder, clock)
        try first.changePasscode(from: nil, to: "1234")
        for _ in 1...5 {
            expectKeychainError(.authenticationFailed, status: .authFailed) { try first.unlock(passcode: "0000") }
        }
        let device = try first.deviceKey()
        #expect(try Keybag.throttle(in: Self.keybag(folder), deviceKey: device)?.failures == 5)
        #expect(!FileManager.default.fileExists(atPath: folder.location.throttlePath), "no separate file to delete")

        // The attack of the previous release: delete keychain.throttle (and anything else that is not the
        // keychain), restart, and try again at once. The count is still there.
        try? FileManager.default.removeItem(atPath: folder.location.throttlePath)
        let restarted = try Self.engine(folder, clock)
        let throttled = expectKeychainError(.authenticationFailed, status: .authFailed) { try restarted.unlock(passcode: "1234") }
        #expect(throttled?.message == "Too many wrong passcodes. Try again in 60 seconds.")
        #expect(restarted.lockState == .beforeFirstUnlock)

        // Editing the count inside the keybag is detected and counts as the worst case: an hour.
        var bytes = try Self.keybag(folder)
        let header = try Keybag.header(bytes)
        let recordStart = try #require(header.throttleRecord?.startIndex)
        bytes[recordStart + 12] ^= 0x05  // the first byte of the sealed failure count
        try Data(bytes).write(to: URL(fileURLWithPath: folder.location.keybagPath))
        let edited = try Self.engine(folder, clock)
        let worst = expectKeychainError(.authenticationFailed, status: .authFailed) { try edited.unlock(passcode: "1234") }
        #expect(worst?.message == "Too many wrong passcodes. Try again in 3600 seconds.")
        #expect(try Keybag.throttle(in: Self.keybag(folder), deviceKey: device) == PasscodeThrottle(failures: 9, notBefore: clock.now.timeIntervalSince1970 + 3600))

        // A keybag without its record's neighbours is no keychain: deleting the keybag resets nothing either.
        let saved = try Self.keybag(folder)
        try FileManager.default.removeItem(atPath: folder.location.keybagPath)
        expectKeychainError(.notAvailable) { try Self.engine(folder, clock) }
        try Data(saved).write(to: URL(fileURLWithPath: folder.location.keybagPath))

        // Once the hour is over, the right passcode unlocks and the count starts again.
        clock.advance(3601)
        let later = try Self.engine(folder, clock)
        try later.unlock(passcode: "1234")
        #expect(later.lockState == .unlocked)
        #expect(try Keybag.throttle(in: Self.keybag(folder), deviceKey: device) == PasscodeThrottle())
    }

    /// A keychain whose keybag the previous release wrote (version 2: scrypt N = 2^10 here, the count in
    /// `keychain.throttle`) honours that count, and is rewritten as version 3 at its first unlock.
    @Test func aVersion2KeybagIsUpgradedAtItsFirstUnlock() throws {
        let folder = Folder()
        let clock = Clock()
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileSystem.writeAtomically(deviceKey.withUnsafeBytes { Array($0) }, to: folder.location.deviceKeyPath, exclusive: true)
        try FileSystem.writeAtomically(unhex(Golden.keybagV2), to: folder.location.keybagPath, exclusive: true)
        try PasscodeThrottle(failures: 2, notBefore: 0).save(folder.location)

        let engine = try Self.engine(folder, clock)
        #expect(engine.lockState == .beforeFirstUnlock)
        expectKeychainError(.authenticationFailed, status: .authFailed) { try engine.unlock(passcode: "0000") }
        #expect(try PasscodeThrottle.load(folder.location).failures == 3, "the old file's count goes on until the upgrade")
        #expect(try Keybag.header(Self.keybag(folder)).version == 2)

        try engine.unlock(passcode: "1234")
        let header = try Keybag.header(Self.keybag(folder))
        #expect(header.version == 3)
        let parameters = try #require(header.passcode)
        #expect(parameters.salt != [UInt8](repeating: 0x5A, count: 32), "a fresh salt")
        #expect(parameters.calibratedMilliseconds >= 1, "calibrated now, the time recorded")
        #expect(!FileManager.default.fileExists(atPath: folder.location.throttlePath))
        // The same keys, under the same passcode, in a new process.
        let reopened = try Self.engine(folder, clock)
        try reopened.unlock(passcode: "1234")
        let bag = try Keybag.decode(Self.keybag(folder), deviceKey: deviceKey, passcode: "1234")
        for cls in ProtectionClass.allCases {
            #expect(bag.classKeys[cls]?.withUnsafeBytes { Array($0) } == [UInt8](repeating: cls.keybagID, count: 32))
        }
    }

    @Test func aNewPasscodeIsCalibratedAndRecorded() throws {
        let folder = Folder()
        let engine = try Self.engine(folder, Clock())
        try engine.changePasscode(from: nil, to: "1234")
        let header = try Keybag.header(Self.keybag(folder))
        #expect(header.version == 3)
        #expect(header.passcode?.log2N == PasscodeKDF.Policy.testing.minimumLog2N)
        #expect((header.passcode?.calibratedMilliseconds ?? 0) >= 1)
        try engine.changePasscode(from: "1234", to: nil)
        #expect(try Keybag.header(Self.keybag(folder)).version == 1)
    }
}
