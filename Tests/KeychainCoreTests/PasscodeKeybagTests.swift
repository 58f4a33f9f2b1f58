import Foundation
import KeychainTestSupport
import Testing
import Crypto
@testable import KeychainCore

@Suite struct PasscodeKeybagTests {
    /// Cheap parameters, so the tests stay fast; real keybags use `PasscodeKDF.tuned()`.
    let kdf = PasscodeKDF(log2N: 10, parallelism: 2, salt: [UInt8](repeating: 0x5A, count: 32), calibratedMilliseconds: 321)

    @Test func passcodeProtectsEveryClassButAlways() throws {
        let bag = fixedKeybag()
        let bytes = try bag.encode(deviceKey: deviceKey, passcode: ("1234", kdf), random: CountingRandom(seed: 0))
        #expect(try Keybag.header(bytes).passcode == kdf)
        // Without the passcode only Always keys (and the metadata key) open: the keychain is locked.
        let locked = try Keybag.decode(bytes, deviceKey: deviceKey)
        #expect(Set(locked.classKeys.keys) == [.always, .alwaysThisDeviceOnly])
        #expect(locked.metadataKey.withUnsafeBytes { Array($0) } == [UInt8](repeating: 0x80, count: 32))
        // With it, all seven.
        let unlocked = try Keybag.decode(bytes, deviceKey: deviceKey, passcode: "1234")
        #expect(unlocked.classKeys.count == 7)
        for cls in ProtectionClass.allCases {
            #expect(unlocked.classKeys[cls]?.withUnsafeBytes { Array($0) } == [UInt8](repeating: cls.keybagID, count: 32))
        }
        // A wrong passcode is errSecAuthFailed, not a decode error.
        do {
            _ = try Keybag.decode(bytes, deviceKey: deviceKey, passcode: "1235")
            Issue.record("a wrong passcode opened the keybag")
        } catch {
            #expect(error.status == .authFailed)
        }
        // The passcode alone is not enough: the device key is part of the wrapping key.
        expectKeychainError(.authenticationFailed) { try Keybag.decode(bytes, deviceKey: SymmetricKey(size: .bits256), passcode: "1234") }
    }

    @Test func keybagFormatV3() throws {
        let bytes = try fixedKeybag().encode(
            deviceKey: deviceKey, passcode: ("1234", kdf),
            throttle: PasscodeThrottle(failures: 2, notBefore: 1_000_000_000),
            random: CountingRandom(seed: 0))
        #expect(hex(bytes.prefix(6)) == "534b4b420003")  // "SKKB", version 3
        #expect(hex(bytes) == Golden.keybagV3)
        let golden = unhex(Golden.keybagV3)
        let header = try Keybag.header(golden)
        #expect(header.version == 3)
        #expect(header.passcode == kdf, "the calibrated parameters, with their measured time, are recorded")
        #expect(header.passcode?.calibratedMilliseconds == 321)
        #expect(try Keybag.throttle(in: golden, deviceKey: deviceKey) == PasscodeThrottle(failures: 2, notBefore: 1_000_000_000))
        #expect(try Keybag.decode(golden, deviceKey: deviceKey, passcode: "1234").classKeys.count == 7)
    }

    @Test func version2KeybagsStillOpen() throws {
        // Written by the previous release (scrypt N = 2^10 here; 2^14 and up in real ones), never written now.
        let golden = unhex(Golden.keybagV2)
        let header = try Keybag.header(golden)
        #expect(header.version == 2)
        #expect(header.passcode == PasscodeKDF(log2N: 10, salt: [UInt8](repeating: 0x5A, count: 32)))
        #expect(header.throttleRecord == nil)
        let bag = try Keybag.decode(golden, deviceKey: deviceKey, passcode: "1234")
        for cls in ProtectionClass.allCases {
            #expect(bag.classKeys[cls]?.withUnsafeBytes { Array($0) } == [UInt8](repeating: cls.keybagID, count: 32))
        }
        expectKeychainError(.authenticationFailed) { try Keybag.decode(golden, deviceKey: deviceKey, passcode: "1235") }
    }

