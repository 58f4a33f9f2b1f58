// Valet snippets
// Project: square/Valet — https://github.com/square/Valet
// Read at commit a69e31e8732a123ec7891b8b77761e613df325e5
// (Sources/Valet/Internal/SecItem.swift, Internal/Keychain.swift, Internal/Service.swift, KeychainError.swift,
//  SecureEnclave.swift, SecureEnclaveAccessControl.swift, Accessibility.swift, Valet.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - queries typed `[String: AnyHashable]` (CFString values via `as String`, Swift `true`, SecAccessControl?, LAContext)
//   - `kSecUseDataProtectionKeychain as String: true` under `if #available(iOS 13.0, …, macOS 10.15, *)`
//   - `SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, flags, nil)` stored
//     straight into the query (also used when querying / deleting)
//   - `var status = errSecNotAvailable` … `status = SecItemCopyMatching(query as CFDictionary, &result)`; generic
//     `result as? DesiredType`; `SecItemAdd(attributes as CFDictionary, &result)` with a result pointer
//   - `#if os(macOS)` delete+add vs `#else` copy → update/add (Linux compiles `#else`); `#if os(macOS)` MatchLimitAll on delete
//   - kSecMatchLimitAll + kSecReturnAttributes read as `[String: AnyHashable]` or `[[String: AnyHashable]]`
//   - migration: kSecReturnPersistentRef + kSecReturnAttributes, then `[kSecValuePersistentRef: ref, kSecReturnData: true]`
//     (no kSecClass), `query[kSecMatchLimit as String] as? String as CFString? != kSecMatchLimitOne`
//   - kSecAttrAccessible given as the raw string "dk" (kSecAttrAccessibleAlways) in the legacy-migration query
//   - LAContext with `interactionNotAllowed = true` / `localizedReason` under kSecUseAuthenticationContext;
//     `case errSecSuccess, errSecInteractionNotAllowed: return true`

import Foundation
import KeychainServices
import Testing
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

// Shape: square/Valet Sources/Valet/KeychainError.swift — KeychainError.init(status:)
enum ValetKeychainError: Error, Equatable {
    case couldNotAccessKeychain, userCancelled, itemNotFound, missingEntitlement, emptyKey, emptyValue
    init(status: OSStatus) {
        switch status {
        case errSecItemNotFound: self = .itemNotFound
        case errSecUserCanceled, errSecAuthFailed: self = .userCancelled
        case errSecMissingEntitlement: self = .missingEntitlement
        default: self = .couldNotAccessKeychain
        }
    }
}

enum ValetMigrationError: Error, Equatable { case invalidQuery, dataToMigrateInvalid, keyToMigrateInvalid, keyToMigrateAlreadyExistsInValet }

enum ValetConfiguration {
    case valet(CFString)
    case iCloud(CFString)
    case secureEnclave(SecAccessControlCreateFlags)
}

// Shape: square/Valet Sources/Valet/Internal/Service.swift — Service.generateBaseQuery()
func valetGenerateBaseQuery(service: String, accessGroup: String? = nil, configuration: ValetConfiguration) -> [String: AnyHashable] {
    var baseQuery: [String: AnyHashable] = [
        kSecClass as String: kSecClassGenericPassword as String,
        kSecAttrService as String: service,
    ]
    if #available(iOS 13.0, tvOS 13.0, watchOS 6.0, macOS 10.15, *) {
        baseQuery[kSecUseDataProtectionKeychain as String] = true
    }
    if let accessGroup = accessGroup {
        baseQuery[kSecAttrAccessGroup as String] = accessGroup
    }
    switch configuration {
    case let .valet(accessibility):
        baseQuery[kSecAttrAccessible as String] = accessibility as String
    case let .iCloud(accessibility):
        baseQuery[kSecAttrSynchronizable as String] = true
        baseQuery[kSecAttrAccessible as String] = accessibility as String
    case let .secureEnclave(flags):
        baseQuery[kSecAttrAccessControl as String] = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, flags, nil)
    }
    return baseQuery
}

