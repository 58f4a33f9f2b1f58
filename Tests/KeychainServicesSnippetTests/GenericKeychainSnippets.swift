// Apple "GenericKeychain" sample — KeychainPasswordItem snippets
// Project: Apple's GenericKeychain sample (v4.0, KeychainPasswordItem.swift), as republished in
// Coeur/GenericKeychain — https://github.com/Coeur/GenericKeychain
// Read at commit 5c073ce8243b125ef6da870ba8656b05019d81a9 (Pod/Classes/KeychainPasswordItem.swift).
// This struct's shape is copied into countless apps, so it is worth proving on its own.
// Our own code, written in the sample's shape (nothing copied). Shapes covered:
//   - queries typed `[String: AnyObject]`, values stored as `service as AnyObject?` / `data as AnyObject?`
//   - `withUnsafeMutablePointer(to: &queryResult) { SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0)) }`
//   - `guard status != errSecItemNotFound` then `guard status == noErr`
//   - kSecReturnAttributes + kSecReturnData + kSecMatchLimitOne → `[String: AnyObject]` holding kSecValueData
//   - kSecMatchLimitAll + kSecReturnAttributes + `kSecReturnData: kCFBooleanFalse` → `[[String: AnyObject]]`
//   - save = read, then SecItemUpdate, or on `.noPassword` SecItemAdd
//   - renameAccount = SecItemUpdate of kSecAttrAccount, accepting `noErr || errSecItemNotFound`
//   - `#if os(macOS)` SecAccess/SecTrustedApplication branch (not compiled on Linux)

import Foundation
import KeychainServices
import Testing

// Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem (Apple sample)
struct GenericKeychainPasswordItem {
    enum KeychainError: Error, Equatable {
        case noPassword, unexpectedPasswordData, unexpectedItemData, unhandledError(status: OSStatus)
    }

    let service: String
    private(set) var account: String
    let accessGroup: String?

