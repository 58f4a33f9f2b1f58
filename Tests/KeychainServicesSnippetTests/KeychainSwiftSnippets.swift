// keychain-swift snippets
// Project: evgenyneu/keychain-swift — https://github.com/evgenyneu/keychain-swift
// Read at commit 5e1b02b6a9dac2a759a1d5dbc175c86bd192a608
// (Sources/KeychainSwift.swift, Sources/TegKeychainConstants.swift, Sources/KeychainSwiftAccessOptions.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - `var lastResultCode: OSStatus = noErr` (noErr must be an OSStatus, as in Apple's Darwin overlay)
//   - `lastResultCode == noErr` after SecItemAdd / SecItemDelete
//   - keys made by `static func toString(_ value: CFString) -> String { value as String }`
//   - `withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0)) }`
//   - Swift `Bool` values (`true`) for kSecReturnData / kSecReturnAttributes (not kCFBooleanTrue)
//   - kSecReturnData + kSecReturnAttributes + kSecReturnPersistentRef with kSecMatchLimitAll → `[[String: Any]]`
//   - `kSecAttrSynchronizable: addingItems ? true : kSecAttrSynchronizableAny` (Bool on add, CFString on query)
//   - delete-then-add set(); clear() with only `[kSecClass as String: kSecClassGenericPassword]`

import Foundation
import KeychainServices
import Testing

// Shape: evgenyneu/keychain-swift Sources/TegKeychainConstants.swift — KeychainSwiftConstants
struct KeychainSwiftLikeConstants {
    static var accessGroup: String { toString(kSecAttrAccessGroup) }
    static var accessible: String { toString(kSecAttrAccessible) }
    static var attrAccount: String { toString(kSecAttrAccount) }
    static var attrSynchronizable: String { toString(kSecAttrSynchronizable) }
    static var klass: String { toString(kSecClass) }
    static var matchLimit: String { toString(kSecMatchLimit) }
    static var returnData: String { toString(kSecReturnData) }
    static var valueData: String { toString(kSecValueData) }
    static var returnReference: String { toString(kSecReturnPersistentRef) }
    static var returnAttributes: String { toString(kSecReturnAttributes) }
    static var secMatchLimitAll: String { toString(kSecMatchLimitAll) }
    static func toString(_ value: CFString) -> String { value as String }
}

// Shape: evgenyneu/keychain-swift Sources/KeychainSwiftAccessOptions.swift — KeychainSwiftAccessOptions.value
enum KeychainSwiftLikeAccessOptions {
    case accessibleWhenUnlocked, accessibleWhenUnlockedThisDeviceOnly, accessibleAfterFirstUnlock, accessibleAfterFirstUnlockThisDeviceOnly
    var value: String {
        switch self {
        case .accessibleWhenUnlocked: return KeychainSwiftLikeConstants.toString(kSecAttrAccessibleWhenUnlocked)
        case .accessibleWhenUnlockedThisDeviceOnly: return KeychainSwiftLikeConstants.toString(kSecAttrAccessibleWhenUnlockedThisDeviceOnly)
        case .accessibleAfterFirstUnlock: return KeychainSwiftLikeConstants.toString(kSecAttrAccessibleAfterFirstUnlock)
        case .accessibleAfterFirstUnlockThisDeviceOnly: return KeychainSwiftLikeConstants.toString(kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly)
        }
    }
}

final class KeychainSwiftLike {
    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.lastResultCode
    var lastResultCode: OSStatus = noErr
    var lastQueryParameters: [String: Any]?
    var keyPrefix = ""
    var accessGroup: String?
    var synchronizable: Bool = false
    private let lock = NSLock()