// Shape: square/Valet Sources/Valet/Internal/SecItem.swift — SecItem.copy(matching:)
func valetSecItemCopy<DesiredType>(matching query: [String: AnyHashable]) throws -> DesiredType {
    var status = errSecNotAvailable
    var result: AnyObject? = nil
    status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess else { throw ValetKeychainError(status: status) }
    guard let typed = result as? DesiredType else { throw ValetKeychainError.itemNotFound }
    return typed
}

// Shape: square/Valet Sources/Valet/Internal/SecItem.swift — SecItem.performCopy(matching:)
func valetPerformCopy(matching query: [String: AnyHashable]) -> OSStatus {
    guard !query.isEmpty else { return errSecParam }
    var status = errSecNotAvailable
    status = SecItemCopyMatching(query as CFDictionary, nil)
    return status
}

// Shape: square/Valet Sources/Valet/Internal/SecItem.swift — SecItem.add(attributes:) / SecItem.update(attributes:forItemsMatching:)
func valetSecItemAdd(attributes: [String: AnyHashable]) throws {
    var result: AnyObject? = nil
    let status = SecItemAdd(attributes as CFDictionary, &result)
    guard status == errSecSuccess else { throw ValetKeychainError(status: status) }
}
func valetSecItemUpdate(attributes: [String: AnyHashable], forItemsMatching query: [String: AnyHashable]) throws {
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status == errSecSuccess else { throw ValetKeychainError(status: status) }
}

// Shape: square/Valet Sources/Valet/Internal/SecItem.swift — SecItem.deleteItems(matching:)
func valetDeleteItems(matching query: [String: AnyHashable]) throws {
    var secItemQuery = query
    #if os(macOS)
    secItemQuery[kSecMatchLimit as String] = kSecMatchLimitAll
    #endif
    let status = SecItemDelete(secItemQuery as CFDictionary)
    guard status != errSecSuccess else { return }
    switch ValetKeychainError(status: status) {
    case .couldNotAccessKeychain: throw ValetKeychainError.couldNotAccessKeychain
    case .missingEntitlement: throw ValetKeychainError.missingEntitlement
    case .emptyKey, .emptyValue, .itemNotFound, .userCancelled: break
    }
}

// Shape: square/Valet Sources/Valet/Internal/Keychain.swift — Keychain.setObject(_:forKey:options:)
func valetSetObject(_ object: Data, forKey key: String, options: [String: AnyHashable]) throws {
    guard !key.isEmpty else { throw ValetKeychainError.emptyKey }
    guard !object.isEmpty else { throw ValetKeychainError.emptyValue }
    var secItemQuery = options
    secItemQuery[kSecAttrAccount as String] = key
    #if os(macOS)
    try valetDeleteItems(matching: secItemQuery)
    secItemQuery[kSecValueData as String] = object
    try valetSecItemAdd(attributes: secItemQuery)
    #else
    if valetPerformCopy(matching: secItemQuery) == errSecSuccess {
        try valetSecItemUpdate(attributes: [kSecValueData as String: object], forItemsMatching: secItemQuery)
    } else {
        secItemQuery[kSecValueData as String] = object
        try valetSecItemAdd(attributes: secItemQuery)
    }
    #endif
}

// Shape: square/Valet Sources/Valet/Internal/Keychain.swift — Keychain.object(forKey:options:) / removeObject(forKey:options:)
func valetObject(forKey key: String, options: [String: AnyHashable]) throws -> Data {
    guard !key.isEmpty else { throw ValetKeychainError.emptyKey }
    var secItemQuery = options
    secItemQuery[kSecAttrAccount as String] = key
    secItemQuery[kSecMatchLimit as String] = kSecMatchLimitOne
    secItemQuery[kSecReturnData as String] = true
    return try valetSecItemCopy(matching: secItemQuery)
}
func valetRemoveObject(forKey key: String, options: [String: AnyHashable]) throws {
    var secItemQuery = options
    secItemQuery[kSecAttrAccount as String] = key
    try valetDeleteItems(matching: secItemQuery)
}

let valetCanaryKey = "VAL_KeychainCanaryUsername"

