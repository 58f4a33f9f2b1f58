import Foundation
import KeychainTestSupport
import Testing
@testable import KeychainCore

/// Apple's rules for `SecAccessControlCreateWithFlags` (SecAccessControl.m), the operations each access control
/// guards, the stored form, and what a set of proven factors satisfies.
@Suite struct AccessControlTests {
    typealias Flags = AccessControlFlags

    @Test(arguments: [
        Flags.userPresence, .devicePasscode, .biometryAny, .biometryCurrentSet, .applicationPassword, .privateKeyUsage,
        [.userPresence, .applicationPassword], [.userPresence, .privateKeyUsage],
        [.devicePasscode, .biometryAny, .or], [.devicePasscode, .biometryCurrentSet, .and], [.devicePasscode, .biometryAny],
        [.privateKeyUsage, .devicePasscode], [.applicationPassword, .devicePasscode, .biometryAny, .or], [],
    ])
    func acceptsWhatAppleAccepts(_ flags: Flags) throws {
        let control = try AccessControl(protection: .whenUnlocked, flags: flags)
        #expect(control.flags == flags)
    }

    @Test(arguments: [
        Flags([.or, .and]), [.devicePasscode, .biometryAny, .or, .and],
        [.biometryAny, .biometryCurrentSet],
        [.userPresence, .devicePasscode], [.userPresence, .biometryAny], [.userPresence, .or], [.userPresence, .and],
    ])
    func rejectsWhatAppleRejects(_ flags: Flags) {
        expectKeychainError(.invalidParameter, status: .param) { try AccessControl(protection: .whenUnlocked, flags: flags) }
    }

    @Test func theConstraintsGuardDecryptionOrWithPrivateKeyUsageSigning() throws {
        let item = try AccessControl(protection: .whenUnlocked, flags: [.devicePasscode, .biometryAny, .or])
        #expect(item.constraint(for: .decrypt) == PresenceConstraint(factors: [.devicePasscode, .biometryAny], required: 1, applicationPassword: false))
        #expect(item.constraint(for: .sign).isOpen)
        #expect(item.constraint(for: .delete).isOpen)
        let both = try AccessControl(protection: .whenUnlocked, flags: [.devicePasscode, .biometryAny])
        #expect(both.constraint(for: .decrypt).required == 2)  // several constraints without .or: all of them (k of n, k = n)
        let key = try AccessControl(protection: .whenUnlockedThisDeviceOnly, flags: [.privateKeyUsage, .userPresence])
        #expect(key.constraint(for: .decrypt).isOpen)
        #expect(key.constraint(for: .sign).factors == [.userPresence])
        let password = try AccessControl(protection: .whenUnlocked, flags: [.applicationPassword])
        #expect(password.constraint(for: .decrypt) == PresenceConstraint(factors: [], required: 0, applicationPassword: true))
        #expect(password.isProtected)
        #expect(try !AccessControl(protection: .always, flags: []).isProtected)
    }

    /// The stored form is fixed: a change is a format change.
    @Test func storedFormGolden() throws {
        let control = try AccessControl(protection: .whenPasscodeSetThisDeviceOnly, flags: [.devicePasscode, .biometryAny, .or, .applicationPassword])
        #expect(hex(control.encoded) == "01000000008000401261" + "6b7075")
        #expect(AccessControl(encoded: control.encoded) == control)
        // Damaged or foreign bytes are not an access control.
        for bad in ["", "02000000000000000161" + "6b", "0100000000000000016a6b", "01000000000000c000616b"] {
            #expect(AccessControl(encoded: Data(unhex(bad))) == nil, "\(bad)")
        }
    }

    @Test func provenFactorsSatisfyAsAppleEvaluates() {
        let presence = PresenceConstraint(factors: [.userPresence], required: 1, applicationPassword: false)
        #expect(presence.isSatisfied(by: [.devicePasscode]))
        #expect(presence.isSatisfied(by: [.biometryAny]))
        #expect(!presence.isSatisfied(by: []))
        let either = PresenceConstraint(factors: [.devicePasscode, .biometryCurrentSet], required: 1, applicationPassword: false)
        #expect(either.isSatisfied(by: [.devicePasscode]))
        #expect(!either.isSatisfied(by: [.biometryAny]))  // any finger does not prove the enrolled set
        let both = PresenceConstraint(factors: [.devicePasscode, .biometryAny], required: 2, applicationPassword: false)
        #expect(!both.isSatisfied(by: [.devicePasscode]))
        #expect(both.isSatisfied(by: [.devicePasscode, .biometryCurrentSet]))
    }

