// SimpleKeychain snippets
// Project: auth0/SimpleKeychain — https://github.com/auth0/SimpleKeychain
// Read at commit 466c3f3073ba4651201ed0ba4bea306a945353ff
// (SimpleKeychain/SimpleKeychain.swift, SimpleKeychain/SimpleKeychainError.swift, SimpleKeychain/Accessibility.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - stored function values `var retrieve: (CFDictionary, UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus = SecItemCopyMatching`
//     and `var remove: (CFDictionary) -> OSStatus = SecItemDelete`, called as `retrieve(query as CFDictionary, &result)`
//   - caller-supplied `attributes: [String: Any]` merged into every query (add, read, delete)
//   - `kSecUseAuthenticationContext` holding an `LAContext` in every query, including SecItemAdd
//     (`#if canImport(LocalAuthentication) && !os(tvOS)`)
//   - `SecAccessControlCreateWithFlags(kCFAllocatorDefault, accessibility.rawValue /* CFString */, flags, nil)`
//   - `#if os(macOS) … #else query[kSecAttrAccessible] = … #endif` (Linux compiles `#else`)
//   - `#if os(macOS)` kSecMatchLimitAll on delete (not compiled on Linux)
//   - `switch rawValue /* CFString */ { case kSecAttrAccessibleWhenUnlocked: … }` pattern matching on CFString
//   - OSStatus → error code mapping (errSecUnimplemented, errSecParam, errSecDuplicateItem, errSecItemNotFound,
//     errSecInteractionNotAllowed, errSecDecode, errSecMissingEntitlement, …)

import Foundation
import KeychainServices
import Testing
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

// Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychainError.swift — SimpleKeychainError.Code.init(rawValue:)
enum SimpleKeychainLikeError: Error, Equatable {
    case operationNotImplemented, invalidParameters, userCanceled, itemNotAvailable, authFailed, duplicateItem
    case itemNotFound, interactionNotAllowed, decodeFailed, missingEntitlement, other(status: OSStatus), unknown(String)
    init(rawValue: OSStatus) {
        switch rawValue {
        case errSecUnimplemented: self = .operationNotImplemented
        case errSecParam: self = .invalidParameters
        case errSecUserCanceled: self = .userCanceled
        case errSecNotAvailable: self = .itemNotAvailable
        case errSecAuthFailed: self = .authFailed
        case errSecDuplicateItem: self = .duplicateItem
        case errSecItemNotFound: self = .itemNotFound
        case errSecInteractionNotAllowed: self = .interactionNotAllowed
        case errSecDecode: self = .decodeFailed
        case errSecMissingEntitlement: self = .missingEntitlement
        default: self = .other(status: rawValue)
        }
    }
}

// Shape: auth0/SimpleKeychain SimpleKeychain/Accessibility.swift — Accessibility (RawRepresentable over CFString)
enum SimpleKeychainLikeAccessibility: Equatable {
    case whenUnlocked, whenUnlockedThisDeviceOnly, afterFirstUnlock, afterFirstUnlockThisDeviceOnly, whenPasscodeSetThisDeviceOnly
    init(rawValue: CFString) {
        switch rawValue {
        case kSecAttrAccessibleWhenUnlocked: self = .whenUnlocked
        case kSecAttrAccessibleWhenUnlockedThisDeviceOnly: self = .whenUnlockedThisDeviceOnly
        case kSecAttrAccessibleAfterFirstUnlock: self = .afterFirstUnlock
        case kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: self = .afterFirstUnlockThisDeviceOnly
        case kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: self = .whenPasscodeSetThisDeviceOnly
        default: self = .afterFirstUnlock
        }
    }
    var rawValue: CFString {
        switch self {
        case .whenUnlocked: return kSecAttrAccessibleWhenUnlocked
        case .whenUnlockedThisDeviceOnly: return kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .afterFirstUnlock: return kSecAttrAccessibleAfterFirstUnlock
        case .afterFirstUnlockThisDeviceOnly: return kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: return kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
        }
    }
}

