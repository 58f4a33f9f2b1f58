import Foundation
import KeychainTestSupport
import Testing
import KeychainServices

// The code below is written the way Apple's documentation writes it ("Adding a password to the keychain",
// "Searching for keychain items", "Updating and deleting keychain items"); only `import Security` became
// `import KeychainServices`. That it compiles is half the test; the other half runs it.

struct Credentials {
    var username: String
    var password: String
}

enum KeychainError: Error, Equatable {
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}

let server = "www.example.com"

func addCredentials(_ credentials: Credentials) throws {
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrAccount as String: account,
        kSecAttrServer as String: server,
        kSecValueData as String: password,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

func readCredentials() throws -> Credentials {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
        kSecMatchLimit as String: kSecMatchLimitOne,
        kSecReturnAttributes as String: true,
        kSecReturnData as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    guard let existingItem = item as? [String: Any],
        let passwordData = existingItem[kSecValueData as String] as? Data,
        let password = String(data: passwordData, encoding: String.Encoding.utf8),
        let account = existingItem[kSecAttrAccount as String] as? String
    else {
        throw KeychainError.unexpectedPasswordData
    }
    return Credentials(username: account, password: password)
}

func updateCredentials(_ credentials: Credentials) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
    ]
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let attributes: [String: Any] = [
        kSecAttrAccount as String: account,
        kSecValueData as String: password,
    ]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

func deleteCredentials() throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
    ]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError.unhandledError(status: status) }
}

/// The CFString-keyed style many apps use.
func cfStyleRoundTrip() -> String? {
    let d1 = Data("keyChain github token".utf8)
    let q1 =
        [
            kSecValueData: d1, kSecClass: kSecClassGenericPassword,
            kSecAttrService: "access-token", kSecAttrAccount: "github",
        ] as CFDictionary
    let status = SecItemAdd(q1, nil)
    if status == errSecDuplicateItem {
        SecItemUpdate(
            [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "access-token",
                kSecAttrAccount: "github",
            ] as CFDictionary, [kSecValueData: d1] as CFDictionary)
    }
    let q4 =
        [
            kSecAttrService: "access-token", kSecAttrAccount: "github", kSecClass: kSecClassGenericPassword,
            kSecReturnData: true,
        ] as CFDictionary
    var re: AnyObject?
    SecItemCopyMatching(q4, &re)
    guard let reData = re as? Data else { return nil }
    return String(decoding: reData, as: UTF8.self)
}

@Suite struct AppleSnippetTests {
    @Test(arguments: Backend.allCases) func documentationSnippetRunsUnchanged(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        try keychain.run {
            try addCredentials(Credentials(username: "appleseed", password: "pa55w0rd"))
            #expect(throws: KeychainError.unhandledError(status: errSecDuplicateItem)) { try addCredentials(Credentials(username: "appleseed", password: "x")) }
            let read = try readCredentials()
            #expect(read.username == "appleseed")
            #expect(read.password == "pa55w0rd")
            try updateCredentials(Credentials(username: "appleseed2", password: "n3w"))
            let updated = try readCredentials()
            #expect(updated.username == "appleseed2")
            #expect(updated.password == "n3w")
            try deleteCredentials()
            #expect(throws: KeychainError.noPassword) { try readCredentials() }
        }
    }

    @Test(arguments: Backend.allCases) func cfStringKeyedDictionariesWork(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        keychain.run {
            #expect(cfStyleRoundTrip() == "keyChain github token")
            #expect(cfStyleRoundTrip() == "keyChain github token")  // second run takes the duplicate/update path
        }
    }

    @Test func errorMessagesAreApples() {
        #expect(SecCopyErrorMessageString(errSecItemNotFound, nil) as String? == "The specified item could not be found in the keychain.")
        #expect(SecCopyErrorMessageString(errSecDuplicateItem, nil) as String? == "The specified item already exists in the keychain.")
        #expect(SecCopyErrorMessageString(errSecParam, nil) as String? == "One or more parameters passed to a function were not valid.")
        #expect(SecCopyErrorMessageString(errSecMissingEntitlement, nil) as String? == "A required entitlement isn't present.")
        #expect(SecCopyErrorMessageString(12345, nil) as String? == "OSStatus 12345")
        #expect(errSecSuccess == 0 && errSecItemNotFound == -25300 && errSecDuplicateItem == -25299)
        #expect(errSecNoSuchAttr == -25303 && errSecNoSuchClass == -25306 && errSecInteractionNotAllowed == -25308)
        #expect(errSecMissingEntitlement == -34018 && errSecDecode == -26275 && errSecAuthFailed == -25293)
    }

    @Test func constantsHaveApplesStringValues() {
        let expected: [(CFString, String)] = [
            (kSecClass, "class"), (kSecClassGenericPassword, "genp"), (kSecClassInternetPassword, "inet"),
            (kSecClassCertificate, "cert"), (kSecClassKey, "keys"), (kSecClassIdentity, "idnt"),
            (kSecAttrAccessible, "pdmn"), (kSecAttrAccessGroup, "agrp"), (kSecAttrAccount, "acct"),
            (kSecAttrService, "svce"), (kSecAttrServer, "srvr"), (kSecAttrProtocol, "ptcl"), (kSecAttrPort, "port"),
            (kSecAttrSynchronizable, "sync"), (kSecAttrSynchronizableAny, "syna"), (kSecAttrApplicationTag, "atag"),
            (kSecAttrAccessibleWhenUnlocked, "ak"), (kSecAttrAccessibleAfterFirstUnlock, "ck"),
            (kSecAttrAccessibleAlways, "dk"), (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, "akpu"),
            (kSecAttrAccessibleWhenUnlockedThisDeviceOnly, "aku"), (kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, "cku"),
            (kSecAttrAccessibleAlwaysThisDeviceOnly, "dku"), (kSecAttrProtocolHTTPS, "htps"), (kSecAttrProtocolFTP, "ftp "),
            (kSecAttrProtocolSOCKS, "sox "), (kSecAttrAuthenticationTypeHTTPBasic, "http"),
            (kSecAttrAuthenticationTypeDefault, "dflt"), (kSecAttrKeyTypeRSA, "42"), (kSecAttrKeyTypeECSECPrimeRandom, "73"),
            (kSecAttrKeyClassPrivate, "1"), (kSecMatchLimit, "m_Limit"), (kSecMatchLimitOne, "m_LimitOne"),
            (kSecMatchLimitAll, "m_LimitAll"), (kSecMatchCaseInsensitive, "m_CaseInsensitive"),
            (kSecReturnData, "r_Data"), (kSecReturnAttributes, "r_Attributes"), (kSecReturnRef, "r_Ref"),
            (kSecReturnPersistentRef, "r_PersistentRef"), (kSecValueData, "v_Data"), (kSecValueRef, "v_Ref"),
            (kSecValuePersistentRef, "v_PersistentRef"), (kSecUseDataProtectionKeychain, "nleg"),
            (kSecUseAuthenticationUI, "u_AuthUI"), (kSecUseAuthenticationUIFail, "u_AuthUIF"),
        ]
        for (constant, value) in expected { #expect(constant as String == value) }
    }
}
