import Foundation
import KeychainServices
import Testing

// Code as the widely used keychain wrappers written for `import Security` have it (a SwiftKeychainWrapper-style
// string store, a key store that checks types with CFGetTypeID, C-style CoreFoundation access to results), built
// unchanged but for the import. That it compiles is half the test; the other half runs it against a real keychain.

/// A wrapper's string store, as SwiftKeychainWrapper writes it: one generic password per key in one service.
struct PortedStringStore {
    let serviceName: String

    private func query(forKey key: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: serviceName,
            kSecAttrGeneric as String: key.data(using: .utf8) ?? Data(),
            kSecAttrAccount as String: key,
        ]
    }

    @discardableResult
    func set(_ value: String, forKey key: String) -> Bool {
        var query = query(forKey: key)
        query[kSecValueData as String] = Data(value.utf8)
        query[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlocked
        let status = SecItemAdd(query as CFDictionary, nil)
        if status == errSecSuccess { return true }
        if status == errSecDuplicateItem {
            let update = [kSecValueData as String: Data(value.utf8)]
            return SecItemUpdate(self.query(forKey: key) as CFDictionary, update as CFDictionary) == errSecSuccess
        }
        return false
    }

    func string(forKey key: String) -> String? {
        var query = query(forKey: key)
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        query[kSecReturnData as String] = kCFBooleanTrue
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
        }
        guard status == noErr, let data = result as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }

    func allKeys() -> Set<String> {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: serviceName,
            kSecReturnAttributes as String: kCFBooleanTrue as Any,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess else { return [] }
        var keys = Set<String>()
        if let results = result as? [[AnyHashable: Any]] {
            for attributes in results {
                if let accountData = attributes[kSecAttrAccount as String] as? Data, let key = String(data: accountData, encoding: .utf8) {
                    keys.insert(key)
                } else if let key = attributes[kSecAttrAccount as String] as? String {
                    keys.insert(key)
                }
            }
        }
        return keys
    }

    /// macOS code passes kSecMatchLimitAll so that its file keychain deletes every match too.
    @discardableResult
    func removeAllKeys() -> OSStatus {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: serviceName,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        return SecItemDelete(query as CFDictionary)
    }
}

enum PortedKeyError: Error, Equatable {
    case generation(OSStatus)
    case notFound(OSStatus)
    case notAKey
    case signing(domain: String, code: Int)
}

/// A key store as app code writes it: an EC pair made with SecKeyGeneratePair, found again by tag, its type
/// checked with CFGetTypeID before the cast.
enum PortedKeyStore {
    static func generate(tag: String) throws -> (publicKey: SecKey, privateKey: SecKey) {
        let parameters: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: Data(tag.utf8),
        ]
        var publicKey: SecKey?
        var privateKey: SecKey?
        let status = SecKeyGeneratePair(parameters as CFDictionary, &publicKey, &privateKey)
        guard status == errSecSuccess, let publicKey, let privateKey else { throw PortedKeyError.generation(status) }
        return (publicKey, privateKey)
    }

    static func load(tag: String, keyClass: CFString) throws -> SecKey {
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrApplicationTag as String: Data(tag.utf8),
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeyClass as String: keyClass,
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status == errSecSuccess else { throw PortedKeyError.notFound(status) }
        guard let key = item, CFGetTypeID(key) == SecKeyGetTypeID() else { throw PortedKeyError.notAKey }
        return unsafeDowncast(key, to: SecKey.self)
    }

    static func sign(_ message: Data, with key: SecKey, _ algorithm: SecKeyAlgorithm) throws -> Data {
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, algorithm, message as CFData, &error) as Data? else {
            let failure = error?.takeRetainedValue()
            throw PortedKeyError.signing(
                domain: failure.map { CFErrorGetDomain($0) as String } ?? "",
                code: failure.map { CFErrorGetCode($0) } ?? 0)
        }
        return signature
    }
}

/// C-style access to a result, as code translated from Objective-C reads it: CFArray and CFDictionary calls with
/// unretained pointers.
func accountsOfAllItems(service: String) -> [String] {
    let query =
        [
            kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecReturnAttributes: kCFBooleanTrue as Any,
            kSecMatchLimit: kSecMatchLimitAll,
        ] as CFDictionary
    var result: CFTypeRef?
    guard SecItemCopyMatching(query, &result) == errSecSuccess, let found = result, CFGetTypeID(found) == CFArrayGetTypeID() else { return [] }
    let items = unsafeDowncast(found, to: CFArray.self)
    var accounts: [String] = []
    for index in 0..<CFArrayGetCount(items) {
        guard let entry = CFArrayGetValueAtIndex(items, index) else { continue }
        let attributes = unsafeBitCast(entry, to: CFDictionary.self)
        guard CFDictionaryContainsKey(attributes, Unmanaged.passUnretained(kSecAttrAccount).toOpaque()),
            let value = CFDictionaryGetValue(attributes, Unmanaged.passUnretained(kSecAttrAccount).toOpaque())
        else { continue }
        let account = Unmanaged<AnyObject>.fromOpaque(value).takeUnretainedValue()
        if CFGetTypeID(account) == CFStringGetTypeID(), let name = account as? String { accounts.append(name) }
    }
    return accounts.sorted()
}