// Shape: square/Valet Sources/Valet/Internal/Keychain.swift — Keychain.allKeys(options:)
func valetAllKeys(options: [String: AnyHashable]) throws -> Set<String> {
    var secItemQuery = options
    secItemQuery[kSecMatchLimit as String] = kSecMatchLimitAll
    secItemQuery[kSecReturnAttributes as String] = true
    do {
        let collection: Any = try valetSecItemCopy(matching: secItemQuery)
        if let single = collection as? [String: AnyHashable], let key = single[kSecAttrAccount as String] as? String, key != valetCanaryKey {
            return [key]
        } else if let multiple = collection as? [[String: AnyHashable]] {
            return Set(
                multiple.compactMap { attributes in
                    let key = attributes[kSecAttrAccount as String] as? String
                    return key != valetCanaryKey ? key : nil
                })
        }
        return []
    } catch ValetKeychainError.itemNotFound {
        return []
    }
}

// Shape: square/Valet Sources/Valet/Internal/Keychain.swift — Keychain.canAccess(attributes:)
func valetCanAccess(attributes: [String: AnyHashable]) -> Bool {
    let canaryValue = "VAL_KeychainCanaryPassword"
    func isCanaryValueInKeychain() -> Bool {
        (try? valetObject(forKey: valetCanaryKey, options: attributes)) == Data(canaryValue.utf8)
    }
    if isCanaryValueInKeychain() { return true }
    var secItemQuery = attributes
    secItemQuery[kSecAttrAccount as String] = valetCanaryKey
    secItemQuery[kSecValueData as String] = Data(canaryValue.utf8)
    try? valetSecItemAdd(attributes: secItemQuery)
    return isCanaryValueInKeychain()
}

// Shape: square/Valet Sources/Valet/Internal/Keychain.swift — Keychain.migrateObjects(matching:into:compactMap:) + (matching:into:removeOnCompletion:)
func valetMigrateObjects(matching query: [String: AnyHashable], into destination: [String: AnyHashable], removeOnCompletion: Bool) throws {
    guard !query.isEmpty else { throw ValetMigrationError.invalidQuery }
    guard query[kSecMatchLimit as String] as? String as CFString? != kSecMatchLimitOne else { throw ValetMigrationError.invalidQuery }
    guard query[kSecReturnData as String] as? Bool != true else { throw ValetMigrationError.invalidQuery }
    guard query[kSecClass as String] as? String as CFString? == kSecClassGenericPassword else { throw ValetMigrationError.invalidQuery }
    var secItemQuery = query
    secItemQuery[kSecMatchLimit as String] = kSecMatchLimitAll
    secItemQuery[kSecReturnAttributes as String] = true
    secItemQuery[kSecReturnData as String] = false
    secItemQuery[kSecReturnPersistentRef as String] = true
    let items: [[String: AnyHashable]] = try valetSecItemCopy(matching: secItemQuery)
    var pairs = [String: Data]()
    for item in items {
        guard let ref = item[kSecValuePersistentRef as String], let key = item[kSecAttrAccount as String] as? String else {
            throw ValetMigrationError.keyToMigrateInvalid
        }
        let data: Data = try valetSecItemCopy(matching: [kSecValuePersistentRef as String: ref, kSecReturnData as String: true])
        guard valetPerformCopy(matching: destination.merging([kSecAttrAccount as String: key]) { $1 }) == errSecItemNotFound else {
            throw ValetMigrationError.keyToMigrateAlreadyExistsInValet
        }
        pairs[key] = data
    }
    for (key, value) in pairs { try valetSetObject(value, forKey: key, options: destination) }
    if removeOnCompletion { try valetDeleteItems(matching: query) }
}

#if canImport(LocalAuthentication)
// Shape: square/Valet Sources/Valet/SecureEnclave.swift — SecureEnclave.containsObject(forKey:options:)
func valetSecureEnclaveContainsObject(forKey key: String, options: [String: AnyHashable]) throws -> Bool {
    var secItemQuery = options
    let context = LAContext()
    context.interactionNotAllowed = true
    secItemQuery[kSecUseAuthenticationContext as String] = context
    secItemQuery[kSecAttrAccount as String] = key
    let status = valetPerformCopy(matching: secItemQuery)
    switch status {
    case errSecSuccess, errSecInteractionNotAllowed: return true
    case errSecItemNotFound: return false
    default: throw ValetKeychainError(status: status)
    }
}