    @Test func theThrottleRecordIsAuthenticatedAndReplacedWithoutThePasscode() throws {
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey, passcode: ("1234", kdf))
        #expect(try Keybag.throttle(in: bytes, deviceKey: deviceKey) == PasscodeThrottle())
        // Recording a failure needs only the device key; the wrapped keys are carried over unchanged.
        let counted = try Keybag.replacingThrottle(in: bytes, with: PasscodeThrottle(failures: 7, notBefore: 42), deviceKey: deviceKey)
        #expect(try Keybag.throttle(in: counted, deviceKey: deviceKey) == PasscodeThrottle(failures: 7, notBefore: 42))
        #expect(counted.suffix(529) == bytes.suffix(529), "the entry count and the eight entries")
        #expect(try Keybag.decode(counted, deviceKey: deviceKey, passcode: "1234").classKeys.count == 7)
        // Any edited byte of the record fails authentication (the caller then counts the worst case).
        let recordOffset = 4 + 2 + 16 + 1 + 4 + kdf.encodedCalibrated.count + 4
        for offset in recordOffset..<recordOffset + 12 + 12 + 16 {
            var edited = counted
            edited[offset] ^= 0x01
            #expect(try Keybag.throttle(in: edited, deviceKey: deviceKey) == nil, "byte \(offset)")
        }
        // Another device key (a forged record) does not authenticate either.
        let forged = try Keybag.replacingThrottle(in: bytes, with: PasscodeThrottle(), deviceKey: SymmetricKey(size: .bits256))
        #expect(try Keybag.throttle(in: forged, deviceKey: deviceKey) == nil)
    }

    @Test func removingThePasscodeWritesVersion1Again() throws {
        let withPasscode = try fixedKeybag().encode(deviceKey: deviceKey, passcode: ("1234", kdf))
        let unlocked = try Keybag.decode(withPasscode, deviceKey: deviceKey, passcode: "1234")
        let without = try unlocked.encode(deviceKey: deviceKey)
        #expect(try Keybag.header(without).passcode == nil)
        #expect(try Keybag.decode(without, deviceKey: deviceKey).classKeys.count == 7)
    }

    @Test func tamperedParametersAreRejectedBeforeAnyWork() throws {
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey, passcode: ("1234", kdf))
        // The log2(N) byte follows magic, version, UUID, KDF kind and the parameters' length prefix.
        let log2NOffset = 4 + 2 + 16 + 1 + 4
        #expect(bytes[log2NOffset] == 10)
        var huge = bytes
        huge[log2NOffset] = 40  // 2^40 rounds: must be refused, not attempted
        expectKeychainError(.corruptData) { try Keybag.decode(huge, deviceKey: deviceKey, passcode: "1234") }
        // p is the last byte of the u32 after log2(N) and r: 2^22 · 8 · 64 would take minutes.
        var slow = bytes
        slow[log2NOffset] = 22
        slow[log2NOffset + 1 + 4 + 3] = 64
        expectKeychainError(.corruptData) { try Keybag.decode(slow, deviceKey: deviceKey, passcode: "1234") }
        var version1 = bytes
        version1[5] = 1  // a version-1 header cannot carry passcode-wrapped keys
        expectKeychainError(.corruptData) { try Keybag.decode(version1, deviceKey: deviceKey) }
    }

    @Test func tuningFollowsThePolicy() {
        let tuned = PasscodeKDF.tuned(policy: .testing)
        #expect(tuned.log2N >= 10 && tuned.log2N <= 20)
        #expect(tuned.blockSize == 8)
        #expect((1...64).contains(tuned.parallelism))
        #expect(tuned.calibratedMilliseconds >= 1)
        #expect(tuned.salt.count == 32)
    }

    /// What a real passcode gets on this machine: at least 64 MiB, p chosen for 250 ms, the time recorded.
    @Test func productionParametersUseAtLeast64MiB() throws {
        let tuned = PasscodeKDF.tuned(policy: .production)
        #expect(tuned.log2N >= 16)
        #expect(tuned.blockSize == 8)
        #expect(tuned.memory >= 64 << 20)
        #expect(tuned.parallelism >= 1)
        #expect(tuned.calibratedMilliseconds >= 1)
        print(
            "production passcode KDF on this machine: scrypt N=2^\(tuned.log2N) r=\(tuned.blockSize) p=\(tuned.parallelism), memory \(tuned.memory >> 20) MiB, one derivation \(tuned.calibratedMilliseconds) ms (target 250 ms)"
        )
        // Recorded in the keybag as they are.
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey, passcode: ("1234", tuned))
        #expect(try Keybag.header(bytes).passcode == tuned)
    }
}

@Suite struct BackupFormatTests {
    @Test func backupFormatV1() throws {
        let records = [
            BackupFormat.Record(itemClass: .genericPassword, attributes: ["acct": .string("alice"), "pdmn": .string("ak")], secret: .plain(Data("s3cret".utf8))),
            BackupFormat.Record(itemClass: .internetPassword, attributes: ["srvr": .string("example.com")], secret: .none),
        ]
        let kdf = PasscodeKDF(log2N: 10, salt: [UInt8](repeating: 0x33, count: 32))
        let bytes = try BackupFormat.encode(records, password: "pw", parameters: kdf, random: CountingRandom(seed: 7))
        #expect(hex(bytes) == Golden.backupV1)
        let decoded = try BackupFormat.decode(unhex(Golden.backupV1), password: "pw")
        #expect(decoded.map(\.itemClass) == [.genericPassword, .internetPassword])
        #expect(decoded.first?.attributes["acct"] == .string("alice"))
        if case .plain(let secret)? = decoded.first?.secret { #expect(secret == Data("s3cret".utf8)) } else { Issue.record("secret lost") }
    }
}
