// SwiftKeychainWrapper snippets
// Project: jrendel/SwiftKeychainWrapper — https://github.com/jrendel/SwiftKeychainWrapper
// Read at commit a3e100403a231040a55c66dd80fdadb9503abf19
// (SwiftKeychainWrapper/KeychainWrapper.swift, SwiftKeychainWrapper/KeychainItemAccessibility.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - file-level `String!` constants made with `kSec… as String`
//   - kSecAttrAccount and kSecAttrGeneric stored as UTF-8 `Data` (not String), read back with `as? Data`
//   - `status == noErr ? result as? Data : nil` (noErr compared with an OSStatus)
//   - `SecItemAdd` → on `errSecDuplicateItem` fall back to `SecItemUpdate(query, [SecValueData: value])`
//   - `result as? [String: AnyObject]`, `result as? [[AnyHashable: Any]]`, and `attributes[kSecAttrAccount]`
//     (an AnyHashable subscript with a CFString key)
//   - `[KeychainItemAccessibility: CFString]` lookup table and `value == keychainAttrValue` (CFString == CFString)
//   - `kCFBooleanTrue!` inside a `[String: Any]` literal, `kSecAttrSynchronizable` as kCFBooleanTrue/kCFBooleanFalse
//   - `deleteKeychainSecClass(_ secClass: AnyObject)` with `[SecClass: secClass] as CFDictionary` ([String: AnyObject])

import Foundation
import KeychainServices
import Testing

// Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — file-level private constants (SecMatchLimit … SecAttrSynchronizable)
private let keychainWrapperSecMatchLimit: String! = kSecMatchLimit as String
private let keychainWrapperSecReturnData: String! = kSecReturnData as String
private let keychainWrapperSecReturnPersistentRef: String! = kSecReturnPersistentRef as String
private let keychainWrapperSecValueData: String! = kSecValueData as String
private let keychainWrapperSecAttrAccessible: String! = kSecAttrAccessible as String
private let keychainWrapperSecClass: String! = kSecClass as String
private let keychainWrapperSecAttrService: String! = kSecAttrService as String
private let keychainWrapperSecAttrGeneric: String! = kSecAttrGeneric as String
private let keychainWrapperSecAttrAccount: String! = kSecAttrAccount as String
private let keychainWrapperSecAttrAccessGroup: String! = kSecAttrAccessGroup as String
private let keychainWrapperSecReturnAttributes: String = kSecReturnAttributes as String
private let keychainWrapperSecAttrSynchronizable: String = kSecAttrSynchronizable as String

// Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainItemAccessibility.swift — KeychainItemAccessibility + keychainItemAccessibilityLookup
enum KeychainWrapperAccessibility: Hashable {
    case afterFirstUnlock, afterFirstUnlockThisDeviceOnly, whenPasscodeSetThisDeviceOnly, whenUnlocked, whenUnlockedThisDeviceOnly

    static var lookup: [KeychainWrapperAccessibility: CFString] {
        [
            .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock,
            .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
            .whenUnlocked: kSecAttrAccessibleWhenUnlocked,
            .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        ]
    }
    var keychainAttrValue: CFString { Self.lookup[self]! }
    static func accessibilityForAttributeValue(_ keychainAttrValue: CFString) -> KeychainWrapperAccessibility? {
        for (key, value) in lookup where value == keychainAttrValue { return key }
        return nil
    }
}

