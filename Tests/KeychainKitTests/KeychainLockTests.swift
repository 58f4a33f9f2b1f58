import Foundation
import KeychainKit
import KeychainTestSupport
import Testing

@Suite struct KeychainLockTests {
    @Test func passcodeLockAndUnlock() throws {
        try withTemporaryDirectory { directory in
            let store = try KeychainStore(directory: directory, accessGroups: ["g"])
            let keychain = Keychain(service: "svc", in: store)
            #expect(try store.lockStatus == .noPasscode)
            try keychain.set("when-unlocked", for: "a")
            try keychain.accessibility(.afterFirstUnlock).set("after-first", for: "b")
            try keychain.accessibility(.always).set("always", for: "c")
            expectKeychainError(.authenticationFailed) { try keychain.accessibility(.whenPasscodeSetThisDeviceOnly).set("x", for: "d") }

            try store.setPasscode("1234")
            #expect(try store.lockStatus == .unlocked)
            try keychain.accessibility(.whenPasscodeSetThisDeviceOnly).set("passcode-only", for: "d")

            try store.lock()
            #expect(try store.lockStatus == .locked)
            do throws(KeychainError) {
                _ = try keychain.string(for: "a")
                Issue.record("a WhenUnlocked item was readable while locked")
            } catch {
                #expect(error.status == .interactionNotAllowed)
            }
            #expect(try keychain.string(for: "b") == "after-first")
            #expect(try keychain.string(for: "c") == "always")

            do throws(KeychainError) {
                try store.unlock(passcode: "wrong")
                Issue.record("a wrong passcode unlocked")
            } catch {
                #expect(error.status == .authFailed)
            }
            try store.unlock(passcode: "1234")
            #expect(try keychain.string(for: "a") == "when-unlocked")
            #expect(try keychain.string(for: "d") == "passcode-only")

            try store.setPasscode(nil, currentPasscode: "1234")
            #expect(try store.lockStatus == .noPasscode)
            #expect(try keychain.string(for: "d") == nil)  // destroyed with the passcode
            #expect(try keychain.string(for: "a") == "when-unlocked")
        }
    }
}

@Suite struct KeychainBackupTests {
    @Test func backupAndRestoreThroughTheStore() throws {
        try withTemporaryDirectory { first in
            let store = try KeychainStore(directory: first, accessGroups: ["g"])
            let keychain = Keychain(service: "svc", in: store)
            try keychain.set("portable", for: "a")
            try keychain.accessibility(.whenUnlockedThisDeviceOnly).set("local", for: "b")
            let backup = try store.backup(password: "pw")
            #expect(backup.itemCount == 2)
            #expect(backup.thisDeviceOnlyCount == 1)
            try withTemporaryDirectory { second in
                let other = try KeychainStore(directory: second, accessGroups: ["g"])
                let result = try other.restore(backup.data, password: "pw")
                #expect(result.added == 1 && result.replaced == 0 && result.keptNewer == 0 && result.skippedFromOtherDevice == 1)
                #expect(try Keychain(service: "svc", in: other).string(for: "a") == "portable")
                #expect(try Keychain(service: "svc", in: other).string(for: "b") == nil)
                do throws(KeychainError) {
                    _ = try other.restore(backup.data, password: "wrong")
                    Issue.record("a wrong password restored")
                } catch {
                    #expect(error.status == .authFailed)
                }
            }
        }
    }
}