// Shape: square/Valet Sources/Valet/SecureEnclave.swift — SecureEnclave.object(forKey:withPrompt:context:options:)
func valetSecureEnclaveObject(forKey key: String, withPrompt userPrompt: String, context: LAContext?, options: [String: AnyHashable]) throws -> Data {
    var secItemQuery = options
    if !userPrompt.isEmpty {
        let context = context ?? LAContext()
        context.localizedReason = userPrompt
        secItemQuery[kSecUseAuthenticationContext as String] = context
    }
    return try valetObject(forKey: key, options: secItemQuery)
}

// Shape: square/Valet Sources/Valet/SinglePromptSecureEnclaveValet.swift — continuedAuthenticationKeychainQuery() / allKeys(userPrompt:) / requirePromptOnNextAccess()
final class ValetSinglePromptLike {
    private(set) var localAuthenticationContext = LAContext()
    let baseKeychainQuery: [String: AnyHashable]
    init(baseKeychainQuery: [String: AnyHashable]) { self.baseKeychainQuery = baseKeychainQuery }

    func continuedAuthenticationKeychainQuery() -> [String: AnyHashable] {
        var keychainQuery = baseKeychainQuery
        keychainQuery[kSecUseAuthenticationContext as String] = localAuthenticationContext
        return keychainQuery
    }
    func valetSinglePromptAllKeys(userPrompt: String) throws -> Set<String> {
        var secItemQuery = continuedAuthenticationKeychainQuery()
        if !userPrompt.isEmpty {
            let context = LAContext()
            context.localizedReason = userPrompt
            secItemQuery[kSecUseAuthenticationContext as String] = context
        }
        return try valetAllKeys(options: secItemQuery)
    }
    func valetRequirePromptOnNextAccess() {
        localAuthenticationContext.invalidate()
        localAuthenticationContext = LAContext()
    }
}
#endif

// MARK: - Tests

@Suite struct ValetSnippets {
    private var standard: [String: AnyHashable] {
        valetGenerateBaseQuery(
            service: "VAL_VALValet_initWithIdentifier:accessibility:_com.example.valet_AccessibleWhenUnlocked",
            configuration: .valet(kSecAttrAccessibleWhenUnlocked))
    }