struct KeychainWrapperLike {
    var serviceName: String
    var accessGroup: String? = nil

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.setupKeychainQueryDictionary(forKey:withAccessibility:isSynchronizable:)
    func keychainWrapperQuery(forKey key: String, withAccessibility accessibility: KeychainWrapperAccessibility? = nil, isSynchronizable: Bool = false) -> [String: Any] {
        var keychainQueryDictionary: [String: Any] = [keychainWrapperSecClass: kSecClassGenericPassword]
        keychainQueryDictionary[keychainWrapperSecAttrService] = serviceName
        if let accessibility = accessibility {
            keychainQueryDictionary[keychainWrapperSecAttrAccessible] = accessibility.keychainAttrValue
        }
        if let accessGroup = self.accessGroup {
            keychainQueryDictionary[keychainWrapperSecAttrAccessGroup] = accessGroup
        }
        let encodedIdentifier: Data? = key.data(using: String.Encoding.utf8)
        keychainQueryDictionary[keychainWrapperSecAttrGeneric] = encodedIdentifier
        keychainQueryDictionary[keychainWrapperSecAttrAccount] = encodedIdentifier
        keychainQueryDictionary[keychainWrapperSecAttrSynchronizable] = isSynchronizable ? kCFBooleanTrue : kCFBooleanFalse
        return keychainQueryDictionary
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.set(_: Data, forKey:withAccessibility:isSynchronizable:)
    @discardableResult func keychainWrapperSet(_ value: Data, forKey key: String, withAccessibility accessibility: KeychainWrapperAccessibility? = nil, isSynchronizable: Bool = false) -> Bool {
        var keychainQueryDictionary = keychainWrapperQuery(forKey: key, withAccessibility: accessibility, isSynchronizable: isSynchronizable)
        keychainQueryDictionary[keychainWrapperSecValueData] = value
        keychainQueryDictionary[keychainWrapperSecAttrAccessible] = (accessibility ?? .whenUnlocked).keychainAttrValue
        let status: OSStatus = SecItemAdd(keychainQueryDictionary as CFDictionary, nil)
        if status == errSecSuccess {
            return true
        } else if status == errSecDuplicateItem {
            return keychainWrapperUpdate(value, forKey: key, withAccessibility: accessibility, isSynchronizable: isSynchronizable)
        }
        return false
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.update(_:forKey:withAccessibility:isSynchronizable:) (private)
    func keychainWrapperUpdate(_ value: Data, forKey key: String, withAccessibility accessibility: KeychainWrapperAccessibility? = nil, isSynchronizable: Bool = false) -> Bool {
        let keychainQueryDictionary = keychainWrapperQuery(forKey: key, withAccessibility: accessibility, isSynchronizable: isSynchronizable)
        let updateDictionary = [keychainWrapperSecValueData: value]
        let status: OSStatus = SecItemUpdate(keychainQueryDictionary as CFDictionary, updateDictionary as CFDictionary)
        return status == errSecSuccess
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.data(forKey:withAccessibility:isSynchronizable:)
    func keychainWrapperData(forKey key: String, withAccessibility accessibility: KeychainWrapperAccessibility? = nil, isSynchronizable: Bool = false) -> Data? {
        var keychainQueryDictionary = keychainWrapperQuery(forKey: key, withAccessibility: accessibility, isSynchronizable: isSynchronizable)
        keychainQueryDictionary[keychainWrapperSecMatchLimit] = kSecMatchLimitOne
        keychainQueryDictionary[keychainWrapperSecReturnData] = kCFBooleanTrue
        var result: AnyObject?
        let status = SecItemCopyMatching(keychainQueryDictionary as CFDictionary, &result)
        return status == noErr ? result as? Data : nil
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.dataRef(forKey:withAccessibility:isSynchronizable:)
    func keychainWrapperDataRef(forKey key: String, isSynchronizable: Bool = false) -> Data? {
        var keychainQueryDictionary = keychainWrapperQuery(forKey: key, isSynchronizable: isSynchronizable)
        keychainQueryDictionary[keychainWrapperSecMatchLimit] = kSecMatchLimitOne
        keychainQueryDictionary[keychainWrapperSecReturnPersistentRef] = kCFBooleanTrue
        var result: AnyObject?
        let status = SecItemCopyMatching(keychainQueryDictionary as CFDictionary, &result)
        return status == noErr ? result as? Data : nil
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.accessibilityOfKey(_:)
    func keychainWrapperAccessibilityOfKey(_ key: String) -> KeychainWrapperAccessibility? {
        var keychainQueryDictionary = keychainWrapperQuery(forKey: key)
        keychainQueryDictionary.removeValue(forKey: keychainWrapperSecAttrAccessible)
        keychainQueryDictionary[keychainWrapperSecMatchLimit] = kSecMatchLimitOne
        keychainQueryDictionary[keychainWrapperSecReturnAttributes] = kCFBooleanTrue
        var result: AnyObject?
        let status = SecItemCopyMatching(keychainQueryDictionary as CFDictionary, &result)
        guard status == noErr, let resultsDictionary = result as? [String: AnyObject],
            let accessibilityAttrValue = resultsDictionary[keychainWrapperSecAttrAccessible] as? String
        else {
            return nil
        }
        return KeychainWrapperAccessibility.accessibilityForAttributeValue(accessibilityAttrValue as CFString)
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.allKeys()
    func keychainWrapperAllKeys() -> Set<String> {
        var keychainQueryDictionary: [String: Any] = [
            keychainWrapperSecClass: kSecClassGenericPassword,
            keychainWrapperSecAttrService: serviceName,
            keychainWrapperSecReturnAttributes: kCFBooleanTrue!,
            keychainWrapperSecMatchLimit: kSecMatchLimitAll,
        ]
        if let accessGroup = self.accessGroup { keychainQueryDictionary[keychainWrapperSecAttrAccessGroup] = accessGroup }
        var result: AnyObject?
        let status = SecItemCopyMatching(keychainQueryDictionary as CFDictionary, &result)
        guard status == errSecSuccess else { return [] }
        var keys = Set<String>()
        if let results = result as? [[AnyHashable: Any]] {
            for attributes in results {
                if let accountData = attributes[keychainWrapperSecAttrAccount] as? Data,
                    let key = String(data: accountData, encoding: .utf8)
                {
                    keys.insert(key)
                } else if let accountData = attributes[kSecAttrAccount] as? Data,
                    let key = String(data: accountData, encoding: .utf8)
                {
                    keys.insert(key)
                }
            }
        }
        return keys
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.removeObject(forKey:withAccessibility:isSynchronizable:)
    @discardableResult func keychainWrapperRemoveObject(forKey key: String, isSynchronizable: Bool = false) -> Bool {
        let keychainQueryDictionary: [String: Any] = keychainWrapperQuery(forKey: key, isSynchronizable: isSynchronizable)
        let status: OSStatus = SecItemDelete(keychainQueryDictionary as CFDictionary)
        return status == errSecSuccess
    }

    // Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.removeAllKeys()
    @discardableResult func keychainWrapperRemoveAllKeys() -> Bool {
        var keychainQueryDictionary: [String: Any] = [keychainWrapperSecClass: kSecClassGenericPassword]
        keychainQueryDictionary[keychainWrapperSecAttrService] = serviceName
        if let accessGroup = self.accessGroup { keychainQueryDictionary[keychainWrapperSecAttrAccessGroup] = accessGroup }
        let status: OSStatus = SecItemDelete(keychainQueryDictionary as CFDictionary)
        return status == errSecSuccess
    }
}

// Shape: jrendel/SwiftKeychainWrapper SwiftKeychainWrapper/KeychainWrapper.swift — KeychainWrapper.wipeKeychain() / deleteKeychainSecClass(_:)
@discardableResult func keychainWrapperDeleteSecClass(_ secClass: AnyObject) -> Bool {
    let query = [keychainWrapperSecClass!: secClass]
    let status: OSStatus = SecItemDelete(query as CFDictionary)
    return status == errSecSuccess
}
func keychainWrapperWipeKeychain() -> [Bool] {
    [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey, kSecClassIdentity]
        .map { keychainWrapperDeleteSecClass($0) }
}

// MARK: - Tests

@Suite struct SwiftKeychainWrapperSnippets {
    @Test(arguments: Mode.allCases) func setFallsBackToUpdateOnDuplicate(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let wrapper = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(wrapper.keychainWrapperData(forKey: "alice") == nil)
            #expect(wrapper.keychainWrapperSet(Data("s3cret".utf8), forKey: "alice"))
            #expect(wrapper.keychainWrapperData(forKey: "alice") == Data("s3cret".utf8))
            var raw = wrapper.keychainWrapperQuery(forKey: "alice")
            raw[kSecValueData as String] = Data("again".utf8)
            #expect(SecItemAdd(raw as CFDictionary, nil) == errSecDuplicateItem)
            #expect(wrapper.keychainWrapperSet(Data("n3w".utf8), forKey: "alice"))  // duplicate → update
            #expect(wrapper.keychainWrapperData(forKey: "alice") == Data("n3w".utf8))
            #expect(wrapper.keychainWrapperUpdate(Data("x".utf8), forKey: "nobody") == false)
            #expect(
                SecItemUpdate(
                    wrapper.keychainWrapperQuery(forKey: "nobody") as CFDictionary,
                    [kSecValueData as String: Data("x".utf8)] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func accountStoredAsDataComesBackAsData(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let wrapper = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(wrapper.keychainWrapperAllKeys().isEmpty)
            wrapper.keychainWrapperSet(Data("1".utf8), forKey: "alice")
            wrapper.keychainWrapperSet(Data("2".utf8), forKey: "bob")
            KeychainWrapperLike(serviceName: "other").keychainWrapperSet(Data("3".utf8), forKey: "carol")
            #expect(wrapper.keychainWrapperAllKeys() == ["alice", "bob"])
            var query = wrapper.keychainWrapperQuery(forKey: "alice")
            query[kSecReturnAttributes as String] = true
            var result: AnyObject?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrAccount as String] as? Data == Data("alice".utf8))
            #expect(attributes[kSecAttrGeneric as String] as? Data == Data("alice".utf8))
        }
    }

    @Test(arguments: Mode.allCases) func accessibilityOfKey(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let wrapper = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(wrapper.keychainWrapperAccessibilityOfKey("alice") == nil)
            wrapper.keychainWrapperSet(Data("1".utf8), forKey: "alice")
            wrapper.keychainWrapperSet(Data("2".utf8), forKey: "bob", withAccessibility: .afterFirstUnlockThisDeviceOnly)
            #expect(wrapper.keychainWrapperAccessibilityOfKey("alice") == .whenUnlocked)
            #expect(wrapper.keychainWrapperAccessibilityOfKey("bob") == .afterFirstUnlockThisDeviceOnly)
            // Accessibility is part of the query when given: a mismatching class finds nothing.
            #expect(wrapper.keychainWrapperData(forKey: "bob", withAccessibility: .whenUnlocked) == nil)
            #expect(wrapper.keychainWrapperData(forKey: "bob", withAccessibility: .afterFirstUnlockThisDeviceOnly) == Data("2".utf8))
        }
    }

    @Test(arguments: Mode.allCases) func persistentDataRef(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let wrapper = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(wrapper.keychainWrapperDataRef(forKey: "vpn") == nil)
            wrapper.keychainWrapperSet(Data("vpn-secret".utf8), forKey: "vpn")
            let ref = try #require(wrapper.keychainWrapperDataRef(forKey: "vpn"))
            let byRef: [String: Any] = [kSecValuePersistentRef as String: ref, kSecReturnData as String: kCFBooleanTrue!]
            var result: AnyObject?
            #expect(SecItemCopyMatching(byRef as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("vpn-secret".utf8))
            #expect(wrapper.keychainWrapperRemoveObject(forKey: "vpn"))
            #expect(wrapper.keychainWrapperRemoveObject(forKey: "vpn") == false)
            #expect(SecItemCopyMatching(byRef as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func synchronizableIsPartOfTheQuery(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let wrapper = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(wrapper.keychainWrapperSet(Data("cloud".utf8), forKey: "token", isSynchronizable: true))
            #expect(wrapper.keychainWrapperData(forKey: "token") == nil)
            #expect(wrapper.keychainWrapperData(forKey: "token", isSynchronizable: true) == Data("cloud".utf8))
            #expect(wrapper.keychainWrapperSet(Data("local".utf8), forKey: "token"))  // a second, non-synchronizable item
            #expect(wrapper.keychainWrapperData(forKey: "token") == Data("local".utf8))
            #expect(wrapper.keychainWrapperRemoveObject(forKey: "token"))
            #expect(wrapper.keychainWrapperData(forKey: "token", isSynchronizable: true) == Data("cloud".utf8))
        }
    }

    @Test(arguments: Mode.allCases) func accessGroups(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let shared = KeychainWrapperLike(serviceName: "com.example.wrapper", accessGroup: "com.example.shared")
            let app = KeychainWrapperLike(serviceName: "com.example.wrapper", accessGroup: "com.example.app")
            let anyGroup = KeychainWrapperLike(serviceName: "com.example.wrapper")
            #expect(shared.keychainWrapperSet(Data("s".utf8), forKey: "k"))
            #expect(anyGroup.keychainWrapperData(forKey: "k") == Data("s".utf8))
            #expect(app.keychainWrapperData(forKey: "k") == nil)
            #expect(shared.keychainWrapperAllKeys() == ["k"])
            #expect(app.keychainWrapperAllKeys().isEmpty)
            let foreign = KeychainWrapperLike(serviceName: "com.example.wrapper", accessGroup: "com.other.team")
            #expect(foreign.keychainWrapperSet(Data("x".utf8), forKey: "k") == false)
            var raw = foreign.keychainWrapperQuery(forKey: "k")
            raw[kSecValueData as String] = Data("x".utf8)
            #expect(SecItemAdd(raw as CFDictionary, nil) == errSecMissingEntitlement)
        }
    }

    @Test(arguments: Mode.allCases) func removeAllKeysAndWipe(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let one = KeychainWrapperLike(serviceName: "one")
            let two = KeychainWrapperLike(serviceName: "two")
            one.keychainWrapperSet(Data("a".utf8), forKey: "a")
            one.keychainWrapperSet(Data("b".utf8), forKey: "b")
            two.keychainWrapperSet(Data("c".utf8), forKey: "c")
            let internet: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                kSecAttrAccount as String: "alice", kSecValueData as String: Data("w".utf8),
            ]
            #expect(SecItemAdd(internet as CFDictionary, nil) == errSecSuccess)
            #expect(one.keychainWrapperRemoveAllKeys())
            #expect(one.keychainWrapperRemoveAllKeys() == false)  // errSecItemNotFound
            #expect(two.keychainWrapperAllKeys() == ["c"])
            #expect(keychainWrapperWipeKeychain() == [true, true, false, false, false])
            #expect(SecItemCopyMatching([kSecClass as String: kSecClassGenericPassword] as CFDictionary, nil) == errSecItemNotFound)
            #expect(SecItemCopyMatching([kSecClass as String: kSecClassInternetPassword] as CFDictionary, nil) == errSecItemNotFound)
        }
    }
}
