// Locksmith snippets
// Project: matthewpalmer/Locksmith — https://github.com/matthewpalmer/Locksmith
// Read at commit 49b08bf8fa16ff8d7ce41609a2adbc6b5237f65f
// (Source/Locksmith.swift, Source/LocksmithError.swift, Source/LocksmithSecurityClass.swift,
//  Source/LocksmithAccessibleOption.swift, Source/Dictionary_Initializers.swift).
// Our own code, written in the project's shape (nothing copied). Shapes covered:
//   - request closures of type `(CFDictionary, inout AnyObject?) -> OSStatus`:
//       `withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(ref, UnsafeMutablePointer($0)) }`,
//       `withUnsafeMutablePointer(to: &result) { SecItemAdd(ref, $0) }` (an `UnsafeMutablePointer<AnyObject?>` passed
//       where `UnsafeMutablePointer<CFTypeRef?>?` is expected), `{ ref, _ in SecItemDelete(ref) }`
//   - `Int(status)` and `case Int(errSecDuplicateItem):` error mapping
//   - `result as? NSDictionary`, `dictionary[String(kSecValueData)] as? NSData`, then `result as? [String: Any]`
//   - `[String: Any?]` property dictionaries filtered of nils; `String(kSec…)` keys everywhere
//   - generic-password attributes kSecAttrDescription / Comment / Creator (UInt) / Type (UInt) / Label /
//     IsInvisible / IsNegative / Generic (NSData); internet-password kSecAttrServer / Port / Protocol /
//     AuthenticationType / SecurityDomain / Path
//   - update = `SecItemUpdate(query, query minus kSecClass)`; on `.notFound` create instead
//   - NSKeyedArchiver-encoded `[String: Any]` stored as kSecValueData

import Foundation
import KeychainServices
import Testing

typealias LocksmithLikeRequestClosure = (_ requestReference: CFDictionary, _ result: inout AnyObject?) -> OSStatus

// Shape: matthewpalmer/Locksmith Source/LocksmithError.swift — LocksmithError.init?(fromStatusCode:)
enum LocksmithLikeError: String, Error {
    case allocate, authFailed, decode, duplicate, interactionNotAllowed, notAvailable, notFound, param, unimplemented, undefined
    init?(fromStatusCode code: Int) {
        switch code {
        case Int(errSecAllocate): self = .allocate
        case Int(errSecAuthFailed): self = .authFailed
        case Int(errSecDecode): self = .decode
        case Int(errSecDuplicateItem): self = .duplicate
        case Int(errSecInteractionNotAllowed): self = .interactionNotAllowed
        case Int(errSecItemNotFound): self = .notFound
        case Int(errSecNotAvailable): self = .notAvailable
        case Int(errSecParam): self = .param
        case Int(errSecUnimplemented): self = .unimplemented
        default: return nil
        }
    }
}

// Shape: matthewpalmer/Locksmith Source/LocksmithSecurityClass.swift — LocksmithSecurityClass (RawRepresentable via String(kSecClass…))
enum LocksmithLikeSecurityClass: Equatable {
    case genericPassword, internetPassword, certificate, key, identity
    init(rawValue: String) {
        switch rawValue {
        case String(kSecClassInternetPassword): self = .internetPassword
        case String(kSecClassCertificate): self = .certificate
        case String(kSecClassKey): self = .key
        case String(kSecClassIdentity): self = .identity
        default: self = .genericPassword
        }
    }
    var rawValue: String {
        switch self {
        case .genericPassword: return String(kSecClassGenericPassword)
        case .internetPassword: return String(kSecClassInternetPassword)
        case .certificate: return String(kSecClassCertificate)
        case .key: return String(kSecClassKey)
        case .identity: return String(kSecClassIdentity)
        }
    }
}