    init(service: String, account: String, accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.keychainQuery(withService:account:accessGroup:)
    static func genericKeychainQuery(withService service: String, account: String? = nil, accessGroup: String? = nil) -> [String: AnyObject] {
        var query = [String: AnyObject]()
        query[kSecClass as String] = kSecClassGenericPassword
        query[kSecAttrService as String] = service as AnyObject?
        if let account = account { query[kSecAttrAccount as String] = account as AnyObject? }
        if let accessGroup = accessGroup { query[kSecAttrAccessGroup as String] = accessGroup as AnyObject? }
        #if os(macOS)
        // The sample builds a SecAccess from SecTrustedApplications here (macOS file-based keychain only).
        #endif
        return query
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.readPassword()
    func genericKeychainReadPassword() throws -> String {
        var query = Self.genericKeychainQuery(withService: service, account: account, accessGroup: accessGroup)
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        query[kSecReturnAttributes as String] = kCFBooleanTrue
        query[kSecReturnData as String] = kCFBooleanTrue
        var queryResult: AnyObject?
        let status = withUnsafeMutablePointer(to: &queryResult) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        guard status != errSecItemNotFound else { throw KeychainError.noPassword }
        guard status == noErr else { throw KeychainError.unhandledError(status: status) }
        guard let existingItem = queryResult as? [String: AnyObject],
            let passwordData = existingItem[kSecValueData as String] as? Data,
            let password = String(data: passwordData, encoding: .utf8)
        else {
            throw KeychainError.unexpectedPasswordData
        }
        return password
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.savePassword(_:)
    func genericKeychainSavePassword(_ password: String) throws {
        let encodedPassword = password.data(using: .utf8)!
        do {
            _ = try genericKeychainReadPassword()
            var attributesToUpdate = [String: AnyObject]()
            attributesToUpdate[kSecValueData as String] = encodedPassword as AnyObject?
            let query = Self.genericKeychainQuery(withService: service, account: account, accessGroup: accessGroup)
            let status = SecItemUpdate(query as CFDictionary, attributesToUpdate as CFDictionary)
            guard status == noErr else { throw KeychainError.unhandledError(status: status) }
        } catch KeychainError.noPassword {
            var newItem = Self.genericKeychainQuery(withService: service, account: account, accessGroup: accessGroup)
            newItem[kSecValueData as String] = encodedPassword as AnyObject?
            let status = SecItemAdd(newItem as CFDictionary, nil)
            guard status == noErr else { throw KeychainError.unhandledError(status: status) }
        }
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.renameAccount(_:)
    mutating func genericKeychainRenameAccount(_ newAccountName: String) throws {
        var attributesToUpdate = [String: AnyObject]()
        attributesToUpdate[kSecAttrAccount as String] = newAccountName as AnyObject?
        let query = Self.genericKeychainQuery(withService: service, account: self.account, accessGroup: accessGroup)
        let status = SecItemUpdate(query as CFDictionary, attributesToUpdate as CFDictionary)
        guard status == noErr || status == errSecItemNotFound else { throw KeychainError.unhandledError(status: status) }
        self.account = newAccountName
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.deleteItem()
    func genericKeychainDeleteItem() throws {
        let query = Self.genericKeychainQuery(withService: service, account: account, accessGroup: accessGroup)
        let status = SecItemDelete(query as CFDictionary)
        guard status == noErr || status == errSecItemNotFound else { throw KeychainError.unhandledError(status: status) }
    }

    // Shape: Coeur/GenericKeychain Pod/Classes/KeychainPasswordItem.swift — KeychainPasswordItem.passwordItems(forService:accessGroup:)
    static func genericKeychainPasswordItems(forService service: String, accessGroup: String? = nil) throws -> [GenericKeychainPasswordItem] {
        var query = genericKeychainQuery(withService: service, accessGroup: accessGroup)
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        query[kSecReturnAttributes as String] = kCFBooleanTrue
        query[kSecReturnData as String] = kCFBooleanFalse
        var queryResult: AnyObject?
        let status = withUnsafeMutablePointer(to: &queryResult) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        guard status != errSecItemNotFound else { return [] }
        guard status == noErr else { throw KeychainError.unhandledError(status: status) }
        guard let resultData = queryResult as? [[String: AnyObject]] else { throw KeychainError.unexpectedItemData }
        return try resultData.map { result in
            guard let account = result[kSecAttrAccount as String] as? String else { throw KeychainError.unexpectedItemData }
            return GenericKeychainPasswordItem(service: service, account: account, accessGroup: accessGroup)
        }
    }
}

// MARK: - Tests

@Suite struct GenericKeychainSnippets {
    private let service = "com.example.generickeychain"

    @Test(arguments: Mode.allCases) func saveReadAndUpdate(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let item = GenericKeychainPasswordItem(service: service, account: "alice")
            #expect(throws: GenericKeychainPasswordItem.KeychainError.noPassword) { try item.genericKeychainReadPassword() }
            try item.genericKeychainSavePassword("s3cret")
            #expect(try item.genericKeychainReadPassword() == "s3cret")
            try item.genericKeychainSavePassword("n3w")  // read succeeds → SecItemUpdate
            #expect(try item.genericKeychainReadPassword() == "n3w")
            var newItem = GenericKeychainPasswordItem.genericKeychainQuery(withService: service, account: "alice")
            newItem[kSecValueData as String] = Data("dup".utf8) as AnyObject?
            #expect(SecItemAdd(newItem as CFDictionary, nil) == errSecDuplicateItem)
        }
    }

    @Test(arguments: Mode.allCases) func renameAccount(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var alice = GenericKeychainPasswordItem(service: service, account: "alice")
            try alice.genericKeychainSavePassword("a")
            try GenericKeychainPasswordItem(service: service, account: "bob").genericKeychainSavePassword("b")
            try alice.genericKeychainRenameAccount("alicia")
            #expect(alice.account == "alicia")
            #expect(try alice.genericKeychainReadPassword() == "a")
            #expect(throws: GenericKeychainPasswordItem.KeychainError.noPassword) {
                try GenericKeychainPasswordItem(service: service, account: "alice").genericKeychainReadPassword()
            }
            // Renaming onto an existing account collides.
            #expect(throws: GenericKeychainPasswordItem.KeychainError.unhandledError(status: errSecDuplicateItem)) {
                try alice.genericKeychainRenameAccount("bob")
            }
            var ghost = GenericKeychainPasswordItem(service: service, account: "ghost")
            try ghost.genericKeychainRenameAccount("phantom")  // errSecItemNotFound is accepted
            #expect(ghost.account == "phantom")
        }
    }

    @Test(arguments: Mode.allCases) func passwordItemsAndDelete(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            #expect(try GenericKeychainPasswordItem.genericKeychainPasswordItems(forService: service).isEmpty)
            for account in ["carol", "alice", "bob"] {
                try GenericKeychainPasswordItem(service: service, account: account).genericKeychainSavePassword(account.uppercased())
            }
            try GenericKeychainPasswordItem(service: service, account: "dave", accessGroup: "com.example.shared").genericKeychainSavePassword("D")
            try GenericKeychainPasswordItem(service: "other", account: "eve").genericKeychainSavePassword("E")
            let all = try GenericKeychainPasswordItem.genericKeychainPasswordItems(forService: service)
            #expect(all.map(\.account).sorted() == ["alice", "bob", "carol", "dave"])
            let shared = try GenericKeychainPasswordItem.genericKeychainPasswordItems(forService: service, accessGroup: "com.example.shared")
            #expect(shared.map(\.account) == ["dave"])
            try GenericKeychainPasswordItem(service: service, account: "bob").genericKeychainDeleteItem()
            try GenericKeychainPasswordItem(service: service, account: "bob").genericKeychainDeleteItem()  // not found is fine
            let query = GenericKeychainPasswordItem.genericKeychainQuery(withService: service, account: "bob")
            #expect(SecItemDelete(query as CFDictionary) == errSecItemNotFound)
            #expect(try GenericKeychainPasswordItem.genericKeychainPasswordItems(forService: service).count == 3)
        }
    }
}