    init(keyPrefix: String = "") { self.keyPrefix = keyPrefix }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.set(_: Data, forKey:withAccess:)
    @discardableResult func keychainSwiftSet(_ value: Data, forKey key: String, withAccess access: KeychainSwiftLikeAccessOptions? = nil) -> Bool {
        lock.lock(); defer { lock.unlock() }
        keychainSwiftDeleteNoLock(key)
        let accessible = access?.value ?? KeychainSwiftLikeAccessOptions.accessibleWhenUnlocked.value
        var query: [String: Any] = [
            KeychainSwiftLikeConstants.klass: kSecClassGenericPassword,
            KeychainSwiftLikeConstants.attrAccount: keyPrefix + key,
            KeychainSwiftLikeConstants.valueData: value,
            KeychainSwiftLikeConstants.accessible: accessible,
        ]
        query = keychainSwiftAddAccessGroupWhenPresent(query)
        query = keychainSwiftAddSynchronizableIfRequired(query, addingItems: true)
        lastQueryParameters = query
        lastResultCode = SecItemAdd(query as CFDictionary, nil)
        return lastResultCode == noErr
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.set(_: Bool, forKey:withAccess:) / getBool(_:)
    @discardableResult func keychainSwiftSetBool(_ value: Bool, forKey key: String) -> Bool {
        let bytes: [UInt8] = value ? [1] : [0]
        return keychainSwiftSet(Data(bytes), forKey: key)
    }
    func keychainSwiftGetBool(_ key: String) -> Bool? {
        guard let data = keychainSwiftGetData(key), let firstBit = data.first else { return nil }
        return firstBit == 1
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.getData(_:asReference:)
    func keychainSwiftGetData(_ key: String, asReference: Bool = false) -> Data? {
        lock.lock(); defer { lock.unlock() }
        var query: [String: Any] = [
            KeychainSwiftLikeConstants.klass: kSecClassGenericPassword,
            KeychainSwiftLikeConstants.attrAccount: keyPrefix + key,
            KeychainSwiftLikeConstants.matchLimit: kSecMatchLimitOne,
        ]
        if asReference {
            query[KeychainSwiftLikeConstants.returnReference] = kCFBooleanTrue
        } else {
            query[KeychainSwiftLikeConstants.returnData] = kCFBooleanTrue
        }
        query = keychainSwiftAddAccessGroupWhenPresent(query)
        query = keychainSwiftAddSynchronizableIfRequired(query, addingItems: false)
        lastQueryParameters = query
        var result: AnyObject?
        lastResultCode = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        return lastResultCode == noErr ? result as? Data : nil
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.allKeys
    var keychainSwiftAllKeys: [String] {
        var query: [String: Any] = [
            KeychainSwiftLikeConstants.klass: kSecClassGenericPassword,
            KeychainSwiftLikeConstants.returnData: true,
            KeychainSwiftLikeConstants.returnAttributes: true,
            KeychainSwiftLikeConstants.returnReference: true,
            KeychainSwiftLikeConstants.matchLimit: KeychainSwiftLikeConstants.secMatchLimitAll,
        ]
        query = keychainSwiftAddAccessGroupWhenPresent(query)
        query = keychainSwiftAddSynchronizableIfRequired(query, addingItems: false)
        var result: AnyObject?
        let lastResultCode = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        guard lastResultCode == noErr else { return [] }
        return (result as? [[String: Any]])?.compactMap { $0[KeychainSwiftLikeConstants.attrAccount] as? String } ?? []
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.delete(_:) / deleteNoLock(_:)
    @discardableResult func keychainSwiftDeleteNoLock(_ key: String) -> Bool {
        var query: [String: Any] = [
            KeychainSwiftLikeConstants.klass: kSecClassGenericPassword,
            KeychainSwiftLikeConstants.attrAccount: keyPrefix + key,
        ]
        query = keychainSwiftAddAccessGroupWhenPresent(query)
        query = keychainSwiftAddSynchronizableIfRequired(query, addingItems: false)
        lastQueryParameters = query
        lastResultCode = SecItemDelete(query as CFDictionary)
        return lastResultCode == noErr
    }
    @discardableResult func keychainSwiftDelete(_ key: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return keychainSwiftDeleteNoLock(key)
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.clear()
    @discardableResult func keychainSwiftClear() -> Bool {
        lock.lock(); defer { lock.unlock() }
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        query = keychainSwiftAddAccessGroupWhenPresent(query)
        query = keychainSwiftAddSynchronizableIfRequired(query, addingItems: false)
        lastQueryParameters = query
        lastResultCode = SecItemDelete(query as CFDictionary)
        return lastResultCode == noErr
    }

    // Shape: evgenyneu/keychain-swift Sources/KeychainSwift.swift — KeychainSwift.addAccessGroupWhenPresent(_:) / addSynchronizableIfRequired(_:addingItems:)
    func keychainSwiftAddAccessGroupWhenPresent(_ items: [String: Any]) -> [String: Any] {
        guard let accessGroup = accessGroup else { return items }
        var result: [String: Any] = items
        result[KeychainSwiftLikeConstants.accessGroup] = accessGroup
        return result
    }
    func keychainSwiftAddSynchronizableIfRequired(_ items: [String: Any], addingItems: Bool) -> [String: Any] {
        if !synchronizable { return items }
        var result: [String: Any] = items
        result[KeychainSwiftLikeConstants.attrSynchronizable] = addingItems == true ? true : kSecAttrSynchronizableAny
        return result
    }
}

// MARK: - Tests

@Suite struct KeychainSwiftSnippets {
    @Test(arguments: Mode.allCases) func setGetDeleteWithLastResultCode(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let ks = KeychainSwiftLike()
            #expect(ks.keychainSwiftGetData("alice") == nil)
            #expect(ks.lastResultCode == errSecItemNotFound)
            #expect(ks.keychainSwiftSet(Data("s3cret".utf8), forKey: "alice"))
            #expect(ks.lastResultCode == noErr)
            #expect(ks.keychainSwiftGetData("alice") == Data("s3cret".utf8))
            #expect(ks.keychainSwiftSet(Data("n3w".utf8), forKey: "alice"))  // delete-then-add
            #expect(ks.keychainSwiftGetData("alice") == Data("n3w".utf8))
            let ref = try #require(ks.keychainSwiftGetData("alice", asReference: true))
            #expect(!ref.isEmpty && ref != Data("n3w".utf8))
            #expect(ks.keychainSwiftDelete("alice"))
            #expect(ks.keychainSwiftDelete("alice") == false)
            #expect(ks.lastResultCode == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func allKeysReturnsDataAttributesAndRefs(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let ks = KeychainSwiftLike(keyPrefix: "p_")
            #expect(ks.keychainSwiftAllKeys.isEmpty)
            ks.keychainSwiftSet(Data("1".utf8), forKey: "a")
            ks.keychainSwiftSet(Data("2".utf8), forKey: "b")
            #expect(ks.keychainSwiftAllKeys.sorted() == ["p_a", "p_b"])
            // The same query, inspected: each element carries data, attributes and a persistent ref.
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true,
                kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true,
                kSecMatchLimit as String: kSecMatchLimitAll as String,
            ]
            var result: AnyObject?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let items = (result as? [[String: Any]]) ?? []
            #expect(items.count == 2)
            #expect(items.allSatisfy { $0[kSecValueData as String] is Data && $0[kSecValuePersistentRef as String] is Data })
            #expect(ks.keychainSwiftClear())
            #expect(ks.keychainSwiftClear() == false)
            #expect(ks.lastResultCode == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func synchronizableBoolOnAddAnyOnQuery(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let synced = KeychainSwiftLike()
            synced.synchronizable = true
            let local = KeychainSwiftLike()
            #expect(synced.keychainSwiftSet(Data("cloud".utf8), forKey: "token"))
            #expect(synced.lastQueryParameters?[kSecAttrSynchronizable as String] as? Bool == true)
            #expect(local.keychainSwiftGetData("token") == nil)
            #expect(local.lastResultCode == errSecItemNotFound)
            #expect(synced.keychainSwiftGetData("token") == Data("cloud".utf8))
            #expect(synced.lastQueryParameters?[kSecAttrSynchronizable as String] as? String == kSecAttrSynchronizableAny as String)
            #expect(synced.keychainSwiftAllKeys == ["token"])
            #expect(local.keychainSwiftClear() == false)  // clear() without the attribute leaves synchronizable items alone
            #expect(synced.keychainSwiftClear())
            #expect(synced.keychainSwiftGetData("token") == nil)
        }
    }

    @Test(arguments: Mode.allCases) func accessGroupAndAccessOption(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let shared = KeychainSwiftLike()
            shared.accessGroup = "com.example.shared"
            let app = KeychainSwiftLike()
            app.accessGroup = "com.example.app"
            #expect(shared.keychainSwiftSet(Data("s".utf8), forKey: "k", withAccess: .accessibleAfterFirstUnlockThisDeviceOnly))
            #expect(app.keychainSwiftGetData("k") == nil)
            #expect(KeychainSwiftLike().keychainSwiftGetData("k") == Data("s".utf8))
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "k",
                kSecReturnAttributes as String: true,
            ]
            var result: AnyObject?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrAccessGroup as String] as? String == "com.example.shared")
            #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        }
    }

    @Test(arguments: Mode.allCases) func boolRoundTrip(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let ks = KeychainSwiftLike()
            #expect(ks.keychainSwiftGetBool("flag") == nil)
            #expect(ks.keychainSwiftSetBool(true, forKey: "flag"))
            #expect(ks.keychainSwiftGetBool("flag") == true)
            #expect(ks.keychainSwiftGetData("flag") == Data([1]))
            #expect(ks.keychainSwiftSetBool(false, forKey: "flag"))
            #expect(ks.keychainSwiftGetBool("flag") == false)
        }
    }
}