// Shape: matthewpalmer/Locksmith Source/Dictionary_Initializers.swift — Dictionary.init(withoutOptionalValues:)
extension Dictionary {
    init(locksmithWithoutOptionalValues initial: [Key: Value?]) {
        self = [:]
        for (key, value) in initial where value != nil { self[key] = value! }
    }
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — ReadableSecureStorable.performReadRequestClosure
var locksmithReadClosure: LocksmithLikeRequestClosure {
    return { (requestReference: CFDictionary, result: inout AnyObject?) in
        withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(requestReference, UnsafeMutablePointer($0)) }
    }
}
// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — CreateableSecureStorable.performCreateRequestClosure
var locksmithCreateClosure: LocksmithLikeRequestClosure {
    return { (requestReference: CFDictionary, result: inout AnyObject?) in
        withUnsafeMutablePointer(to: &result) { mutablePointer in SecItemAdd(requestReference, mutablePointer) }
    }
}
// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — DeleteableSecureStorable.performDeleteRequestClosure
var locksmithDeleteClosure: LocksmithLikeRequestClosure {
    return { (requestReference, _) in SecItemDelete(requestReference) }
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — SecureStorable.performSecureStorageAction(closure:secureStoragePropertyDictionary:)
@discardableResult
func locksmithPerformSecureStorageAction(closure: LocksmithLikeRequestClosure, secureStoragePropertyDictionary: [String: Any]) throws -> [String: Any]? {
    var result: AnyObject?
    let requestReference = secureStoragePropertyDictionary as CFDictionary
    let status = closure(requestReference, &result)
    if let error = LocksmithLikeError(fromStatusCode: Int(status)) { throw error }
    if status != errSecSuccess { return nil }
    guard let dictionary = result as? NSDictionary else { return nil }
    if dictionary[String(kSecValueData)] as? NSData == nil { return nil }
    return result as? [String: Any]
}

struct LocksmithLikeGenericRequest {
    var service: String
    var account: String
    var accessGroup: String? = nil
    var accessible: String? = nil
    var description: String? = nil
    var comment: String? = nil
    var creator: UInt? = nil
    var type: UInt? = nil
    var label: String? = nil
    var isInvisible: Bool? = nil
    var isNegative: Bool? = nil
    var generic: NSData? = nil

    // Shape: matthewpalmer/Locksmith Source/Locksmith.swift — genericPasswordBaseStoragePropertyDictionary (+ the *SecureStoragePropertyDictionary pieces)
    var locksmithGenericPasswordDictionary: [String: Any] {
        var dictionary = [String: Any?]()
        dictionary[String(kSecClass)] = LocksmithLikeSecurityClass.genericPassword.rawValue
        dictionary[String(kSecAttrService)] = service
        dictionary[String(kSecAttrGeneric)] = generic
        dictionary[String(kSecAttrAccessGroup)] = accessGroup
        dictionary[String(kSecAttrAccessible)] = accessible
        dictionary[String(kSecAttrAccount)] = account
        dictionary[String(kSecAttrDescription)] = description
        dictionary[String(kSecAttrComment)] = comment
        dictionary[String(kSecAttrCreator)] = creator
        dictionary[String(kSecAttrType)] = type
        dictionary[String(kSecAttrLabel)] = label
        dictionary[String(kSecAttrIsInvisible)] = isInvisible
        dictionary[String(kSecAttrIsNegative)] = isNegative
        return Dictionary(locksmithWithoutOptionalValues: dictionary)
    }
}

struct LocksmithLikeInternetRequest {
    var server: String
    var port: Int
    var account: String
    var internetProtocol: String = String(kSecAttrProtocolHTTPS)
    var authenticationType: String = String(kSecAttrAuthenticationTypeHTMLForm)
    var securityDomain: String? = nil
    var path: String? = nil

    // Shape: matthewpalmer/Locksmith Source/Locksmith.swift — internetPasswordBaseStoragePropertyDictionary
    var locksmithInternetPasswordDictionary: [String: Any] {
        var dictionary = [String: Any]()
        dictionary[String(kSecAttrServer)] = server
        dictionary[String(kSecAttrPort)] = port
        dictionary[String(kSecAttrProtocol)] = internetProtocol
        dictionary[String(kSecAttrAuthenticationType)] = authenticationType
        dictionary[String(kSecAttrSecurityDomain)] = securityDomain
        dictionary[String(kSecAttrPath)] = path
        dictionary[String(kSecClass)] = LocksmithLikeSecurityClass.internetPassword.rawValue
        dictionary[String(kSecAttrAccount)] = account
        return dictionary
    }
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — asReadableSecureStoragePropertyDictionary / readFromSecureStore()
func locksmithRead(_ base: [String: Any]) -> [String: Any]? {
    var old = base
    old[String(kSecReturnData)] = kCFBooleanTrue
    old[String(kSecMatchLimit)] = kSecMatchLimitOne
    old[String(kSecReturnAttributes)] = kCFBooleanTrue
    return try? locksmithPerformSecureStorageAction(closure: locksmithReadClosure, secureStoragePropertyDictionary: old)
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — asCreateableSecureStoragePropertyDictionary / createInSecureStore()
func locksmithCreate(_ base: [String: Any], data: [String: Any]) throws {
    var old = base
    old[String(kSecValueData)] = NSKeyedArchiver.archivedData(withRootObject: data)
    try locksmithPerformSecureStorageAction(closure: locksmithCreateClosure, secureStoragePropertyDictionary: old)
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — CreateableSecureStorable.updateInSecureStore(query:)
func locksmithUpdate(_ base: [String: Any], data: [String: Any]) throws {
    var query = base
    query[String(kSecValueData)] = NSKeyedArchiver.archivedData(withRootObject: data)
    var attributesToUpdate = query
    attributesToUpdate[String(kSecClass)] = nil
    let status = SecItemUpdate(query as CFDictionary, attributesToUpdate as CFDictionary)
    if let error = LocksmithLikeError(fromStatusCode: Int(status)) {
        if error == .notFound || error == .notAvailable {
            try locksmithCreate(base, data: data)
        } else {
            throw error
        }
    } else if status != errSecSuccess {
        throw LocksmithLikeError.undefined
    }
}

// Shape: matthewpalmer/Locksmith Source/Locksmith.swift — SecureStorableResultType.data (NSKeyedUnarchiver of kSecValueData)
func locksmithDecodedData(_ resultDictionary: [String: Any]) -> [String: Any]? {
    guard let aData = resultDictionary[String(kSecValueData)] as? NSData else { return nil }
    return NSKeyedUnarchiver.unarchiveObject(with: aData as Data) as? [String: Any]
}

// MARK: - Tests

@Suite struct LocksmithSnippets {
    @Test(arguments: Mode.allCases) func saveLoadUpdateDelete(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let base = LocksmithLikeGenericRequest(service: "com.example.locksmith", account: "alice").locksmithGenericPasswordDictionary
            #expect(locksmithRead(base) == nil)
            try locksmithCreate(base, data: ["password": "s3cret"])
            #expect(locksmithRead(base).flatMap(locksmithDecodedData)?["password"] as? String == "s3cret")
            #expect(throws: LocksmithLikeError.duplicate) { try locksmithCreate(base, data: ["password": "again"]) }
            try locksmithUpdate(base, data: ["password": "n3w"])
            #expect(locksmithRead(base).flatMap(locksmithDecodedData)?["password"] as? String == "n3w")
            try locksmithPerformSecureStorageAction(closure: locksmithDeleteClosure, secureStoragePropertyDictionary: base)
            #expect(throws: LocksmithLikeError.notFound) {
                try locksmithPerformSecureStorageAction(closure: locksmithDeleteClosure, secureStoragePropertyDictionary: base)
            }
            #expect(locksmithRead(base) == nil)
        }
    }

    @Test(arguments: Mode.allCases) func updateCreatesWhenMissing(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let base = LocksmithLikeGenericRequest(service: "com.example.locksmith", account: "bob").locksmithGenericPasswordDictionary
            var attributesToUpdate = base
            attributesToUpdate[String(kSecClass)] = nil
            #expect(SecItemUpdate(base as CFDictionary, attributesToUpdate as CFDictionary) == errSecItemNotFound)
            try locksmithUpdate(base, data: ["pin": 1234])
            #expect(locksmithRead(base).flatMap(locksmithDecodedData)?["pin"] as? Int == 1234)
            #expect(LocksmithLikeError(fromStatusCode: Int(errSecSuccess)) == nil)
            #expect(LocksmithLikeError(fromStatusCode: Int(errSecParam)) == .param)
        }
    }

    @Test(arguments: Mode.allCases) func genericPasswordAttributesRoundTrip(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var request = LocksmithLikeGenericRequest(service: "com.example.locksmith", account: "carol")
            request.description = "application password"
            request.comment = "rotated monthly"
            request.creator = 0x4C4B534D  // 'LKSM'
            request.type = 0x50415353  // 'PASS'
            request.label = "Carol"
            request.isInvisible = true
            request.isNegative = false
            request.generic = NSData(data: Data([0xCA, 0xFE]))
            request.accessible = String(kSecAttrAccessibleAfterFirstUnlock)
            request.accessGroup = "com.example.shared"
            try locksmithCreate(request.locksmithGenericPasswordDictionary, data: ["k": "v"])
            let result = try #require(locksmithRead(request.locksmithGenericPasswordDictionary))
            #expect(result[String(kSecAttrService)] as? String == "com.example.locksmith")
            #expect(result[String(kSecAttrAccount)] as? String == "carol")
            #expect(result[String(kSecAttrDescription)] as? String == "application password")
            #expect(result[String(kSecAttrComment)] as? String == "rotated monthly")
            #expect(result[String(kSecAttrCreator)] as? UInt == 0x4C4B534D)
            #expect(result[String(kSecAttrType)] as? UInt == 0x50415353)
            #expect(result[String(kSecAttrLabel)] as? String == "Carol")
            #expect(result[String(kSecAttrIsInvisible)] as? Bool == true)
            #expect(result[String(kSecAttrIsNegative)] as? Bool == false)
            #expect(result[String(kSecAttrGeneric)] as? NSData == NSData(data: Data([0xCA, 0xFE])))
            #expect(result[String(kSecAttrAccessible)] as? String == String(kSecAttrAccessibleAfterFirstUnlock))
            #expect(result[String(kSecAttrAccessGroup)] as? String == "com.example.shared")
            #expect(LocksmithLikeSecurityClass(rawValue: String(kSecClassGenericPassword)) == .genericPassword)
        }
    }

    @Test(arguments: Mode.allCases) func internetPasswordRoundTrip(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            var request = LocksmithLikeInternetRequest(server: "example.com", port: 443, account: "dave")
            request.securityDomain = "Example Realm"
            request.path = "/login"
            let base = request.locksmithInternetPasswordDictionary
            try locksmithCreate(base, data: ["password": "web"])
            let result = try #require(locksmithRead(base))
            #expect(result[String(kSecAttrServer)] as? String == "example.com")
            #expect(result[String(kSecAttrPort)] as? Int == 443)
            #expect(result[String(kSecAttrProtocol)] as? String == String(kSecAttrProtocolHTTPS))
            #expect(result[String(kSecAttrAuthenticationType)] as? String == String(kSecAttrAuthenticationTypeHTMLForm))
            #expect(result[String(kSecAttrSecurityDomain)] as? String == "Example Realm")
            #expect(result[String(kSecAttrPath)] as? String == "/login")
            #expect(locksmithDecodedData(result)?["password"] as? String == "web")
            var otherPort = base
            otherPort[String(kSecAttrPort)] = 8443
            #expect(locksmithRead(otherPort) == nil)
            try locksmithPerformSecureStorageAction(closure: locksmithDeleteClosure, secureStoragePropertyDictionary: base)
            #expect(SecItemCopyMatching(base as CFDictionary, nil) == errSecItemNotFound)
        }
    }
}
