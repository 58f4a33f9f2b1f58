import Foundation
import KeychainTestSupport
import Testing
import Crypto
@testable import KeychainCore

@Suite struct PasscodeKeybagTests {
    /// Cheap parameters, so the tests stay fast; real keybags use `PasscodeKDF.tuned()`.
    let kdf = PasscodeKDF(log2N: 10, salt: [UInt8](repeating: 0x5A, count: 32))

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

    @Test func keybagFormatV2() throws {
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey, passcode: ("1234", kdf), random: CountingRandom(seed: 0))
        #expect(hex(bytes.prefix(6)) == "534b4b420002") // "SKKB", version 2
        #expect(hex(bytes) == Golden.keybagV2)
        #expect(try Keybag.decode(unhex(Golden.keybagV2), deviceKey: deviceKey, passcode: "1234").classKeys.count == 7)
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
        huge[log2NOffset] = 40 // 2^40 rounds: must be refused, not attempted
        expectKeychainError(.corruptData) { try Keybag.decode(huge, deviceKey: deviceKey, passcode: "1234") }
        var version1 = bytes
        version1[5] = 1 // a version-1 header cannot carry passcode-wrapped keys
        expectKeychainError(.corruptData) { try Keybag.decode(version1, deviceKey: deviceKey) }
    }

    @Test func tuningStaysWithinBounds() {
        let tuned = PasscodeKDF.tuned(target: 0.02)
        #expect((14 ... 20).contains(tuned.log2N))
        #expect(tuned.salt.count == 32)
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
