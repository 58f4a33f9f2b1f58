import Foundation
import Testing
import KeychainKit

@Suite("Reading and writing")
struct KeychainBasicsTests {
    @Test(arguments: StoreMode.allCases) func setAndReadString(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            try keychain.set("s3cret", for: "alice")
            #expect(try keychain.string(for: "alice") == "s3cret")
            #expect(try keychain.data(for: "alice") == Data("s3cret".utf8))
            #expect(keychain["alice"] == "s3cret")
            #expect(keychain[data: "alice"] == Data("s3cret".utf8))
        }
    }

    @Test(arguments: StoreMode.allCases) func setAndReadData(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            let bytes = Data([0x00, 0xFF, 0x10, 0x80, 0x00, 0x7F])
            try keychain.set(bytes, for: "bob")
            #expect(try keychain.data(for: "bob") == bytes)
            let empty = Data()
            try keychain.set(empty, for: "empty")
            #expect(try keychain.data(for: "empty") == empty)
            #expect(try keychain.string(for: "empty") == "")
        }
    }

    @Test(arguments: StoreMode.allCases) func codableRoundTrip(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            let token = Token(
                value: "abc.def.ghi", expiry: Date(timeIntervalSince1970: 1_900_000_000),
                scopes: ["repo", "user"], refresh: .init(value: "r3fr3sh", uses: 3))
            try keychain.set(token, for: "token")
            #expect(try keychain.value(Token.self, for: "token") == token)
            let inferred: Token? = try keychain.value(for: "token")
            #expect(inferred == token)
            // Stored as JSON in the secret.
            let json = try #require(try keychain.data(for: "token"))
            let object = try JSONSerialization.jsonObject(with: json) as? [String: Any]
            #expect(object?["value"] as? String == "abc.def.ghi")
            #expect(try keychain.value(Token.self, for: "missing") == nil)
        }
    }

    @Test(arguments: StoreMode.allCases) func setOverwritesExistingValue(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            try keychain.set("first", for: "alice")
            let before = try #require(try keychain.attributes(for: "alice"))
            try keychain.set("second", for: "alice")
            #expect(try keychain.string(for: "alice") == "second")
            #expect(try keychain.allKeys() == ["alice"])
            let after = try #require(try keychain.attributes(for: "alice"))
            #expect(after.creationDate == before.creationDate)
            #expect(after.modificationDate >= before.modificationDate)
            try keychain.set(Data([1, 2, 3]), for: "alice")
            #expect(try keychain.data(for: "alice") == Data([1, 2, 3]))
        }
    }

    @Test(arguments: StoreMode.allCases) func missingItemsReadAsNil(_ mode: StoreMode) throws {
        try withStore(mode: mode) { (store: KeychainStore) throws in
            let keychain = Keychain(service: "com.example.app", in: store)
            #expect(try keychain.string(for: "nobody") == nil)
            #expect(try keychain.data(for: "nobody") == nil)
            #expect(try keychain.attributes(for: "nobody") == nil)
            #expect(try keychain.contains("nobody") == false)
            #expect(keychain["nobody"] == nil)
            #expect(try keychain.allKeys() == [])
        }
    }

    @Test(arguments: StoreMode.allCases) func removeDeletesOneItemAndIgnoresMissing(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            try keychain.set("a", for: "alice")
            try keychain.set("b", for: "bob")
            try keychain.remove("alice")
            #expect(try keychain.string(for: "alice") == nil)
            #expect(try keychain.string(for: "bob") == "b")
            try keychain.remove("alice")
            try keychain.remove("never-existed")
            #expect(try keychain.allKeys() == ["bob"])
        }
    }

    @Test(arguments: StoreMode.allCases) func removeAllClearsOnlyThisService(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let app = Keychain(service: "com.example.app", in: store)
            let other = Keychain(service: "com.example.other", in: store)
            for key in ["a", "b", "c"] { try app.set(key, for: key) }
            try other.set("keep", for: "a")
            try app.removeAll()
            #expect(try app.allKeys() == [])
            #expect(try app.string(for: "a") == nil)
            #expect(try other.string(for: "a") == "keep")
            try app.removeAll()  // nothing left: not an error
        }
    }

    @Test(arguments: StoreMode.allCases) func allKeysAreSortedAndDistinct(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            for key in ["charlie", "alice", "bob", "Zed", "alice"] { try keychain.set("x", for: key) }
            #expect(try keychain.allKeys() == ["Zed", "alice", "bob", "charlie"])
        }
    }

    @Test(arguments: StoreMode.allCases) func containsReflectsPresence(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.app", in: store)
            #expect(try keychain.contains("alice") == false)
            try keychain.set("a", for: "alice")
            #expect(try keychain.contains("alice"))
            #expect(try keychain.contains("Alice") == false)  // byte-exact, case-sensitive
            try keychain.remove("alice")
            #expect(try keychain.contains("alice") == false)
        }
    }

    @Test(arguments: StoreMode.allCases) func servicesDoNotSeeEachOther(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let one = Keychain(service: "com.example.one", in: store)
            let two = Keychain(service: "com.example.two", in: store)
            try one.set("1", for: "shared-key")
            try one.set("1", for: "only-one")
            try two.set("2", for: "shared-key")
            #expect(try one.string(for: "shared-key") == "1")
            #expect(try two.string(for: "shared-key") == "2")
            #expect(try two.contains("only-one") == false)
            #expect(try one.allKeys() == ["only-one", "shared-key"])
            #expect(try two.allKeys() == ["shared-key"])
            try two.remove("shared-key")
            #expect(try one.string(for: "shared-key") == "1")
        }
    }

    @Test func itemsPersistAcrossStores() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try KeychainStore(directory: directory, accessGroups: ["g"])
                try Keychain(service: "svc", in: store).set("kept", for: "k")
            }
            let reopened = try KeychainStore(directory: directory, accessGroups: ["g"])
            #expect(reopened.directory.hasSuffix(URL(fileURLWithPath: directory).lastPathComponent))
            #expect(reopened.accessGroups == ["g"])
            #expect(try Keychain(service: "svc", in: reopened).string(for: "k") == "kept")
        }
    }

    @Test func concurrentWritersOfOneKeyAllSucceed() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("keychainkit-tests-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keychain = Keychain(service: "svc", in: try KeychainStore(directory: directory, accessGroups: ["g"]))
        let values = (0..<16).map { "value-\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for value in values {
                group.addTask { try keychain.set(value, for: "race") }
            }
            try await group.waitForAll()
        }
        let final = try #require(try keychain.string(for: "race"))
        #expect(values.contains(final))
        #expect(try keychain.allKeys() == ["race"])
    }
}
