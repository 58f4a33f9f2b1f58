import KeychainClient
import Foundation
import KeychainTestSupport
import Testing
import Crypto
import GRDB
import KeychainServices
@testable import KeychainCore

/// A clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: Double) { lock.withLock { current += seconds } }
}

@Suite struct LockStateTests {
    /// Each class's name and its `kSecAttrAccessible…` value.
    static let classes: [(String, String)] = [
        ("ak", kSecAttrAccessibleWhenUnlocked as String), ("ck", kSecAttrAccessibleAfterFirstUnlock as String),
        ("dk", kSecAttrAccessibleAlways as String), ("aku", kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String),
        ("cku", kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String), ("dku", kSecAttrAccessibleAlwaysThisDeviceOnly as String),
        ("akpu", kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String),
    ]

    /// Which classes each state makes available (issue 3's table).
    static let available: [LockState: Set<String>] = [
        .noPasscode: ["ak", "ck", "dk", "aku", "cku", "dku"],  // akpu items cannot exist without a passcode
        .unlocked: ["ak", "ck", "dk", "aku", "cku", "dku", "akpu"],
        .locked: ["ck", "dk", "cku", "dku"],
        .beforeFirstUnlock: ["dk", "dku"],
    ]

    /// Reads and writes one item of every class through the SecItem API as `engine`, checking each status.
    func checkAvailability(_ engine: KeychainEngine, expected state: LockState, present: Set<String>) {
        #expect(engine.lockState == state)
        let context = InProcessKeychain(engine: engine, caller: AccessPolicy(groups: ["g"]))
        KeychainConnector.$override.withValue(context) {
            for (name, _) in Self.classes where present.contains(name) {
                let open = Self.available[state]?.contains(name) == true
                let (status, data) = copy(genp(name, "svc", [kSecReturnData as String: true]))
                #expect(status == (open ? errSecSuccess : errSecInteractionNotAllowed), "read \(name) in \(state)")
                #expect((data as? Data) == (open ? Data("secret-\(name)".utf8) : nil), "read \(name) in \(state)")
                let write = SecItemUpdate(genp(name, "svc") as CFDictionary, [kSecAttrLabel as String: "touched"] as CFDictionary)
                #expect(write == (open ? errSecSuccess : errSecInteractionNotAllowed), "write \(name) in \(state)")
            }
        }
    }

