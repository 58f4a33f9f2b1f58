// UtilityBelt (UtilityBeltKeychain) snippets
// Project: spothero/UtilityBelt-iOS — https://github.com/spothero/UtilityBelt-iOS
// Read at commit 8499277c9279357d501b89fe24ab90769f29dc23 (the keychain module was later removed from the repo):
// Sources/UtilityBeltKeychain/Models/Keychain.swift, Enums/KeychainAttribute.swift,
// Extensions/KeychainDictionary+AsKeychainQuery.swift, Models/*KeychainConfiguration.swift.
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - an enum of attributes whose rawValue is `String(kSec…)`, a `[Attribute: Any?]` dictionary reduced into
//     `[String: Any]` (dropping nils) and returned `as CFDictionary`
//   - `#if os(OSX)` `case access` (kSecAttrAccess) — not compiled on Linux
//   - set = `SecItemCopyMatching(query, nil)` → errSecSuccess: SecItemUpdate / errSecItemNotFound: SecItemAdd
//   - Swift `true` for kSecReturnAttributes / kSecReturnData; `withUnsafeMutablePointer(to: &queryResult) { SecItemCopyMatching(q, $0) }`
//     (an `UnsafeMutablePointer<AnyObject?>` passed straight as the result pointer)
//   - `SecCopyErrorMessageString(status, nil) as String?` under `#available(iOS 11.3, tvOS 11.3, watchOS 4.3, *)`,
//     `NSError(domain: NSOSStatusErrorDomain, code: Int(status))` in the else branch
//   - internet-password configuration with optional path / port (Int?) / security domain

import Foundation
import KeychainServices
import Testing

// Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Enums/KeychainAttribute.swift — KeychainAttribute.rawValue
enum UtilityBeltLikeAttribute: Hashable {
    #if os(OSX)
    case access
    #endif
    case `class`, accessGroup, account, service, server, `protocol`, authenticationType, path, port, securityDomain
    case data, returnAttributes, returnData, matchLimit
    var rawValue: String {
        switch self {
        #if os(OSX)
        case .access: return String(kSecAttrAccess)
        #endif
        case .class: return String(kSecClass)
        case .accessGroup: return String(kSecAttrAccessGroup)
        case .account: return String(kSecAttrAccount)
        case .service: return String(kSecAttrService)
        case .server: return String(kSecAttrServer)
        case .protocol: return String(kSecAttrProtocol)
        case .authenticationType: return String(kSecAttrAuthenticationType)
        case .path: return String(kSecAttrPath)
        case .port: return String(kSecAttrPort)
        case .securityDomain: return String(kSecAttrSecurityDomain)
        case .data: return String(kSecValueData)
        case .returnAttributes: return String(kSecReturnAttributes)
        case .returnData: return String(kSecReturnData)
        case .matchLimit: return String(kSecMatchLimit)
        }
    }
}

// Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Extensions/KeychainDictionary+AsKeychainQuery.swift — KeychainDictionary.asKeychainQuery()
extension Dictionary where Key == UtilityBeltLikeAttribute, Value == Any? {
    func utilityBeltAsKeychainQuery() -> CFDictionary {
        let stringKeyedDictionary = self.reduce(into: [String: Any]()) { result, currentItem in
            if let value = currentItem.value { result[currentItem.key.rawValue] = value }
        }
        return stringKeyedDictionary as CFDictionary
    }
}

enum UtilityBeltLikeKeychainError: Error, Equatable { case couldNotConvertStringToData, unhandled(message: String) }

// Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Models/{Generic,Internet}PasswordKeychainConfiguration.swift — asDictionary()
enum UtilityBeltLikeConfiguration {
    case generic(service: String, accessGroup: String?)
    case internet(server: String, protocol: String, authenticationType: String, path: String?, port: Int?, securityDomain: String?)
    func asDictionary() -> [UtilityBeltLikeAttribute: Any?] {
        var query = [UtilityBeltLikeAttribute: Any?]()
        switch self {
        case let .generic(service, accessGroup):
            query[.class] = String(kSecClassGenericPassword)
            query[.accessGroup] = accessGroup
            query[.service] = service
        case let .internet(server, proto, authenticationType, path, port, securityDomain):
            query[.class] = String(kSecClassInternetPassword)
            query[.authenticationType] = authenticationType
            query[.path] = path
            query[.port] = port
            query[.protocol] = proto
            query[.securityDomain] = securityDomain
            query[.server] = server
        }
        return query
    }
}

struct UtilityBeltLikeKeychain {
    let configuration: UtilityBeltLikeConfiguration

    // Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Models/Keychain.swift — Keychain.error(from:) (private)
    func utilityBeltError(from status: OSStatus) -> UtilityBeltLikeKeychainError {
        let message: String
        if #available(iOS 11.3, tvOS 11.3, watchOS 4.3, *) {
            message = SecCopyErrorMessageString(status, nil) as String? ?? "Unhandled Error"
        } else {
            message = NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: nil).localizedDescription
        }
        return .unhandled(message: message)
    }

    // Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Models/Keychain.swift — Keychain.setValue(_: Data, for:)
    func utilityBeltSetValue(_ data: Data, for account: String) throws {
        var query = configuration.asDictionary()
        query[.account] = account
        let matchStatus = SecItemCopyMatching(query.utilityBeltAsKeychainQuery(), nil)
        switch matchStatus {
        case errSecSuccess:
            var keychainAttributes: [UtilityBeltLikeAttribute: Any?] = [:]
            keychainAttributes[.data] = data
            let updateStatus = SecItemUpdate(query.utilityBeltAsKeychainQuery(), keychainAttributes.utilityBeltAsKeychainQuery())
            if updateStatus != errSecSuccess { throw utilityBeltError(from: updateStatus) }
        case errSecItemNotFound:
            query[.data] = data
            let addStatus = SecItemAdd(query.utilityBeltAsKeychainQuery(), nil)
            if addStatus != errSecSuccess { throw utilityBeltError(from: addStatus) }
        default:
            throw utilityBeltError(from: matchStatus)
        }
    }

    // Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Models/Keychain.swift — Keychain.getValue(for:)
    func utilityBeltGetValue(for account: String) throws -> Data? {
        var query = configuration.asDictionary()
        query[.account] = account
        query[.matchLimit] = kSecMatchLimitOne
        query[.returnAttributes] = true
        query[.returnData] = true
        var queryResult: AnyObject?
        let matchStatus = withUnsafeMutablePointer(to: &queryResult) {
            SecItemCopyMatching(query.utilityBeltAsKeychainQuery(), $0)
        }
        switch matchStatus {
        case errSecSuccess:
            let queriedItem = queryResult as? [String: Any]
            return queriedItem?[UtilityBeltLikeAttribute.data.rawValue] as? Data
        case errSecItemNotFound:
            return nil
        default:
            throw utilityBeltError(from: matchStatus)
        }
    }

    // Shape: spothero/UtilityBelt-iOS Sources/UtilityBeltKeychain/Models/Keychain.swift — Keychain.removeValue(for:) / removeAllValues()
    func utilityBeltRemoveValue(for account: String?) throws {
        var query = configuration.asDictionary()
        if let account = account { query[.account] = account }
        let status = SecItemDelete(query.utilityBeltAsKeychainQuery())
        switch status {
        case errSecSuccess, errSecItemNotFound: return
        default: throw utilityBeltError(from: status)
        }
    }
}

// MARK: - Tests

@Suite struct UtilityBeltSnippets {
    @Test(arguments: Mode.allCases) func genericSetGetRemove(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let store = UtilityBeltLikeKeychain(configuration: .generic(service: "com.example.utilitybelt", accessGroup: nil))
            #expect(try store.utilityBeltGetValue(for: "alice") == nil)
            try store.utilityBeltSetValue(Data("s3cret".utf8), for: "alice")  // not found → add
            try store.utilityBeltSetValue(Data("n3w".utf8), for: "alice")  // found → update
            #expect(try store.utilityBeltGetValue(for: "alice") == Data("n3w".utf8))
            try store.utilityBeltRemoveValue(for: "alice")
            try store.utilityBeltRemoveValue(for: "alice")  // errSecItemNotFound tolerated
            #expect(try store.utilityBeltGetValue(for: "alice") == nil)
        }
    }

    @Test(arguments: Mode.allCases) func internetPasswordWithOptionalAttributes(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let store = UtilityBeltLikeKeychain(
                configuration: .internet(
                    server: "api.example.com", protocol: String(kSecAttrProtocolHTTPS),
                    authenticationType: String(kSecAttrAuthenticationTypeDefault),
                    path: "/v1", port: 443, securityDomain: nil))
            try store.utilityBeltSetValue(Data("tok".utf8), for: "client")
            #expect(try store.utilityBeltGetValue(for: "client") == Data("tok".utf8))
            let query: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "api.example.com",
                kSecReturnAttributes as String: true,
            ]
            var result: AnyObject?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrPath as String] as? String == "/v1")
            #expect(attributes[kSecAttrPort as String] as? Int == 443)
            #expect(attributes[kSecAttrAuthenticationType as String] as? String == kSecAttrAuthenticationTypeDefault as String)
            try store.utilityBeltRemoveValue(for: nil)  // removeAllValues()
            #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(arguments: Mode.allCases) func errorMessagesFromSecCopyErrorMessageString(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let store = UtilityBeltLikeKeychain(configuration: .generic(service: "com.example.utilitybelt", accessGroup: nil))
            #expect(store.utilityBeltError(from: errSecDuplicateItem) == .unhandled(message: "The specified item already exists in the keychain."))
            #expect(store.utilityBeltError(from: errSecItemNotFound) == .unhandled(message: "The specified item could not be found in the keychain."))
            #expect(store.utilityBeltError(from: errSecParam) == .unhandled(message: "One or more parameters passed to a function were not valid."))
            let foreign = UtilityBeltLikeKeychain(configuration: .generic(service: "com.example.utilitybelt", accessGroup: "com.other.team"))
            let expected = try #require(SecCopyErrorMessageString(errSecMissingEntitlement, nil) as String?)
            #expect(throws: UtilityBeltLikeKeychainError.unhandled(message: expected)) {
                try foreign.utilityBeltSetValue(Data("x".utf8), for: "alice")
            }
        }
    }
}
