// KeychainAccess snippets
// Project: kishikawakatsumi/KeychainAccess — https://github.com/kishikawakatsumi/KeychainAccess
// Read at commit e0c7eebc5a4465a3c4680764f26b7a61f567cdaf (Lib/KeychainAccess/Keychain.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - `String(kSec…)` keys (CFString → String via String.init) in `[String: Any]` queries, `as CFDictionary`
//   - `kSecAttrSynchronizable` set to `String(kSecAttrSynchronizableAny)` (a Swift String, not the CFString)
//   - `kCFBooleanTrue` / `kCFBooleanFalse` values, `result: AnyObject?` cast to `Data`, `[String: Any]`, `[[String: Any]]`
//   - "copy, then update or add" set(); `switch status { case errSecSuccess, errSecInteractionNotAllowed: … }`
//   - `#if os(iOS) / #elseif os(macOS) / #else` authentication-UI branches (Linux compiles `#else`)
//   - `#if !os(iOS) && !os(watchOS) && !os(tvOS)` → kSecMatchLimitAll on SecItemDelete (compiled on Linux)
//   - `#if os(iOS) || os(watchOS) || os(tvOS)` → kSecReturnData with kSecMatchLimitAll (NOT compiled on Linux)
//   - SecAccessControlCreateWithFlags(kCFAllocatorDefault, x as CFTypeRef, SecAccessControlCreateFlags(rawValue:), &Unmanaged<CFError>?)
//     with `takeUnretainedValue()`, and CFErrorGetDomain/CFErrorGetCode/CFErrorCopyUserInfo → NSError
//   - internet passwords (server / port / protocol / authentication type), persistent refs in returned attributes
//   - `switch rawValue { case String(kSecAttrAccessibleWhenUnlocked): … }` accessibility mapping

import Foundation
import KeychainServices
import Testing

struct KeychainAccessStatusError: Error, Equatable {
    let status: OSStatus
}

