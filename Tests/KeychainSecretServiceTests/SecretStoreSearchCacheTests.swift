import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// SecretStore answers repeated searches from memory (`SearchCache`): the answer must follow every write, whoever
/// makes it, and never outlive the unlock.
@Suite("Secret Service searches kept in memory")
struct SecretStoreSearchCacheTests {
    final class Home: Sendable {
        let path = FileManager.default.temporaryDirectory.path + "/ss-search-cache-" + UUID().uuidString.prefix(8)
        var location: KeychainLocation { KeychainLocation(home: path) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static func create(_ store: SecretStore, in collection: SecretCollection, _ attributes: [String: String]) throws -> String {
        try store.createItem(
            in: collection, label: "item", attributes: attributes, secret: Data("s".utf8),
            contentType: "text/plain", replace: false
        ).0.id
    }

    @Test("A repeated search follows writes through the store, through the engine (as SecItem), and by another engine on the same keychain")
    func followsWrites() throws {
        let home = Home()
        let engine = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        let store = SecretStore(engine: engine)
        let login = try #require(try store.collections().first { $0.id == SecretStore.loginID })
        let wanted = ["app": "mail", "user": "ann"]

        let first = try Self.create(store, in: login, wanted)
        _ = try Self.create(store, in: login, ["app": "mail", "user": "bob"])
        #expect(try store.itemIDs(in: login, matching: wanted) == [first])
        #expect(try store.itemIDs(in: login, matching: wanted) == [first])  // from memory

        // Through the store.
        let second = try Self.create(store, in: login, wanted)
        #expect(try store.itemIDs(in: login, matching: wanted) == [first, second])

        // Through the engine, as SecItemDelete does.
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["svce"] = .string(SecretStore.itemServicePrefix + login.id)
        q.attributes["acct"] = .string(first)
        #expect(try engine.delete(q, caller: AccessPolicy(groups: ["*"])) == 1)
        #expect(try store.itemIDs(in: login, matching: wanted) == [second])

        // Another engine on the same keychain (another process, as embedded `security` would be): seen through the
        // database's write-ahead log.
        let other = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        let third = try Self.create(SecretStore(engine: other), in: login, wanted)
        #expect(try store.itemIDs(in: login, matching: wanted) == [second, third])
        // Every subset still searches the index: none, one attribute, an attribute nobody has.
        #expect(try store.itemIDs(in: login, matching: ["user": "bob"]).count == 1)
        #expect(try store.itemIDs(in: login, matching: ["app": "mail"]).count == 3)
        #expect(try store.itemIDs(in: login, matching: ["app": "none"]).isEmpty)
        #expect(try store.itemIDs(in: login, matching: [:]).count == 3)
    }

    @Test("Locked, nothing is answered from memory: the search fails as the engine does, and the kept answers are gone after unlock")
    func notWhileLocked() throws {
        let home = Home()
        let engine = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        try engine.changePasscode(from: nil, to: "1234")
        let store = SecretStore(engine: engine)
        let login = try #require(try store.collections().first { $0.id == SecretStore.loginID })
        let id = try Self.create(store, in: login, ["k": "v"])
        #expect(try store.itemIDs(in: login, matching: ["k": "v"]) == [id])

        engine.lock()
        let direct = Result { () throws(KeychainError) in try store.items(in: login, matching: ["k": "v"]).map(\.id) }
        let searched = Result { () throws(KeychainError) in try store.itemIDs(in: login, matching: ["k": "v"]) }
        switch (direct, searched) {
        case (.failure(let expected), .failure(let got)): #expect(got.code == expected.code)
        case (.success(let expected), .success(let got)): #expect(got == expected)
        default: Issue.record("locked: the search from memory (\(searched)) differs from the engine's (\(direct))")
        }
        try engine.unlock(passcode: "1234")
        #expect(try store.itemIDs(in: login, matching: ["k": "v"]) == [id])
    }
}
