import Foundation
import KeychainCore
import Testing
@testable import KeychainServices

/// The file-based keychains of SecKeychain.h: `kSecUseKeychain` chooses where an add goes, `kSecMatchSearchList`
/// which keychains a search, an update or a delete acts on, in order; with neither the user's search list. In
/// process and through a real keychaind.
@Suite("SecKeychain: several keychains and the search list")
struct SecKeychainTests {
    static func item(_ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account,
            kSecAttrService as String: "example.com",
        ]
        query.merge(extra) { $1 }
        return query
    }

    static func secrets(_ query: [String: Any]) -> (OSStatus, [String]) {
        var result: CFTypeRef?
        var full = query
        full[kSecReturnData as String] = true
        full[kSecMatchLimit as String] = kSecMatchLimitAll
        let status = SecItemCopyMatching(full as CFDictionary, &result)
        let items = (result as? [Data] ?? []).map { String(decoding: $0, as: UTF8.self) }
        return (status, items)
    }

    @Test(arguments: Backend.allCases)
    func addsAndSearchesFollowTheKeychainsNamed(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.engine.createKeychain(KeychainName("work"), passcode: nil)
        try kc.run { () throws in
            var opened: SecKeychain?
            #expect(SecKeychainOpen("work", &opened) == errSecSuccess)
            let work = try #require(opened)
            #expect(CFGetTypeID(work) == SecKeychainGetTypeID())
            #expect(SecItemAdd(Self.item("alice", [kSecValueData as String: Data("login".utf8)]) as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemAdd(Self.item("alice", [kSecValueData as String: Data("work".utf8), kSecUseKeychain as String: work]) as CFDictionary, nil) == errSecSuccess)

            // The search list is the login keychain until it is changed.
            #expect(Self.secrets(Self.item("alice")) == (errSecSuccess, ["login"]))
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [work]])) == (errSecSuccess, ["work"]))
            var openedLogin: SecKeychain?
            #expect(SecKeychainOpen("login.keychain-db", &openedLogin) == errSecSuccess)
            let login = try #require(openedLogin)
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [work, login]])) == (errSecSuccess, ["work", "login"]))
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [login, work]])) == (errSecSuccess, ["login", "work"]))

            // An update and a delete act on the keychains named only.
            #expect(
                SecItemUpdate(
                    Self.item("alice", [kSecMatchSearchList as String: [work]]) as CFDictionary,
                    [kSecValueData as String: Data("work 2".utf8)] as CFDictionary) == errSecSuccess)
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [work, login]])) == (errSecSuccess, ["work 2", "login"]))
            #expect(SecItemDelete(Self.item("alice", [kSecMatchSearchList as String: [work]]) as CFDictionary) == errSecSuccess)
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [work]])).0 == errSecItemNotFound)
            #expect(Self.secrets(Self.item("alice")) == (errSecSuccess, ["login"]))

            var list: CFArray?
            #expect(SecKeychainCopySearchList(&list) == errSecSuccess)
            #expect((list as? [SecKeychain])?.map(\.name.rawValue) == ["login"])
            var defaultKeychain: SecKeychain?
            #expect(SecKeychainCopyDefault(&defaultKeychain) == errSecSuccess)
            #expect(defaultKeychain?.name == .login)
            var status: SecKeychainStatus = 0
            #expect(SecKeychainGetStatus(work, &status) == errSecSuccess)
            #expect(status == kSecUnlockStateStatus | kSecReadPermStatus | kSecWritePermStatus)
        }
    }

    @Test(arguments: Backend.allCases)
    func theSearchListDecidesWhereAQueryWithoutOneLooks(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.engine.createKeychain(KeychainName("work"), passcode: nil)
        let listChange: OSStatus = kc.run {
            var work: SecKeychain?
            var login: SecKeychain?
            _ = SecKeychainOpen("work.keychain-db", &work)
            _ = SecKeychainOpen("login.keychain", &login)
            #expect(SecItemAdd(Self.item("bob", [kSecValueData as String: Data("work".utf8), kSecUseKeychain as String: work as Any]) as CFDictionary, nil) == errSecSuccess)
            #expect(Self.secrets(Self.item("bob")).0 == errSecItemNotFound)
            return SecKeychainSetSearchList([work as Any, login as Any] as CFArray)
        }
        switch backend {
        case .embedded:
            #expect(listChange == errSecSuccess)
        case .daemon:
            // Through keychaind only the security tool changes the search list.
            #expect(listChange == errSecMissingEntitlement)
            try kc.engine.setSearchList([KeychainName("work"), .login], defaultKeychain: nil)
        }
        kc.run {
            #expect(Self.secrets(Self.item("bob")) == (errSecSuccess, ["work"]))
        }
    }

    @Test func badKeychainReferencesAreRefused() throws {
        let kc = try TestKeychain()
        kc.run {
            var keychain: SecKeychain?
            for bad in ["", ".hidden", "a b", String(repeating: "x", count: 65)] {
                #expect(SecKeychainOpen(bad, &keychain) == errSecParam, "\(bad)")
                #expect(keychain == nil)
            }
            // A keychain is named by a SecKeychain, not by a string.
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: ["work"]])).0 == errSecParam)
            #expect(SecItemAdd(Self.item("alice", [kSecUseKeychain as String: "work"]) as CFDictionary, nil) == errSecParam)
            // A keychain that does not exist.
            #expect(SecKeychainOpen("missing", &keychain) == errSecSuccess)
            #expect(Self.secrets(Self.item("alice", [kSecMatchSearchList as String: [keychain as Any]])).0 == errSecNoSuchKeychain)
            #expect(SecItemAdd(Self.item("alice", [kSecUseKeychain as String: keychain as Any]) as CFDictionary, nil) == errSecNoSuchKeychain)
        }
    }
}
