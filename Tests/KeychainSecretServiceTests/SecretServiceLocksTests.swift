import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// What a locked keychain's Secret Service still answers (`SecretServiceLocks`): labels, attributes and searches
/// from what the lock kept, never a secret; and the collections a client locked without a passcode.
@Suite("Secret Service locks")
struct SecretServiceLocksTests {
    typealias Home = SecretStoreSearchCacheTests.Home

    /// A fresh keychain with the passcode 1234, its Secret Service store (keeping its items across a lock, as
    /// keychaind's provider asks, with `keepingIndex`), and the login collection.
    static func passcodeStore(keepingIndex: Bool) throws -> (Home, KeychainEngine, SecretStore, SecretCollection) {
        let home = Home()
        let engine = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        try engine.changePasscode(from: nil, to: "1234")
        let store = SecretStore(engine: engine)
        if keepingIndex { store.keepIndexWhileLocked() }
        let login = try #require(try store.collections().first { $0.id == SecretStore.loginID })
        return (home, engine, store, login)
    }

    @Test("Kept across a lock: searches, labels and attributes answer; secrets stay locked; an unlock drops what was kept")
    func keptAcrossALock() throws {
        let (home, engine, store, login) = try Self.passcodeStore(keepingIndex: true)
        defer { _ = home }
        let mail = try SecretStoreSearchCacheTests.create(store, in: login, ["app": "mail", "user": "ann"])
        _ = try SecretStoreSearchCacheTests.create(store, in: login, ["app": "chat"])

        engine.lock()
        #expect(engine.lockState == .locked)
        #expect(try store.itemIDs(in: login, matching: ["app": "mail"]) == [mail])
        #expect(try store.items(in: login).count == 2)
        let item = try #require(try store.item(mail, in: login))
        #expect(item.label == "item" && item.attributes == ["app": "mail", "user": "ann"])
        expectKeychainError(.interactionNotAllowed) { try store.secret(of: mail, in: login) }

        try engine.unlock(passcode: "1234")
        #expect(try store.secret(of: mail, in: login).value == Data("s".utf8))
        // A new item while unlocked, then a lock: the new snapshot has it.
        let later = try SecretStoreSearchCacheTests.create(store, in: login, ["app": "mail", "user": "bob"])
        engine.lock()
        #expect(Set(try store.itemIDs(in: login, matching: ["app": "mail"])) == [mail, later])
    }

    @Test("While locked, searches match every pair exactly, Unicode and empty values too, as the engine's do")
    func lockedSearchesMatchAsTheEngine() throws {
        let (home, engine, store, login) = try Self.passcodeStore(keepingIndex: true)
        defer { _ = home }
        let sets: [[String: String]] = [
            ["service": "café ☕", "user": "zoë"], ["service": "café ☕", "user": ""], ["service": "café"], [:],
            ["a": "1", "b": "2", "c": "3"],
        ]
        for attributes in sets { _ = try SecretStoreSearchCacheTests.create(store, in: login, attributes) }
        let queries: [[String: String]] = [
            [:], ["service": "café ☕"], ["user": ""], ["user": "zoë", "service": "café ☕"], ["service": "caf"],
            ["a": "1", "c": "3"], ["a": "1", "c": "4"], ["missing": ""],
        ]
        var unlocked: [[String: String]: Set<String>] = [:]
        for query in queries { unlocked[query] = Set(try store.items(in: login, matching: query).map(\.id)) }
        let labels = Dictionary(uniqueKeysWithValues: try store.items(in: login).map { ($0.id, $0) })
        engine.lock()
        for query in queries {
            #expect(Set(try store.items(in: login, matching: query).map(\.id)) == unlocked[query], "\(query)")
        }
        for (id, item) in labels { #expect(try store.item(id, in: login) == item) }
        #expect(try store.item("0000000000000000", in: login) == nil)
    }

    @Test("Not kept unless asked (no Secret Service in this process): a locked search fails as the engine's")
    func notKeptUnlessAsked() throws {
        let (home, engine, store, login) = try Self.passcodeStore(keepingIndex: false)
        defer { _ = home }
        _ = try SecretStoreSearchCacheTests.create(store, in: login, ["app": "mail"])
        engine.lock()
        expectKeychainError(.interactionNotAllowed, "a locked keychain answered a search with nothing kept") {
            try store.items(in: login, matching: ["app": "mail"])
        }
    }

    @Test("Without a passcode, a collection a client locked stays locked until the keychain is unlocked")
    func clientLocks() throws {
        let home = Home()
        let engine = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        let store = SecretStore(engine: engine)
        store.lockCollections(["login", "work"])
        #expect(store.isLockedByClient("login") && store.isLockedByClient("work"))
        store.unlockCollections(["work"])
        #expect(store.isLockedByClient("login") && !store.isLockedByClient("work"))
        try engine.unlock(passcode: "")  // `security unlock-keychain` with no passcode set
        #expect(!store.isLockedByClient("login"))
    }
}
