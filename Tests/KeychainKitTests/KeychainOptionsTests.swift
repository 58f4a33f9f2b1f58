import Foundation
import Testing
import KeychainKit

@Suite("Options: access groups, accessibility, labels, synchronizable")
struct KeychainOptionsTests {
    @Test func accessGroupsIsolateStoresSharingAFolder() throws {
        try withTemporaryDirectory { directory in
            let storeA = try KeychainStore(directory: directory, accessGroups: ["A"])
            let storeB = try KeychainStore(directory: directory, accessGroups: ["B"])
            let a = Keychain(service: "svc", in: storeA)
            let b = Keychain(service: "svc", in: storeB)
            try b.set("from-b", for: "key")
            #expect(try b.string(for: "key") == "from-b")
            #expect(try a.string(for: "key") == nil)
            #expect(try a.contains("key") == false)
            #expect(try a.allKeys() == [])
            try a.removeAll()
            try a.remove("key")
            #expect(try b.string(for: "key") == "from-b")
            // A writes its own item under the same key: two items, one per group.
            try a.set("from-a", for: "key")
            #expect(try a.string(for: "key") == "from-a")
            #expect(try b.string(for: "key") == "from-b")
            #expect(try a.attributes(for: "key")?.accessGroup == "A")
        }
    }

    @Test(arguments: StoreMode.allCases) func unentitledExplicitGroupFailsWithMissingEntitlement(_ mode: StoreMode) throws {
        try withStore(mode: mode, groups: ["A"]) { store in
            let keychain = Keychain(service: "svc", in: store).accessGroup("C")
            #expect(keychain.accessGroup == "C")
            let writeError = try #require(#expect(throws: KeychainError.self) { try keychain.set("x", for: "k") })
            #expect(writeError.status.rawValue == -34018)
            #expect(writeError.status == .missingEntitlement)
            #expect(writeError.code == .missingEntitlement)
            #expect(!writeError.message.isEmpty)
            #expect(writeError.status.message == "A required entitlement isn't present.")
            #expect(writeError.description.contains("-34018"))
            let readError = try #require(#expect(throws: KeychainError.self) { try keychain.string(for: "k") })
            #expect(readError.status == .missingEntitlement)
            let removeError = try #require(#expect(throws: KeychainError.self) { try keychain.removeAll() })
            #expect(removeError.status.rawValue == -34018)
        }
    }

    @Test(arguments: StoreMode.allCases) func explicitEntitledGroupConfinesOperations(_ mode: StoreMode) throws {
        try withStore(mode: mode, groups: ["A", "B"]) { store in
            let plain = Keychain(service: "svc", in: store)
            let inA = plain.accessGroup("A")
            let inB = plain.accessGroup("B")
            try plain.set("default", for: "first")
            try inB.set("b", for: "second")
            #expect(try plain.attributes(for: "first")?.accessGroup == "A")  // the store's first group
            #expect(try inB.attributes(for: "second")?.accessGroup == "B")
            #expect(try inA.allKeys() == ["first"])
            #expect(try inB.allKeys() == ["second"])
            #expect(try plain.allKeys() == ["first", "second"])  // no group: all the store's groups
            #expect(try inA.string(for: "second") == nil)
            // Overwriting through the unscoped keychain updates the item where it is.
            try plain.set("b2", for: "second")
            #expect(try inB.string(for: "second") == "b2")
            #expect(try inA.contains("second") == false)
            try inA.removeAll()
            #expect(try plain.allKeys() == ["second"])
        }
    }

    @Test(arguments: StoreMode.allCases) func accessibilityLabelAndCommentAreReflectedInAttributes(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let base = Keychain(service: "com.example.app", in: store)
            try base.set("plain", for: "plain")
            let plain = try #require(try base.attributes(for: "plain"))
            #expect(plain.accessibility == .whenUnlocked)
            #expect(plain.label == nil)
            #expect(plain.comment == nil)
            #expect(plain.account == "plain")
            #expect(plain.service == "com.example.app")
            #expect(plain.server == nil)
            #expect(plain.accessGroup == "com.example.tests")
            #expect(plain.synchronizable == false)
            #expect(abs(plain.creationDate.timeIntervalSinceNow) < 300)

            let configured = base.accessibility(.afterFirstUnlockThisDeviceOnly).label("My label").comment("A comment")
            #expect(configured.accessibility == .afterFirstUnlockThisDeviceOnly)
            #expect(configured.label == "My label")
            #expect(configured.comment == "A comment")
            try configured.set("secret", for: "alice")
            let attributes = try #require(try base.attributes(for: "alice"))
            #expect(attributes.accessibility == .afterFirstUnlockThisDeviceOnly)
            #expect(attributes.label == "My label")
            #expect(attributes.comment == "A comment")

            // Overwriting without options keeps them; with options changes them.
            try base.set("secret2", for: "alice")
            let kept = try #require(try base.attributes(for: "alice"))
            #expect(kept.label == "My label")
            #expect(kept.accessibility == .afterFirstUnlockThisDeviceOnly)
            try base.accessibility(.always).label("New label").set("secret3", for: "alice")
            let changed = try #require(try base.attributes(for: "alice"))
            #expect(changed.label == "New label")
            #expect(changed.comment == "A comment")
            #expect(changed.accessibility == .always)
            #expect(try base.string(for: "alice") == "secret3")
        }
    }

    @Test(arguments: KeychainAccessibility.allCases.filter { $0 != .whenPasscodeSetThisDeviceOnly })
    func everyAccessibilityRoundTrips(_ accessibility: KeychainAccessibility) throws {
        try withStore { store in
            let keychain = Keychain(service: "svc", in: store).accessibility(accessibility)
            try keychain.set("v", for: "k")
            #expect(try keychain.attributes(for: "k")?.accessibility == accessibility)
            #expect(try keychain.string(for: "k") == "v")
        }
    }

    @Test(arguments: StoreMode.allCases) func passcodeOnlyAccessibilityNeedsAPasscode(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "svc", in: store).accessibility(.whenPasscodeSetThisDeviceOnly)
            let error = try #require(#expect(throws: KeychainError.self) { try keychain.set("v", for: "k") })
            #expect(error.status == .authFailed)
            #expect(try Keychain(service: "svc", in: store).contains("k") == false)
        }
    }

    @Test(arguments: StoreMode.allCases) func synchronizableItemsAreSeparateFromLocalOnes(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let local = Keychain(service: "svc", in: store)
            let synced = local.synchronizable(true)
            #expect(synced.isSynchronizable)
            #expect(!local.isSynchronizable)
            try local.set("local", for: "key")
            #expect(try synced.string(for: "key") == nil)
            #expect(try synced.allKeys() == [])
            try synced.set("synced", for: "key")
            try synced.set("only-synced", for: "other")
            #expect(try local.string(for: "key") == "local")
            #expect(try synced.string(for: "key") == "synced")
            #expect(try local.allKeys() == ["key"])
            #expect(try synced.allKeys() == ["key", "other"])
            #expect(try synced.attributes(for: "key")?.synchronizable == true)
            #expect(try local.attributes(for: "key")?.synchronizable == false)

            try synced.remove("key")
            #expect(try synced.string(for: "key") == nil)
            #expect(try local.string(for: "key") == "local")
            // A removed synchronizable item leaves a tombstone; writing the key again still works.
            try synced.set("again", for: "key")
            #expect(try synced.string(for: "key") == "again")
            try local.removeAll()
            #expect(try local.allKeys() == [])
            #expect(try synced.allKeys() == ["key", "other"])
        }
    }
}
