import KeychainClient
import Foundation
import Testing
import KeychainServices
@testable import KeychainCore

@Suite struct BackupTests {
    func item(_ kc: TestKeychain, _ account: String) -> Data? {
        kc.run { copy(genp(account, "svc", [kSecReturnData as String: true])).1 as? Data }
    }

    /// A keychain with one item of each backed-up kind, and a passcode so akpu items can exist.
    func populated() throws -> TestKeychain {
        let kc = try TestKeychain()
        try kc.engine.changePasscode(from: nil, to: "1234")
        kc.run {
            #expect(add(genp("portable", "svc", [kSecValueData as String: Data("p-secret".utf8)])) == errSecSuccess)
            #expect(add(genp("after", "svc", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock, kSecValueData as String: Data("a-secret".utf8)])) == errSecSuccess)
            #expect(add(genp("local", "svc", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly, kSecValueData as String: Data("l-secret".utf8)])) == errSecSuccess)
            #expect(add(genp("passcode", "svc", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, kSecValueData as String: Data("x".utf8)])) == errSecSuccess)
            #expect(
                add([
                    kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com", kSecAttrAccount as String: "web",
                    kSecValueData as String: Data("w-secret".utf8),
                ]) == errSecSuccess)
        }
        return kc
    }

    @Test func backupAndRestoreHereAndOnAnotherMachine() throws {
        let kc = try populated()
        let (backup, summary) = try kc.engine.backup(password: "backup pw")
        #expect(summary == BackupSummary(items: 4, thisDeviceOnly: 1, skippedPasscodeOnly: 1))
        // No secret in the clear in the backup file.
        for secret in ["p-secret", "a-secret", "l-secret", "w-secret"] { #expect(backup.range(of: Data(secret.utf8)) == nil) }

        // Another machine: its own KEYCHAIN_HOME and device key. ThisDeviceOnly items are skipped and counted.
        let other = try TestKeychain()
        let restored = try other.engine.restore(backup, password: "backup pw")
        #expect(restored == RestoreSummary(added: 3, replaced: 0, keptNewer: 0, skippedOtherDevice: 1))
        #expect(item(other, "portable") == Data("p-secret".utf8))
        #expect(item(other, "after") == Data("a-secret".utf8))
        #expect(item(other, "local") == nil)
        #expect(item(other, "passcode") == nil)
        other.run {
            #expect(copy([kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com", kSecReturnData as String: true]).1 as? Data == Data("w-secret".utf8))
        }

        // This machine: after losing everything, the ThisDeviceOnly item comes back too.
        kc.run {
            for account in ["portable", "after", "local"] { #expect(SecItemDelete(genp(account, "svc") as CFDictionary) == errSecSuccess) }
        }
        let home = try kc.engine.restore(backup, password: "backup pw")
        #expect(home == RestoreSummary(added: 3, replaced: 0, keptNewer: 1, skippedOtherDevice: 0))  // the inet item was still here
        #expect(item(kc, "local") == Data("l-secret".utf8))
        #expect(item(kc, "passcode") == Data("x".utf8))  // untouched: it was never in the backup
    }

    @Test func restoreMergesAndTheNewerItemWins() throws {
        let clock = ManualClock()
        let kc = try TestKeychain()
        let engine = try KeychainEngine(location: KeychainLocation(home: kc.home), now: { clock.now })
        let ctx = InProcessKeychain(engine: engine, caller: kc.caller)
        KeychainConnector.$override.withValue(ctx) {
            #expect(add(genp("old-here", "svc", [kSecValueData as String: Data("v1".utf8)])) == errSecSuccess)
            #expect(add(genp("new-here", "svc", [kSecValueData as String: Data("v1".utf8)])) == errSecSuccess)
        }
        clock.advance(10)
        let (backup, _) = try engine.backup(password: "pw")
        clock.advance(10)
        KeychainConnector.$override.withValue(ctx) {
            // Changed after the backup: must survive the restore.
            #expect(SecItemUpdate(genp("new-here", "svc") as CFDictionary, [kSecValueData as String: Data("v2".utf8)] as CFDictionary) == errSecSuccess)
        }
        // Make "old-here" older than the backup's copy by restoring into a keychain whose copy predates it.
        let other = try TestKeychain()
        let otherEngine = try KeychainEngine(location: KeychainLocation(home: other.home), now: { Date(timeIntervalSince1970: 1_000_000_000) })
        KeychainConnector.$override.withValue(InProcessKeychain(engine: otherEngine, caller: other.caller)) {
            #expect(add(genp("old-here", "svc", [kSecValueData as String: Data("ancient".utf8)])) == errSecSuccess)
        }
        let merged = try otherEngine.restore(backup, password: "pw")
        #expect(merged == RestoreSummary(added: 1, replaced: 1, keptNewer: 0, skippedOtherDevice: 0))
        #expect(item(other, "old-here") == Data("v1".utf8))
        let here = try engine.restore(backup, password: "pw")
        #expect(here == RestoreSummary(added: 0, replaced: 0, keptNewer: 2, skippedOtherDevice: 0))
        KeychainConnector.$override.withValue(ctx) {
            #expect(copy(genp("new-here", "svc", [kSecReturnData as String: true])).1 as? Data == Data("v2".utf8))
        }
    }

    @Test func wrongPasswordTruncatedOrTamperedBackupsChangeNothing() throws {
        let kc = try populated()
        let (backup, _) = try kc.engine.backup(password: "right")
        let target = try TestKeychain()
        target.run { #expect(add(genp("mine", "svc", [kSecValueData as String: Data("keep".utf8)])) == errSecSuccess) }
        var tampered = backup
        tampered[tampered.count - 20] ^= 0x01
        var badHeader = backup
        badHeader[8] ^= 0x01
        let cases: [(String, Data, String)] = [
            ("wrong password", backup, "wrong"),
            ("truncated", backup.prefix(backup.count / 2), "right"),
            ("tampered payload", tampered, "right"),
            ("tampered header", badHeader, "right"),
            ("not a backup", Data("hello".utf8), "right"),
            ("empty", Data(), "right"),
        ]
        for (name, data, password) in cases {
            do {
                _ = try target.engine.restore(data, password: password)
                Issue.record("\(name) restored")
            } catch {
                #expect([KeychainStatus.authFailed, .decode].contains(error.status), "\(name): \(error)")
                #expect(!error.message.isEmpty)
            }
        }
        // Nothing changed.
        target.run {
            let all = copy(genp(nil, nil, [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])).1 as? [[String: Any]]
            #expect(all?.compactMap { $0[kSecAttrAccount as String] as? String } == ["mine"])
        }
    }

    @Test func aLockedKeychainCannotBeBackedUp() throws {
        let kc = try populated()
        kc.engine.lock()
        do {
            _ = try kc.engine.backup(password: "pw")
            Issue.record("a locked keychain was backed up")
        } catch {
            #expect(error.status == .interactionNotAllowed)
        }
    }
}
