import Foundation
import KeychainKit
import Testing

/// KeychainKit's typed side of several keychains: a store per keychain, the search list, the default keychain, and
/// each keychain's own passcode and lock state.
@Suite("KeychainStore: several keychains")
struct KeychainStoreKeychainsTests {
    @Test func aSecondKeychainWithItsOwnPasscode() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/keychain-kit-keychains-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try KeychainStore(directory: directory, accessGroups: ["com.example.app"])
        try Keychain(service: "example.com", in: store).set("login-secret", for: "alice")

        let work = try store.createKeychain(named: "work", passcode: "work-pass")
        #expect(try work.lockStatus == .unlocked)
        try Keychain(service: "example.com", in: work).set("work-secret", for: "alice")
        try Keychain(service: "example.com", in: work).set("bob-secret", for: "bob")

        #expect(try store.keychains().map(\.name).prefix(2) == ["login", "work"])
        #expect(try store.searchList == ["login"])
        #expect(try Keychain(service: "example.com", in: store).string(for: "bob") == nil)

        try store.setSearchList(["login", "work"])
        #expect(try Keychain(service: "example.com", in: store).string(for: "alice") == "login-secret")
        #expect(try Keychain(service: "example.com", in: store).string(for: "bob") == "bob-secret")
        var query = KeychainQuery(.genericPassword, attributes: ["acct": .string("alice")])
        query.searchList = ["work", "login"]
        query.limit = .all
        query.returnsData = true
        #expect(try store.items(matching: query).compactMap { $0.data.map { String(decoding: $0, as: UTF8.self) } } == ["work-secret", "login-secret"])

        // Locking the second keychain leaves the login keychain open.
        try work.lock()
        #expect(try work.lockStatus == .locked)
        #expect(try store.lockStatus == .noPasscode)
        #expect(try Keychain(service: "example.com", in: store).string(for: "alice") == "login-secret")
        do {
            _ = try Keychain(service: "example.com", in: store).string(for: "bob")
            Issue.record("an item of a locked keychain was read")
        } catch {
            #expect(error.status == .interactionNotAllowed)
        }
        do {
            try work.unlock(passcode: "wrong")
            Issue.record("a wrong passcode unlocked the keychain")
        } catch {
            #expect(error.status == .authFailed)
        }
        try work.unlock(passcode: "work-pass")
        #expect(try Keychain(service: "example.com", in: store).string(for: "bob") == "bob-secret")

        // The default keychain takes new items.
        try store.setDefaultKeychain("work")
        #expect(try store.defaultKeychain == "work")
        try Keychain(service: "example.com", in: store).set("carol-secret", for: "carol")
        #expect(try Keychain(service: "example.com", in: store.keychain(named: "login")).string(for: "carol") == nil)
        #expect(try Keychain(service: "example.com", in: work).string(for: "carol") == "carol-secret")

        do {
            try store.createKeychain(named: "work", passcode: nil)
            Issue.record("a second keychain named work was made")
        } catch {
            #expect(error.status == .duplicateKeychain)
        }
        try store.deleteKeychain(named: "work")
        #expect(try store.searchList == ["login"])
        #expect(try store.defaultKeychain == "login")
        do {
            _ = try Keychain(service: "example.com", in: work).string(for: "bob")
            Issue.record("a deleted keychain answered")
        } catch {
            #expect(error.status == .noSuchKeychain)
        }
    }
}