    func addAll(_ engine: KeychainEngine, _ names: [(String, String)]) {
        let context = InProcessKeychain(engine: engine, caller: AccessPolicy(groups: ["g"]))
        KeychainConnector.$override.withValue(context) {
            for (name, accessible) in names {
                #expect(
                    add(
                        genp(
                            name, "svc",
                            [
                                kSecAttrAccessible as String: accessible,
                                kSecValueData as String: Data("secret-\(name)".utf8),
                            ])) == errSecSuccess, "add \(name)")
            }
        }
    }

    @Test func sevenClassesTimesFourLockStates() throws {
        let kc = try TestKeychain()
        let all = Set(Self.classes.map(\.0))
        // No passcode: everything but akpu is available, and akpu cannot be added.
        addAll(kc.engine, Self.classes.filter { $0.0 != "akpu" })
        checkAvailability(kc.engine, expected: .noPasscode, present: all.subtracting(["akpu"]))
        kc.run { #expect(add(genp("akpu", "svc", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly])) == errSecAuthFailed) }

        // Setting a passcode leaves this process unlocked; now akpu items can be added.
        try kc.engine.changePasscode(from: nil, to: "1234")
        addAll(kc.engine, Self.classes.filter { $0.0 == "akpu" })
        checkAvailability(kc.engine, expected: .unlocked, present: all)

        // Locking drops the WhenUnlocked keys.
        kc.engine.lock()
        checkAvailability(kc.engine, expected: .locked, present: all)
        kc.run { #expect(add(genp("new", "svc", [kSecValueData as String: Data("x".utf8)])) == errSecInteractionNotAllowed) }

        // Another process opening the keychain starts before its first unlock.
        let booted = try KeychainEngine(location: KeychainLocation(home: kc.home))
        checkAvailability(booted, expected: .beforeFirstUnlock, present: all)
        do {
            try booted.unlock(passcode: "wrong")
            Issue.record("a wrong passcode unlocked")
        } catch {
            #expect(error.status == .authFailed)
        }
        #expect(booted.lockState == .beforeFirstUnlock)
        try booted.unlock(passcode: "1234")
        checkAvailability(booted, expected: .unlocked, present: all)

        // Removing the passcode destroys akpu: its items are deleted, everything else stays available.
        try booted.changePasscode(from: "1234", to: nil)
        #expect(booted.lockState == .noPasscode)
        checkAvailability(booted, expected: .noPasscode, present: all.subtracting(["akpu"]))
        KeychainConnector.$override.withValue(InProcessKeychain(engine: booted, caller: AccessPolicy(groups: ["g"]))) {
            #expect(copy(genp("akpu", "svc")).0 == errSecItemNotFound)
        }
        let reopened = try KeychainEngine(location: KeychainLocation(home: kc.home))
        checkAvailability(reopened, expected: .noPasscode, present: all.subtracting(["akpu"]))
    }

    @Test func lockedSecretsCannotBeRecoveredFromTheFilesAndTheDeviceKey() throws {
        let kc = try TestKeychain()
        try kc.engine.changePasscode(from: nil, to: "correct horse")
        addAll(kc.engine, Self.classes.filter { ["ak", "aku"].contains($0.0) })
        kc.engine.lock()
        // An attacker with every file and the device key (from device.key, or unsealed by this machine's TPM),
        // but not the passcode:
        let deviceKey = try kc.engine.deviceKey()
        let keybag = try Data(contentsOf: URL(fileURLWithPath: kc.home + "/keychain.keybag"))
        let stolen = try Keybag.decode(keybag, deviceKey: deviceKey)
        #expect(stolen.classKeys[.whenUnlocked] == nil)
        #expect(stolen.classKeys[.whenUnlockedThisDeviceOnly] == nil)
        // Even trying every key the keybag yields on every row's sealed parts opens nothing of those items.
        let engine = try KeychainEngine(location: KeychainLocation(home: kc.home))
        var q = ItemQuery(itemClass: .genericPassword)
        q.sync = .any
        q.limit = .all
        q.returns.data = true
        expectKeychainError(.interactionNotAllowed) { try engine.find(q, caller: AccessPolicy(groups: ["g"])) }
        let crypto = ItemCrypto(
            keybag: Keybag(
                uuid: [],
                classKeys: stolen.classKeys.merging(
                    [.whenUnlocked: stolen.classKeys[.always] ?? SymmetricKey(size: .bits256)]) { a, _ in a }, metadataKey: stolen.metadataKey))
        let rows = try engine.pool.read { db in try Row.fetchAll(db, sql: "SELECT uuid, meta, secret FROM genp") }
        for row in rows {
            let uuid: Data = row[0]
            let secret: Data = row[2]
            for protection in [ProtectionClass.whenUnlocked, .always] {
                let identity = ItemCrypto.RowIdentity(
                    table: "genp", uuid: uuid, protection: protection, groupHash: Data(),
                    primaryKeyHash: Data(), sync: false, tombstone: false)
                expectKeychainError(.corruptData) { try crypto.openSecret(secret, row: identity) }
            }
        }
    }

    @Test func wrongPasscodesAreThrottledAcrossRestarts() throws {
        let kc = try TestKeychain()
        try kc.engine.changePasscode(from: nil, to: "1234")
        let clock = ManualClock()
        let engine = try KeychainEngine(location: KeychainLocation(home: kc.home), now: { clock.now })
        for attempt in 1...5 {
            do {
                try engine.unlock(passcode: "0000")
                Issue.record("wrong passcode \(attempt) unlocked")
            } catch {
                #expect(error.status == .authFailed)
            }
        }
        let keybagURL = URL(fileURLWithPath: KeychainLocation(home: kc.home).keybagPath)
        #expect(try Keybag.throttle(in: Data(contentsOf: keybagURL), deviceKey: engine.deviceKey())?.failures == 5)
        // After the fifth failure even the right passcode must wait a minute — also in a new process.
        let restarted = try KeychainEngine(location: KeychainLocation(home: kc.home), now: { clock.now })
        do {
            try restarted.unlock(passcode: "1234")
            Issue.record("the throttle did not hold across a restart")
        } catch {
            #expect(error.message.contains("Try again in 60 seconds"))
        }
        #expect(restarted.lockState == .beforeFirstUnlock)
        clock.advance(61)
        try restarted.unlock(passcode: "1234")
        #expect(restarted.lockState == .unlocked)
        #expect(try Keybag.throttle(in: Data(contentsOf: keybagURL), deviceKey: engine.deviceKey())?.failures == 0)
        // The delays escalate as on iOS.
        #expect([4, 5, 6, 7, 8, 9, 20].map(PasscodeThrottle.delay(afterFailures:)) == [0, 60, 300, 900, 900, 3600, 3600])
    }
}