    @Test func proofsAreBoundToProgramAndContextAndExpire() {
        let ledger = PresenceLedger()
        let context = AuthenticationContextID.random()
        let now = Date()
        ledger.record(program: "exe:/usr/bin/a#1", context: context, factors: [.devicePasscode], expires: now.addingTimeInterval(10))
        #expect(ledger.factors(program: "exe:/usr/bin/a#1", context: context, now: now) == [.devicePasscode])
        #expect(ledger.factors(program: "exe:/usr/bin/b#1", context: context, now: now).isEmpty)
        #expect(ledger.factors(program: "exe:/usr/bin/a#2", context: context, now: now).isEmpty)
        #expect(ledger.factors(program: "exe:/usr/bin/a#1", context: .random(), now: now).isEmpty)
        #expect(ledger.factors(program: "exe:/usr/bin/a#1", context: context, now: now.addingTimeInterval(11)).isEmpty)
        ledger.record(program: "p", context: context, factors: [.devicePasscode], expires: now.addingTimeInterval(10))
        ledger.invalidate(program: "q", context: context)  // another program cannot invalidate it
        #expect(ledger.count == 1)
        #expect(ledger.removeAll() == 1)
    }

    @Test func theLedgerIsBounded() {
        let ledger = PresenceLedger()
        let now = Date()
        for i in 0..<PresenceLedger.capacity + 10 {
            ledger.record(program: "p\(i)", context: .random(), factors: [.devicePasscode], expires: now.addingTimeInterval(Double(i)))
        }
        #expect(ledger.count == PresenceLedger.capacity)
    }
}

/// An application password's envelope: fixed bytes, the password needed, nothing else opens it.
@Suite struct ApplicationPasswordSealTests {
    @Test func envelopeGolden() throws {
        let uuid = Data(repeating: 0xAB, count: 16)
        let sealed = try ApplicationPasswordSeal.seal(
            Data("s3cret".utf8), password: Data("pw".utf8), uuid: uuid, log2N: 10,
            random: CountingRandom(seed: 0x20))
        #expect(hex(sealed) == Golden.applicationPasswordEnvelopeV1)
        #expect(try ApplicationPasswordSeal.open(Data(unhex(Golden.applicationPasswordEnvelopeV1)), password: Data("pw".utf8), uuid: uuid) == Data("s3cret".utf8))
    }

    @Test func aWrongPasswordOrAnotherItemIsRefused() throws {
        let uuid = Data(repeating: 1, count: 16)
        let sealed = try ApplicationPasswordSeal.seal(Data("s3cret".utf8), password: Data("pw".utf8), uuid: uuid, log2N: 10, random: SystemRandom())
        expectKeychainError(.authenticationFailed, status: .authFailed) { try ApplicationPasswordSeal.open(sealed, password: Data("PW".utf8), uuid: uuid) }
        expectKeychainError(.authenticationFailed, status: .authFailed) {
            try ApplicationPasswordSeal.open(sealed, password: Data("pw".utf8), uuid: Data(repeating: 2, count: 16))
        }
        // A truncated envelope, or parameters no honest envelope has (a huge scrypt cost), is damage.
        expectKeychainError(.corruptData, status: .decode) { try ApplicationPasswordSeal.open(sealed.prefix(5), password: Data("pw".utf8), uuid: uuid) }
        var hostile = Data([1]) + Data([0, 0, 0, 29, 40, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 16]) + Data(repeating: 0, count: 16)
        hostile += Data(repeating: 0, count: 40)
        expectKeychainError(.corruptData, status: .decode) { try ApplicationPasswordSeal.open(hostile, password: Data("pw".utf8), uuid: uuid) }
    }
}