    @Test(arguments: Mode.allCases) func setObjectCopiesThenUpdatesOrAdds(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            #expect(throws: ValetKeychainError.itemNotFound) { try valetObject(forKey: "alice", options: standard) }
            try valetSetObject(Data("s3cret".utf8), forKey: "alice", options: standard)
            #expect(try valetObject(forKey: "alice", options: standard) == Data("s3cret".utf8))
            try valetSetObject(Data("n3w".utf8), forKey: "alice", options: standard)  // update branch
            #expect(try valetObject(forKey: "alice", options: standard) == Data("n3w".utf8))
            var duplicate = standard
            duplicate[kSecAttrAccount as String] = "alice"
            duplicate[kSecValueData as String] = Data("x".utf8)
            #expect(SecItemAdd(duplicate as CFDictionary, nil) == errSecDuplicateItem)
            #expect(throws: ValetKeychainError.couldNotAccessKeychain) { try valetSecItemAdd(attributes: duplicate) }
            #expect(valetPerformCopy(matching: [:]) == errSecParam)
            #expect(valetPerformCopy(matching: standard.merging([kSecAttrAccount as String: "bob"]) { $1 }) == errSecItemNotFound)
            #expect(throws: ValetKeychainError.emptyValue) { try valetSetObject(Data(), forKey: "bob", options: standard) }
        }
    }

    @Test(arguments: Mode.allCases) func allKeysAndCanary(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            #expect(try valetAllKeys(options: standard).isEmpty)
            #expect(valetCanAccess(attributes: standard))
            #expect(try valetAllKeys(options: standard).isEmpty)  // the canary is filtered out
            try valetSetObject(Data("1".utf8), forKey: "a", options: standard)
            #expect(try valetAllKeys(options: standard) == ["a"])
            try valetSetObject(Data("2".utf8), forKey: "b", options: standard)
            #expect(try valetAllKeys(options: standard) == ["a", "b"])
            var all = standard
            all[kSecMatchLimit as String] = kSecMatchLimitAll
            all[kSecReturnAttributes as String] = true
            let items: [[String: AnyHashable]] = try valetSecItemCopy(matching: all)
            #expect(items.count == 3)
            #expect(items.allSatisfy { $0[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlocked as String })
        }
    }

    @Test(arguments: Mode.allCases) func removeObjectAndRemoveAll(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            try valetRemoveObject(forKey: "missing", options: standard)  // errSecItemNotFound is swallowed
            try valetSetObject(Data("1".utf8), forKey: "a", options: standard)
            try valetSetObject(Data("2".utf8), forKey: "b", options: standard)
            try valetRemoveObject(forKey: "a", options: standard)
            #expect(throws: ValetKeychainError.itemNotFound) { try valetObject(forKey: "a", options: standard) }
            try valetDeleteItems(matching: standard)
            #expect(try valetAllKeys(options: standard).isEmpty)
            #expect(SecItemDelete(standard as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func iCloudConfigurationIsSynchronizable(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let cloud = valetGenerateBaseQuery(service: "VAL_VALSynchronizableValet_cloud", configuration: .iCloud(kSecAttrAccessibleAfterFirstUnlock))
            var local = cloud
            local[kSecAttrSynchronizable as String] = nil
            try valetSetObject(Data("c".utf8), forKey: "token", options: cloud)
            #expect(try valetObject(forKey: "token", options: cloud) == Data("c".utf8))
            #expect(throws: ValetKeychainError.itemNotFound) { try valetObject(forKey: "token", options: local) }
            var any = local
            any[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny as String
            #expect(try valetAllKeys(options: any) == ["token"])
        }
    }

    @Test(arguments: Mode.allCases) func migrateFromAlwaysAccessibleByPersistentRef(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var legacy: [String: AnyHashable] = [
                kSecClass as String: kSecClassGenericPassword as String,
                kSecAttrService as String: "legacy-service",
                kSecUseDataProtectionKeychain as String: true,
            ]
            legacy[kSecAttrAccessible as String] = "dk"  // kSecAttrAccessibleAlways, hard-coded as Valet does
            for (key, value) in ["a": "1", "b": "2"] {
                var item = legacy
                item[kSecAttrAccount as String] = key
                item[kSecValueData as String] = Data(value.utf8)
                try valetSecItemAdd(attributes: item)
            }
            var badQuery = legacy
            badQuery[kSecMatchLimit as String] = kSecMatchLimitOne as String
            #expect(throws: ValetMigrationError.invalidQuery) { try valetMigrateObjects(matching: badQuery, into: standard, removeOnCompletion: false) }
            try valetMigrateObjects(matching: legacy, into: standard, removeOnCompletion: true)
            #expect(try valetObject(forKey: "a", options: standard) == Data("1".utf8))
            #expect(try valetObject(forKey: "b", options: standard) == Data("2".utf8))
            #expect(valetPerformCopy(matching: legacy) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func sharedAccessGroup(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let service = "VAL_VALValet_initWithSharedAccessGroupIdentifier:accessibility:_com.example.shared_AccessibleWhenUnlocked"
            let shared = valetGenerateBaseQuery(service: service, accessGroup: "com.example.shared", configuration: .valet(kSecAttrAccessibleWhenUnlocked))
            let app = valetGenerateBaseQuery(service: service, accessGroup: "com.example.app", configuration: .valet(kSecAttrAccessibleWhenUnlocked))
            let noGroup = valetGenerateBaseQuery(service: service, configuration: .valet(kSecAttrAccessibleWhenUnlocked))
            try valetSetObject(Data("s".utf8), forKey: "k", options: shared)
            #expect(try valetObject(forKey: "k", options: noGroup) == Data("s".utf8))
            #expect(throws: ValetKeychainError.itemNotFound) { try valetObject(forKey: "k", options: app) }
            let foreign = valetGenerateBaseQuery(service: service, accessGroup: "com.other.team", configuration: .valet(kSecAttrAccessibleWhenUnlocked))
            #expect(throws: ValetKeychainError.missingEntitlement) { try valetSetObject(Data("x".utf8), forKey: "k", options: foreign) }
        }
    }

    #if canImport(LocalAuthentication)
    @Test(arguments: Mode.allCases) func whenPasscodeSetNeedsAPasscode(_ mode: Mode) throws {
        // Valet's Secure Enclave items are kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: without a passcode the
        // add fails with errSecAuthFailed, as on a device without one, which Valet reports as userCancelled.
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let options = valetGenerateBaseQuery(service: "VAL_VALSecureEnclaveValet_com.example.se", configuration: .secureEnclave(.userPresence))
            #expect(throws: ValetKeychainError.userCancelled) { try valetSetObject(Data("1234".utf8), forKey: "pin", options: options) }
            var attributes = options
            attributes[kSecAttrAccount as String] = "pin"
            attributes[kSecValueData as String] = Data("1234".utf8)
            #expect(SecItemAdd(attributes as CFDictionary, nil) == errSecAuthFailed)
        }
    }

    @Test(arguments: Mode.allCases) func secureEnclaveAccessControlWithLAContext(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode, passcode: "1234")
        try keychain.run {
            let options = valetGenerateBaseQuery(service: "VAL_VALSecureEnclaveValet_com.example.se", configuration: .secureEnclave(.userPresence))
            #expect(options[kSecAttrAccessControl as String] is SecAccessControl)
            #expect(try valetSecureEnclaveContainsObject(forKey: "pin", options: options) == false)
            try valetRemoveObject(forKey: "pin", options: options)
            try valetSetObject(Data("1234".utf8), forKey: "pin", options: options)
            #expect(try valetSecureEnclaveContainsObject(forKey: "pin", options: options))
            let context = LAContext()
            context.interactionNotAllowed = true
            #expect(throws: ValetKeychainError.couldNotAccessKeychain) {
                try valetSecureEnclaveObject(forKey: "pin", withPrompt: "Unlock your PIN", context: context, options: options)
            }
            #expect(context.localizedReason == "Unlock your PIN")
            var raw = options
            raw[kSecAttrAccount as String] = "pin"
            raw[kSecReturnData as String] = true
            raw[kSecUseAuthenticationContext as String] = context
            #expect(SecItemCopyMatching(raw as CFDictionary, nil) == errSecInteractionNotAllowed)
        }
    }

    @Test(arguments: Mode.allCases) func singlePromptContinuedContextListsKeys(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode, passcode: "1234")
        try keychain.run {
            let base = valetGenerateBaseQuery(service: "VAL_VALSinglePromptSecureEnclaveValet_com.example.sp", configuration: .secureEnclave(.userPresence))
            let singlePrompt = ValetSinglePromptLike(baseKeychainQuery: base)
            singlePrompt.localAuthenticationContext.interactionNotAllowed = true  // keep the test free of UI
            #expect(try singlePrompt.valetSinglePromptAllKeys(userPrompt: "").isEmpty)
            try valetSetObject(Data("1".utf8), forKey: "a", options: base)
            try valetSetObject(Data("2".utf8), forKey: "b", options: base)
            // Listing keys returns attributes only, which needs no user authentication.
            #expect(try singlePrompt.valetSinglePromptAllKeys(userPrompt: "") == ["a", "b"])
            var read = singlePrompt.continuedAuthenticationKeychainQuery()
            read[kSecAttrAccount as String] = "a"
            read[kSecReturnData as String] = true
            #expect(SecItemCopyMatching(read as CFDictionary, nil) == errSecInteractionNotAllowed)
            let before = singlePrompt.localAuthenticationContext
            singlePrompt.valetRequirePromptOnNextAccess()
            #expect(singlePrompt.localAuthenticationContext !== before)
            try valetDeleteItems(matching: base)
            #expect(SecItemCopyMatching(base as CFDictionary, nil) == errSecItemNotFound)
        }
    }
    #endif
}