struct KeychainAccessOptions {
    var itemClass: String = String(kSecClassGenericPassword)
    var service: String = "com.example.keychainaccess"
    var server: URL = URL(string: "https://example.com")!
    var accessGroup: String? = nil
    var accessibility: String = String(kSecAttrAccessibleAfterFirstUnlock)
    var authenticationPolicy: UInt? = nil
    var synchronizable: Bool = false
    var label: String? = nil
    var comment: String? = nil
    var authenticationUI: String? = nil
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Options.query(ignoringAttributeSynchronizable:)
func keychainAccessQuery(_ options: KeychainAccessOptions, ignoringAttributeSynchronizable: Bool = true) -> [String: Any] {
    var query = [String: Any]()
    query[String(kSecClass)] = options.itemClass
    if let accessGroup = options.accessGroup {
        query[String(kSecAttrAccessGroup)] = accessGroup
    }
    if ignoringAttributeSynchronizable {
        query[String(kSecAttrSynchronizable)] = String(kSecAttrSynchronizableAny)
    } else {
        query[String(kSecAttrSynchronizable)] = options.synchronizable ? kCFBooleanTrue : kCFBooleanFalse
    }
    if options.itemClass == String(kSecClassInternetPassword) {
        query[String(kSecAttrServer)] = options.server.host
        query[String(kSecAttrPort)] = options.server.port
        query[String(kSecAttrProtocol)] = String(kSecAttrProtocolHTTPS)
        query[String(kSecAttrAuthenticationType)] = String(kSecAttrAuthenticationTypeHTMLForm)
    } else {
        query[String(kSecAttrService)] = options.service
    }
    return query
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — extension CFError { var error: NSError }
extension CFError {
    var keychainAccessNSError: NSError {
        let domain = CFErrorGetDomain(self) as String
        let code = CFErrorGetCode(self)
        // KeychainAccess force-casts; a missing dictionary is an empty one here, so a test cannot crash the run.
        let userInfo = CFErrorCopyUserInfo(self) as? [String: Any] ?? [:]
        return NSError(domain: domain, code: code, userInfo: userInfo)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Options.attributes(key:value:)
func keychainAccessAttributes(_ options: KeychainAccessOptions, key: String?, value: Data) -> ([String: Any], (any Error)?) {
    var attributes: [String: Any] = key != nil ? keychainAccessQuery(options) : [:]
    if let key = key { attributes[String(kSecAttrAccount)] = key }
    attributes[String(kSecValueData)] = value
    if options.label != nil { attributes[String(kSecAttrLabel)] = options.label }
    if options.comment != nil { attributes[String(kSecAttrComment)] = options.comment }
    if let policy = options.authenticationPolicy {
        var error: Unmanaged<CFError>?
        guard let accessControl = SecAccessControlCreateWithFlags(kCFAllocatorDefault, options.accessibility as CFTypeRef, SecAccessControlCreateFlags(rawValue: CFOptionFlags(policy)), &error) else {
            if let error = error?.takeUnretainedValue() {
                return (attributes, error.keychainAccessNSError)
            }
            return (attributes, KeychainAccessStatusError(status: errSecParam))
        }
        attributes[String(kSecAttrAccessControl)] = accessControl
    } else {
        attributes[String(kSecAttrAccessible)] = options.accessibility
    }
    attributes[String(kSecAttrSynchronizable)] = options.synchronizable ? kCFBooleanTrue : kCFBooleanFalse
    return (attributes, nil)
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.set(_: Data, key:ignoringAttributeSynchronizable:)
func keychainAccessSet(_ value: Data, key: String, options: KeychainAccessOptions) throws {
    var query = keychainAccessQuery(options)
    query[String(kSecAttrAccount)] = key
    #if os(iOS)
    query[String(kSecUseAuthenticationUI)] = options.authenticationUI ?? String(kSecUseAuthenticationUIFail)
    #elseif os(macOS)
    query[String(kSecReturnData)] = kCFBooleanTrue
    query[String(kSecUseAuthenticationUI)] = options.authenticationUI ?? String(kSecUseAuthenticationUIFail)
    #else
    if let authenticationUI = options.authenticationUI {
        query[String(kSecUseAuthenticationUI)] = authenticationUI
    }
    #endif
    var status = SecItemCopyMatching(query as CFDictionary, nil)
    switch status {
    case errSecSuccess, errSecInteractionNotAllowed:
        var query = keychainAccessQuery(options)
        query[String(kSecAttrAccount)] = key
        let (attributes, error) = keychainAccessAttributes(options, key: nil, value: value)
        if let error = error { throw error }
        status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    case errSecItemNotFound:
        let (attributes, error) = keychainAccessAttributes(options, key: key, value: value)
        if let error = error { throw error }
        status = SecItemAdd(attributes as CFDictionary, nil)
    default:
        throw KeychainAccessStatusError(status: status)
    }
    if status != errSecSuccess { throw KeychainAccessStatusError(status: status) }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.getData(_:ignoringAttributeSynchronizable:)
func keychainAccessGetData(_ key: String, options: KeychainAccessOptions, ignoringAttributeSynchronizable: Bool = true) throws -> Data? {
    var query = keychainAccessQuery(options, ignoringAttributeSynchronizable: ignoringAttributeSynchronizable)
    query[String(kSecMatchLimit)] = String(kSecMatchLimitOne)
    query[String(kSecReturnData)] = kCFBooleanTrue
    query[String(kSecAttrAccount)] = key
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    switch status {
    case errSecSuccess:
        guard let data = result as? Data else { throw KeychainAccessStatusError(status: errSecDecode) }
        return data
    case errSecItemNotFound:
        return nil
    default:
        throw KeychainAccessStatusError(status: status)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.get(_:ignoringAttributeSynchronizable:handler:)
func keychainAccessGetAttributes(_ key: String, options: KeychainAccessOptions) throws -> [String: Any]? {
    var query = keychainAccessQuery(options)
    query[String(kSecMatchLimit)] = String(kSecMatchLimitOne)
    query[String(kSecReturnData)] = kCFBooleanTrue
    query[String(kSecReturnAttributes)] = kCFBooleanTrue
    query[String(kSecReturnRef)] = kCFBooleanTrue
    query[String(kSecReturnPersistentRef)] = kCFBooleanTrue
    query[String(kSecAttrAccount)] = key
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    switch status {
    case errSecSuccess:
        guard let attributes = result as? [String: Any] else { throw KeychainAccessStatusError(status: errSecDecode) }
        return attributes
    case errSecItemNotFound:
        return nil
    default:
        throw KeychainAccessStatusError(status: status)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.remove(_:ignoringAttributeSynchronizable:)
func keychainAccessRemove(_ key: String, options: KeychainAccessOptions) throws {
    var query = keychainAccessQuery(options)
    query[String(kSecAttrAccount)] = key
    let status = SecItemDelete(query as CFDictionary)
    if status != errSecSuccess && status != errSecItemNotFound {
        throw KeychainAccessStatusError(status: status)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.removeAll()
func keychainAccessRemoveAll(options: KeychainAccessOptions) throws {
    var query = keychainAccessQuery(options)
    #if !os(iOS) && !os(watchOS) && !os(tvOS)
    query[String(kSecMatchLimit)] = String(kSecMatchLimitAll)
    #endif
    let status = SecItemDelete(query as CFDictionary)
    if status != errSecSuccess && status != errSecItemNotFound {
        throw KeychainAccessStatusError(status: status)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.contains(_:withoutAuthenticationUI:)
func keychainAccessContains(_ key: String, options: KeychainAccessOptions, withoutAuthenticationUI: Bool = false) throws -> Bool {
    var query = keychainAccessQuery(options)
    query[String(kSecAttrAccount)] = key
    if withoutAuthenticationUI {
        #if os(iOS) || os(watchOS) || os(tvOS)
        query[String(kSecUseAuthenticationUI)] = options.authenticationUI ?? String(kSecUseAuthenticationUIFail)
        #else
        if #available(macOS 10.11, *) {
            query[String(kSecUseAuthenticationUI)] = options.authenticationUI ?? String(kSecUseAuthenticationUIFail)
        }
        #endif
    }
    let status = SecItemCopyMatching(query as CFDictionary, nil)
    switch status {
    case errSecSuccess:
        return true
    case errSecInteractionNotAllowed:
        return withoutAuthenticationUI
    case errSecItemNotFound:
        return false
    default:
        throw KeychainAccessStatusError(status: status)
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.allKeys(_ itemClass:) (class func)
func keychainAccessAllKeys(itemClass: String) -> [(String, String)] {
    var query = [String: Any]()
    query[String(kSecClass)] = itemClass
    query[String(kSecAttrSynchronizable)] = String(kSecAttrSynchronizableAny)
    query[String(kSecMatchLimit)] = String(kSecMatchLimitAll)
    query[String(kSecReturnAttributes)] = kCFBooleanTrue
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess, let items = result as? [[String: Any]] else { return [] }
    let groupKey = itemClass == String(kSecClassGenericPassword) ? String(kSecAttrService) : String(kSecAttrServer)
    return items.map { (($0[groupKey] as? String) ?? "", ($0[String(kSecAttrAccount)] as? String) ?? "") }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — Keychain.items() (fileprivate)
func keychainAccessItems(options: KeychainAccessOptions) -> [[String: Any]] {
    var query = keychainAccessQuery(options)
    query[String(kSecMatchLimit)] = String(kSecMatchLimitAll)
    query[String(kSecReturnAttributes)] = kCFBooleanTrue
    #if os(iOS) || os(watchOS) || os(tvOS)
    query[String(kSecReturnData)] = kCFBooleanTrue
    #endif
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    switch status {
    case errSecSuccess:
        return (result as? [[String: Any]]) ?? []
    default:
        return []
    }
}

// Shape: kishikawakatsumi/KeychainAccess Lib/KeychainAccess/Keychain.swift — extension Accessibility: RawRepresentable (init?(rawValue:))
enum KeychainAccessAccessibility: Equatable {
    case whenUnlocked, afterFirstUnlock, whenPasscodeSetThisDeviceOnly, whenUnlockedThisDeviceOnly, afterFirstUnlockThisDeviceOnly
    init?(rawValue: String) {
        switch rawValue {
        case String(kSecAttrAccessibleWhenUnlocked): self = .whenUnlocked
        case String(kSecAttrAccessibleAfterFirstUnlock): self = .afterFirstUnlock
        case String(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly): self = .whenPasscodeSetThisDeviceOnly
        case String(kSecAttrAccessibleWhenUnlockedThisDeviceOnly): self = .whenUnlockedThisDeviceOnly
        case String(kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly): self = .afterFirstUnlockThisDeviceOnly
        default: return nil
        }
    }
}

// MARK: - Tests

@Suite struct KeychainAccessSnippets {
    private func countAll(service: String) -> Int {
        let query: [String: Any] = [
            String(kSecClass): String(kSecClassGenericPassword),
            String(kSecAttrService): service,
            String(kSecAttrSynchronizable): String(kSecAttrSynchronizableAny),
            String(kSecMatchLimit): String(kSecMatchLimitAll),
            String(kSecReturnAttributes): kCFBooleanTrue!,
        ]
        var result: AnyObject?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return 0 }
        return (result as? [[String: Any]])?.count ?? -1
    }

    @Test(arguments: Mode.allCases) func setAddsThenUpdates(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let options = KeychainAccessOptions()
            try keychainAccessSet(Data("s3cret".utf8), key: "alice", options: options)
            #expect(try keychainAccessGetData("alice", options: options) == Data("s3cret".utf8))
            try keychainAccessSet(Data("n3w".utf8), key: "alice", options: options)
            #expect(try keychainAccessGetData("alice", options: options) == Data("n3w".utf8))
            #expect(countAll(service: options.service) == 1)
            // A raw second add of the same primary key is a duplicate.
            let (attributes, error) = keychainAccessAttributes(options, key: "alice", value: Data("x".utf8))
            #expect(error == nil)
            #expect(SecItemAdd(attributes as CFDictionary, nil) == errSecDuplicateItem)
            #expect(try keychainAccessGetData("bob", options: options) == nil)
        }
    }

    @Test(arguments: Mode.allCases) func getAttributesWithPersistentRef(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var options = KeychainAccessOptions()
            options.label = "Alice's token"
            options.comment = "issued by example.com"
            try keychainAccessSet(Data("tok".utf8), key: "alice", options: options)
            let attributes = try #require(try keychainAccessGetAttributes("alice", options: options))
            #expect(attributes[String(kSecValueData)] as? Data == Data("tok".utf8))
            #expect(attributes[String(kSecAttrAccount)] as? String == "alice")
            #expect(attributes[String(kSecAttrLabel)] as? String == "Alice's token")
            #expect(attributes[String(kSecAttrComment)] as? String == "issued by example.com")
            #expect(attributes[String(kSecAttrAccessGroup)] as? String == "com.example.app")
            let accessible = try #require(attributes[String(kSecAttrAccessible)] as? String)
            #expect(KeychainAccessAccessibility(rawValue: accessible) == .afterFirstUnlock)
            let persistentRef = try #require(attributes[String(kSecValuePersistentRef)] as? Data)
            var byRef: AnyObject?
            let refQuery: [String: Any] = [String(kSecValuePersistentRef): persistentRef, String(kSecReturnData): kCFBooleanTrue!]
            #expect(SecItemCopyMatching(refQuery as CFDictionary, &byRef) == errSecSuccess)
            #expect(byRef as? Data == Data("tok".utf8))
            #expect(try keychainAccessGetAttributes("nobody", options: options) == nil)
        }
    }

    @Test(arguments: Mode.allCases) func removeAndRemoveAll(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let options = KeychainAccessOptions()
            try keychainAccessRemove("missing", options: options)  // errSecItemNotFound is swallowed
            for key in ["a", "b", "c"] { try keychainAccessSet(Data(key.utf8), key: key, options: options) }
            try keychainAccessRemove("a", options: options)
            #expect(try keychainAccessGetData("a", options: options) == nil)
            var query = keychainAccessQuery(options)
            query[String(kSecAttrAccount)] = "a"
            #expect(SecItemDelete(query as CFDictionary) == errSecItemNotFound)
            #expect(countAll(service: options.service) == 2)
            try keychainAccessRemoveAll(options: options)  // kSecMatchLimitAll branch is compiled on Linux
            #expect(countAll(service: options.service) == 0)
            #expect(SecItemCopyMatching(keychainAccessQuery(options) as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func allKeysAndItemsSeeSynchronizable(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var local = KeychainAccessOptions()
            local.service = "svc.sync"
            var synced = local
            synced.synchronizable = true
            try keychainAccessSet(Data("1".utf8), key: "local", options: local)
            try keychainAccessSet(Data("2".utf8), key: "synced", options: synced)
            let keys = keychainAccessAllKeys(itemClass: String(kSecClassGenericPassword))
            #expect(keys.map { $0.0 } == ["svc.sync", "svc.sync"])
            #expect(Set(keys.map { $0.1 }) == ["local", "synced"])
            let items = keychainAccessItems(options: local)
            #expect(items.count == 2)
            #expect(items.allSatisfy { $0[String(kSecValueData)] == nil })  // ReturnData branch not compiled off-iOS
            // Without kSecAttrSynchronizableAny a query defaults to non-synchronizable items only.
            #expect(try keychainAccessGetData("synced", options: local, ignoringAttributeSynchronizable: false) == nil)
            #expect(try keychainAccessGetData("synced", options: synced, ignoringAttributeSynchronizable: false) == Data("2".utf8))
        }
    }

    @Test(arguments: Mode.allCases) func containsWithoutAuthenticationUI(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var options = KeychainAccessOptions()
            #expect(try keychainAccessContains("alice", options: options) == false)
            try keychainAccessSet(Data("pw".utf8), key: "alice", options: options)
            #expect(try keychainAccessContains("alice", options: options, withoutAuthenticationUI: true))
            options.authenticationPolicy = SecAccessControlCreateFlags.userPresence.rawValue
            try keychainAccessSet(Data("guarded".utf8), key: "guarded", options: options)
            #expect(try keychainAccessContains("guarded", options: options, withoutAuthenticationUI: true))
            var query = keychainAccessQuery(options)
            query[String(kSecAttrAccount)] = "guarded"
            query[String(kSecReturnData)] = kCFBooleanTrue
            query[String(kSecUseAuthenticationUI)] = String(kSecUseAuthenticationUIFail)
            #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecInteractionNotAllowed)
            query[String(kSecUseAuthenticationUI)] = String(kSecUseAuthenticationUISkip)
            #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func accessControlAttributes(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var options = KeychainAccessOptions()
            options.accessibility = String(kSecAttrAccessibleWhenUnlocked)
            options.authenticationPolicy = SecAccessControlCreateFlags.userPresence.rawValue
            let (attributes, error) = keychainAccessAttributes(options, key: "k", value: Data("v".utf8))
            #expect(error == nil)
            #expect(attributes[String(kSecAttrAccessControl)] is SecAccessControl)
            #expect(attributes[String(kSecAttrAccessible)] == nil)
            options.accessibility = "not-a-protection-class"
            let (_, badError) = keychainAccessAttributes(options, key: "k", value: Data("v".utf8))
            let nsError = try #require(badError as NSError?)
            #expect(nsError.domain == kCFErrorDomainOSStatus as String)
            #expect(nsError.code == Int(errSecParam))
        }
    }

    @Test(arguments: Mode.allCases) func internetPassword(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var options = KeychainAccessOptions()
            options.itemClass = String(kSecClassInternetPassword)
            options.server = URL(string: "https://example.com:8443")!
            try keychainAccessSet(Data("web".utf8), key: "alice@example.com", options: options)
            let attributes = try #require(try keychainAccessGetAttributes("alice@example.com", options: options))
            #expect(attributes[String(kSecClass)] as? String == String(kSecClassInternetPassword))
            #expect(attributes[String(kSecAttrServer)] as? String == "example.com")
            #expect(attributes[String(kSecAttrPort)] as? Int == 8443)
            #expect(attributes[String(kSecAttrProtocol)] as? String == String(kSecAttrProtocolHTTPS))
            #expect(attributes[String(kSecAttrAuthenticationType)] as? String == String(kSecAttrAuthenticationTypeHTMLForm))
            let keys = keychainAccessAllKeys(itemClass: String(kSecClassInternetPassword))
            #expect(keys.count == 1 && keys[0].0 == "example.com" && keys[0].1 == "alice@example.com")
            #expect(keychainAccessAllKeys(itemClass: String(kSecClassGenericPassword)).isEmpty)
            try keychainAccessRemove("alice@example.com", options: options)
            #expect(try keychainAccessGetData("alice@example.com", options: options) == nil)
        }
    }
}