@Suite struct PortedWrapperTests {
    @Test(arguments: Backend.allCases) func stringStoreRunsUnchanged(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        keychain.run {
            let store = PortedStringStore(serviceName: "com.example.wrapper")
            #expect(store.string(forKey: "token") == nil)
            #expect(store.set("s3cret", forKey: "token"))
            #expect(store.set("other", forKey: "refresh"))
            #expect(store.set("s3cret-2", forKey: "token"), "the duplicate path updates")
            #expect(store.string(forKey: "token") == "s3cret-2")
            #expect(store.allKeys() == ["token", "refresh"])
            #expect(accountsOfAllItems(service: "com.example.wrapper") == ["refresh", "token"])
            #expect(store.removeAllKeys() == errSecSuccess)
            #expect(store.allKeys().isEmpty)
            #expect(store.removeAllKeys() == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases) func keyStoreRunsUnchanged(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        try keychain.run {
            let pair = try PortedKeyStore.generate(tag: "com.example.signing")
            #expect(CFGetTypeID(pair.privateKey) == SecKeyGetTypeID())
            // kSecAttrIsPermanent at the top stores both keys; each is found again by its tag and class.
            let privateKey = try PortedKeyStore.load(tag: "com.example.signing", keyClass: kSecAttrKeyClassPrivate)
            let publicKey = try PortedKeyStore.load(tag: "com.example.signing", keyClass: kSecAttrKeyClassPublic)
            let message = Data("ported".utf8)
            let signature = try PortedKeyStore.sign(message, with: privateKey, .ecdsaSignatureMessageX962SHA256)
            var error: Unmanaged<CFError>?
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            #expect(SecKeyVerifySignature(pair.publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            #expect(throws: PortedKeyError.signing(domain: NSOSStatusErrorDomain, code: Int(errSecParam))) {
                try PortedKeyStore.sign(message, with: privateKey, .rsaSignatureMessagePKCS1v15SHA256)
            }
            #expect(throws: PortedKeyError.generation(errSecParam)) {
                var publicKey: SecKey?
                let status = SecKeyGeneratePair([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 100] as CFDictionary, &publicKey, nil)
                throw PortedKeyError.generation(status)
            }
            // Without kSecAttrIsPermanent nothing is stored.
            var publicKey2: SecKey?
            var privateKey2: SecKey?
            #expect(
                SecKeyGeneratePair(
                    [
                        kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
                        kSecAttrApplicationTag: Data("transient".utf8),
                    ] as CFDictionary, &publicKey2, &privateKey2) == errSecSuccess)
            #expect(publicKey2 != nil && privateKey2 != nil)
            #expect(throws: PortedKeyError.notFound(errSecItemNotFound)) { try PortedKeyStore.load(tag: "transient", keyClass: kSecAttrKeyClassPrivate) }
        }
    }

    @Test func typeIdentifiersTellObjectsApart() throws {
        var error: Unmanaged<CFError>?
        let key = try #require(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, &error))
        let objects: [(CFTypeRef, CFTypeID)] = [
            (key, SecKeyGetTypeID()), ("text" as CFString, CFStringGetTypeID()), (Data([1]) as CFData, CFDataGetTypeID()),
            ([kSecClass: kSecClassKey] as CFDictionary, CFDictionaryGetTypeID()), ([1, 2] as CFArray, CFArrayGetTypeID()),
            (NSNumber(value: 7), CFNumberGetTypeID()), (kCFBooleanTrue, CFBooleanGetTypeID()), (NSDate(), CFDateGetTypeID()),
            (NSError(domain: NSOSStatusErrorDomain, code: -50), CFErrorGetTypeID()), (SecPolicyCreateBasicX509(), SecPolicyGetTypeID()),
        ]
        for (object, expected) in objects {
            #expect(CFGetTypeID(object) == expected, "\(type(of: object))")
        }
        #expect(Set(objects.map(\.1)).count == objects.count, "every type has its own identifier")
        #expect(Set([SecKeyGetTypeID(), SecCertificateGetTypeID(), SecIdentityGetTypeID(), SecTrustGetTypeID(), SecPolicyGetTypeID()]).count == 5)
        #expect(CFGetTypeID(nil) == 0)
    }

    @Test func coreFoundationCallsBehaveAsApplesDo() throws {
        #expect(CFEqual(kSecClassGenericPassword, "genp" as CFString))
        #expect(!CFEqual(kSecClassGenericPassword, kSecClassKey))
        #expect(CFHash("genp" as CFString) == CFHash(kSecClassGenericPassword))
        #expect(CFBooleanGetValue(kCFBooleanTrue) && !CFBooleanGetValue(kCFBooleanFalse))
        #expect(CFCopyDescription("abc" as CFString) as String? == "abc")

        let data = Data([10, 20, 30, 40]) as CFData
        var middle = [UInt8](repeating: 0, count: 2)
        CFDataGetBytes(data, CFRangeMake(1, 2), &middle)
        #expect(middle == [20, 30])
        var untouched = [UInt8](repeating: 0, count: 8)
        CFDataGetBytes(data, CFRange(location: 3, length: 5), &untouched)
        #expect(untouched == [UInt8](repeating: 0, count: 8), "a range past the end copies nothing")

        // Values handed out by pointer stay valid, and are the same object, while their container lives.
        let dictionary = [kSecAttrAccount as String: "alice", kSecValueData as String: Data("pw".utf8)] as CFDictionary
        let first = try #require(CFDictionaryGetValue(dictionary, Unmanaged.passUnretained(kSecAttrAccount).toOpaque()))
        let second = try #require(CFDictionaryGetValue(dictionary, Unmanaged.passUnretained(kSecAttrAccount).toOpaque()))
        #expect(first == second)
        #expect(Unmanaged<AnyObject>.fromOpaque(first).takeUnretainedValue() as? String == "alice")
        let bytes = try #require(CFDictionaryGetValue(dictionary, Unmanaged.passUnretained(kSecValueData).toOpaque()))
        #expect(Unmanaged<CFData>.fromOpaque(bytes).takeUnretainedValue() as Data == Data("pw".utf8))
        #expect(CFDictionaryGetValue(dictionary, Unmanaged.passUnretained(kSecAttrService).toOpaque()) == nil)
        #expect(!CFDictionaryContainsKey(dictionary, Unmanaged.passUnretained(kSecAttrService).toOpaque()))
        let array = ["a", "b"] as CFArray
        #expect(CFArrayGetCount(array) == 2)
        let element = try #require(CFArrayGetValueAtIndex(array, 1))
        #expect(Unmanaged<AnyObject>.fromOpaque(element).takeUnretainedValue() as? String == "b")
        #expect(CFArrayGetValueAtIndex(array, 2) == nil)

        let error = try #require(CFErrorCreate(kCFAllocatorDefault, kCFErrorDomainOSStatus, CFIndex(errSecItemNotFound), nil))
        #expect(CFErrorGetDomain(error) == kCFErrorDomainOSStatus)
        #expect(CFErrorGetCode(error) == -25300)
        #expect(CFGetTypeID(error) == CFErrorGetTypeID())
    }

    @Test func securityResultCodesHaveApplesNamesAndMessages() {
        let codes: [(OSStatus, OSStatus)] = [
            (errSecDskFull, -34), (errSecCoreFoundationUnknown, -4960), (errSecNoStorageModule, -25312),
            (errSecInvalidPrefsDomain, -25319), (errSecInDarkWake, -25320), (errSecACLNotSimple, -25240),
            (errSecNoAccessForItem, -25243), (errSecInvalidOwnerEdit, -25244), (errSecTrustNotAvailable, -25245),
            (errSecKeyIsSensitive, -25258), (errSecMultiplePrivKeys, -25259), (errSecInvalidPasswordRef, -25261),
            (errSecNoTrustSettings, -25263), (errSecNotSigner, -26267), (errSecServiceNotAvailable, -67585),
            (errSecDeviceFailed, -67588), (errSecMemoryError, -67672),
        ]
        for (constant, value) in codes { #expect(constant == value) }
        #expect(SecCopyErrorMessageString(errSecNoAccessForItem, nil) as String? == "The specified item has no access control.")
        #expect(SecCopyErrorMessageString(errSecMemoryError, nil) as String? == "A memory error has occurred.")
        #expect(SecCopyErrorMessageString(errSecCoreFoundationUnknown, nil) as String? == "OSStatus -4960")
    }
}