typealias SimpleKeychainLikeRetrieve = (_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus
typealias SimpleKeychainLikeRemove = (_ query: CFDictionary) -> OSStatus

// Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — struct SimpleKeychain (stored properties, retrieve/remove)
struct SimpleKeychainLike {
    var service: String
    var accessGroup: String? = nil
    var accessibility: SimpleKeychainLikeAccessibility = .afterFirstUnlock
    var accessControlFlags: SecAccessControlCreateFlags? = nil
    var isSynchronizable: Bool = false
    var attributes: [String: Any] = [:]
    var retrieve: SimpleKeychainLikeRetrieve = SecItemCopyMatching
    var remove: SimpleKeychainLikeRemove = SecItemDelete
    #if canImport(LocalAuthentication) && !os(tvOS)
    var context: LAContext? = nil
    #endif

    private func assertSuccess(forStatus status: OSStatus) throws {
        if status != errSecSuccess { throw SimpleKeychainLikeError(rawValue: status) }
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.baseQuery(withKey:data:)
    func simpleKeychainBaseQuery(withKey key: String? = nil, data: Data? = nil) -> [String: Any] {
        var query = self.attributes
        query[kSecClass as String] = kSecClassGenericPassword
        query[kSecAttrService as String] = self.service
        if let key = key { query[kSecAttrAccount as String] = key }
        if let data = data { query[kSecValueData as String] = data }
        if let accessGroup = self.accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        #if canImport(LocalAuthentication) && !os(tvOS)
        if let context = self.context { query[kSecUseAuthenticationContext as String] = context }
        #endif
        if self.isSynchronizable { query[kSecAttrSynchronizable as String] = kCFBooleanTrue }
        return query
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.setQuery(forKey:data:)
    func simpleKeychainSetQuery(forKey key: String, data: Data) -> [String: Any] {
        var query = simpleKeychainBaseQuery(withKey: key, data: data)
        if let flags = self.accessControlFlags,
            let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, self.accessibility.rawValue, flags, nil)
        {
            query[kSecAttrAccessControl as String] = access
        } else {
            #if os(macOS)
            if self.isSynchronizable || query[kSecUseDataProtectionKeychain as String] as? Bool == true {
                query[kSecAttrAccessible as String] = self.accessibility.rawValue
            }
            #else
            query[kSecAttrAccessible as String] = self.accessibility.rawValue
            #endif
        }
        return query
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.set(_: Data, forKey:)
    func simpleKeychainSet(_ data: Data, forKey key: String) throws {
        let addStatus = SecItemAdd(simpleKeychainSetQuery(forKey: key, data: data) as CFDictionary, nil)
        if addStatus == errSecDuplicateItem {
            let updateAttributes: [String: Any] = [kSecValueData as String: data]
            let updateStatus = SecItemUpdate(simpleKeychainBaseQuery(withKey: key) as CFDictionary, updateAttributes as CFDictionary)
            try assertSuccess(forStatus: updateStatus)
        } else {
            try assertSuccess(forStatus: addStatus)
        }
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.data(forKey:) / getOneQuery(byKey:)
    func simpleKeychainData(forKey key: String) throws -> Data {
        var query = simpleKeychainBaseQuery(withKey: key)
        query[kSecReturnData as String] = kCFBooleanTrue
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        try assertSuccess(forStatus: retrieve(query as CFDictionary, &result))
        guard let data = result as? Data else { throw SimpleKeychainLikeError.unknown("not Data") }
        return data
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.deleteItem(forKey:) / deleteAll()
    func simpleKeychainDeleteItem(forKey key: String) throws {
        try assertSuccess(forStatus: remove(simpleKeychainBaseQuery(withKey: key) as CFDictionary))
    }
    func simpleKeychainDeleteAll() throws {
        var query = simpleKeychainBaseQuery()
        #if os(macOS)
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        #endif
        let status = remove(query as CFDictionary)
        guard SimpleKeychainLikeError(rawValue: status) != .itemNotFound else { return }
        try assertSuccess(forStatus: status)
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.hasItem(forKey:)
    func simpleKeychainHasItem(forKey key: String) throws -> Bool {
        let status = retrieve(simpleKeychainBaseQuery(withKey: key) as CFDictionary, nil)
        if status == errSecItemNotFound { return false }
        try assertSuccess(forStatus: status)
        return true
    }

    // Shape: auth0/SimpleKeychain SimpleKeychain/SimpleKeychain.swift — SimpleKeychain.keys() / getAllQuery
    func simpleKeychainKeys() throws -> [String] {
        var query = simpleKeychainBaseQuery()
        query[kSecReturnAttributes as String] = kCFBooleanTrue
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: AnyObject?
        let status = retrieve(query as CFDictionary, &result)
        guard SimpleKeychainLikeError(rawValue: status) != .itemNotFound else { return [] }
        try assertSuccess(forStatus: status)
        guard let items = result as? [[String: Any]] else { throw SimpleKeychainLikeError.unknown("not [[String: Any]]") }
        return items.compactMap { $0[kSecAttrAccount as String] as? String }
    }
}

// MARK: - Tests

@Suite struct SimpleKeychainSnippets {
    @Test(arguments: Mode.allCases) func setAddsOrUpdatesThroughStoredFunctions(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var simple = SimpleKeychainLike(service: "com.example.simple")
            var retrieveCalls = 0
            simple.retrieve = { query, result in
                retrieveCalls += 1
                return SecItemCopyMatching(query, result)
            }
            #expect(throws: SimpleKeychainLikeError.itemNotFound) { try simple.simpleKeychainData(forKey: "alice") }
            try simple.simpleKeychainSet(Data("s3cret".utf8), forKey: "alice")
            #expect(try simple.simpleKeychainData(forKey: "alice") == Data("s3cret".utf8))
            try simple.simpleKeychainSet(Data("n3w".utf8), forKey: "alice")  // errSecDuplicateItem → SecItemUpdate
            #expect(try simple.simpleKeychainData(forKey: "alice") == Data("n3w".utf8))
            #expect(retrieveCalls == 3)
            let status = SecItemAdd(simple.simpleKeychainSetQuery(forKey: "alice", data: Data("x".utf8)) as CFDictionary, nil)
            #expect(status == errSecDuplicateItem)
            #expect(SimpleKeychainLikeError(rawValue: status) == .duplicateItem)
        }
    }

    @Test(arguments: Mode.allCases) func deleteItemKeysAndDeleteAll(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let simple = SimpleKeychainLike(service: "com.example.simple")
            #expect(throws: SimpleKeychainLikeError.itemNotFound) { try simple.simpleKeychainDeleteItem(forKey: "nobody") }
            try simple.simpleKeychainDeleteAll()  // errSecItemNotFound is fine here
            #expect(try simple.simpleKeychainKeys().isEmpty)
            try simple.simpleKeychainSet(Data("1".utf8), forKey: "a")
            try simple.simpleKeychainSet(Data("2".utf8), forKey: "b")
            try SimpleKeychainLike(service: "other").simpleKeychainSet(Data("3".utf8), forKey: "c")
            #expect(try simple.simpleKeychainKeys().sorted() == ["a", "b"])
            try simple.simpleKeychainDeleteItem(forKey: "a")
            #expect(try simple.simpleKeychainHasItem(forKey: "a") == false)
            try simple.simpleKeychainDeleteAll()
            #expect(try simple.simpleKeychainKeys().isEmpty)
            #expect(try SimpleKeychainLike(service: "other").simpleKeychainHasItem(forKey: "c"))
        }
    }

    @Test(arguments: Mode.allCases) func customAttributesAndAccessibility(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var work = SimpleKeychainLike(service: "com.example.simple")
            work.attributes = [kSecAttrLabel as String: "Work", kSecAttrComment as String: "from SSO"]
            work.accessibility = .whenUnlockedThisDeviceOnly
            try work.simpleKeychainSet(Data("w".utf8), forKey: "token")
            var home = work
            home.attributes = [kSecAttrLabel as String: "Home"]
            #expect(try home.simpleKeychainHasItem(forKey: "token") == false)
            #expect(try work.simpleKeychainHasItem(forKey: "token"))
            var query = work.simpleKeychainBaseQuery(withKey: "token")
            query[kSecReturnAttributes as String] = kCFBooleanTrue
            var result: AnyObject?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrLabel as String] as? String == "Work")
            #expect(attributes[kSecAttrComment as String] as? String == "from SSO")
            let accessible = try #require(attributes[kSecAttrAccessible as String] as? String)
            #expect(SimpleKeychainLikeAccessibility(rawValue: accessible as CFString) == .whenUnlockedThisDeviceOnly)
        }
    }

    @Test(arguments: Mode.allCases) func synchronizableAndAccessGroup(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var synced = SimpleKeychainLike(service: "com.example.simple")
            synced.isSynchronizable = true
            let local = SimpleKeychainLike(service: "com.example.simple")
            try synced.simpleKeychainSet(Data("cloud".utf8), forKey: "k")
            #expect(try local.simpleKeychainHasItem(forKey: "k") == false)
            #expect(try synced.simpleKeychainKeys() == ["k"])
            var shared = SimpleKeychainLike(service: "com.example.simple", accessGroup: "com.example.shared")
            try shared.simpleKeychainSet(Data("s".utf8), forKey: "g")
            #expect(try local.simpleKeychainData(forKey: "g") == Data("s".utf8))
            #expect(try SimpleKeychainLike(service: "com.example.simple", accessGroup: "com.example.app").simpleKeychainHasItem(forKey: "g") == false)
            shared.accessGroup = "com.other.team"
            #expect(throws: SimpleKeychainLikeError.missingEntitlement) { try shared.simpleKeychainSet(Data("x".utf8), forKey: "g") }
        }
    }

    #if canImport(LocalAuthentication)
    @Test(arguments: Mode.allCases) func accessControlFlagsWithContext(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let context = LAContext()
            context.interactionNotAllowed = true
            var simple = SimpleKeychainLike(service: "com.example.simple")
            simple.context = context
            try simple.simpleKeychainSet(Data("plain".utf8), forKey: "plain")  // context in SecItemAdd, no ACL
            #expect(try simple.simpleKeychainData(forKey: "plain") == Data("plain".utf8))
            simple.accessControlFlags = .userPresence
            let setQuery = simple.simpleKeychainSetQuery(forKey: "guarded", data: Data("g".utf8))
            #expect(setQuery[kSecAttrAccessControl as String] is SecAccessControl)
            #expect(setQuery[kSecAttrAccessible as String] == nil)
            try simple.simpleKeychainSet(Data("g".utf8), forKey: "guarded")
            // hasItem() runs a no-return-type query; for an ACL-protected item Apple answers errSecSuccess (attributes need
            // no authentication) or, on older systems, errSecInteractionNotAllowed — both mean "exists".
            let existence = simple.retrieve(simple.simpleKeychainBaseQuery(withKey: "guarded") as CFDictionary, nil)
            #expect(existence == errSecSuccess || existence == errSecInteractionNotAllowed)
            #expect(try simple.simpleKeychainHasItem(forKey: "nobody") == false)
            #expect(throws: SimpleKeychainLikeError.interactionNotAllowed) { try simple.simpleKeychainData(forKey: "guarded") }
        }
    }
    #endif
}
