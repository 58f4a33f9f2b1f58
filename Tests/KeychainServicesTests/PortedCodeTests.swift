import Foundation
import KeychainServices
import Testing

// Code as open-source keychain wrappers written for `import Security` have it, built unchanged but for the import:
// the symbols of SecBase.h, SecRandom.h and the CoreFoundation calls such code makes on CFError and CFData.

/// A wrapper's random-bytes helper (the idiom of most token generators).
func randomBytes(_ count: Int) -> Data? {
    var bytes = [UInt8](repeating: 0, count: count)
    let status = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
    guard status == noErr else { return nil }
    return Data(bytes)
}

/// A wrapper's error bridging: the OSStatus and domain out of a CFError.
func describe(_ error: CFError) -> (domain: String, code: Int, hasUserInfo: Bool) {
    let domain = CFErrorGetDomain(error) as String
    let code = CFErrorGetCode(error)
    let info = CFErrorCopyUserInfo(error) as? [String: Any]
    return (domain, code, info != nil)
}

@Suite struct PortedCodeTests {
    @Test func randomBytesAndCoreFoundationCalls() throws {
        let first = try #require(randomBytes(37))
        let second = try #require(randomBytes(37))
        #expect(first.count == 37)
        #expect(first != second, "two draws of 296 random bits differ")
        var empty: [UInt8] = []
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, &empty) == errSecSuccess)
        let options: CFOptionFlags = 0
        #expect(options == 0)

        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 123] as CFDictionary, &error)
        #expect(key == nil)
        let failure = try #require(error?.takeRetainedValue())
        let described = describe(failure)
        #expect(described.domain == NSOSStatusErrorDomain)
        #expect(described.code == Int(errSecParam))
        #expect(described.hasUserInfo)
        #expect(CFErrorCopyDescription(failure) != nil)

        let data = Data([1, 2, 3]) as CFData
        #expect(CFDataGetLength(data) == 3)
        #expect(CFDataGetBytePtr(data)?.pointee == 1)
        let copy = [UInt8](repeating: 9, count: 4).withUnsafeBufferPointer { CFDataCreate(kCFAllocatorDefault, $0.baseAddress, 4) }
        #expect(copy as Data? == Data(repeating: 9, count: 4))
        #expect(CFDictionaryGetCount([kSecClass: kSecClassKey] as CFDictionary) == 1)
    }

    /// `kSecMatchLimitAll` is what a delete does anyway, and code written for macOS passes it (macOS's SecItemDelete
    /// strips it); a finite limit is refused.
    @Test(arguments: Backend.allCases) func deleteAcceptsMatchLimitAll(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        keychain.run {
            for account in ["a", "b", "c"] {
                #expect(add(genp(account, "limits", [kSecValueData as String: Data(account.utf8)])) == errSecSuccess)
            }
            #expect(SecItemDelete(genp(nil, "limits", [kSecMatchLimit as String: kSecMatchLimitOne]) as CFDictionary) == errSecParam)
            #expect(SecItemDelete(genp(nil, "limits", [kSecMatchLimit as String: 2]) as CFDictionary) == errSecParam)
            #expect(copy(genp(nil, "limits", [kSecMatchLimit as String: kSecMatchLimitAll])).0 == errSecSuccess, "nothing was deleted")
            #expect(SecItemDelete(genp(nil, "limits", [kSecMatchLimit as String: kSecMatchLimitAll]) as CFDictionary) == errSecSuccess)
            #expect(copy(genp(nil, "limits", [kSecMatchLimit as String: kSecMatchLimitAll])).0 == errSecItemNotFound)
        }
    }

    /// Turning a local item synchronizable replaces the tombstone a deleted synchronizable twin left, as an add does.
    @Test(arguments: Backend.allCases) func updateToSynchronizableReplacesATombstone(_ backend: Backend) throws {
        let keychain = try TestKeychain(backend)
        keychain.run {
            let synced: [String: Any] = [kSecAttrSynchronizable as String: true]
            #expect(add(genp("twin", "sync", synced.merging([kSecValueData as String: Data("old".utf8)]) { $1 })) == errSecSuccess)
            #expect(SecItemDelete(genp("twin", "sync", synced) as CFDictionary) == errSecSuccess)
            #expect(add(genp("twin", "sync", [kSecValueData as String: Data("local".utf8)])) == errSecSuccess)
            #expect(SecItemUpdate(genp("twin", "sync") as CFDictionary, synced as CFDictionary) == errSecSuccess)
            let (status, found) = copy(genp("twin", "sync", synced.merging([kSecReturnData as String: true]) { $1 }))
            #expect(status == errSecSuccess)
            #expect(found as? Data == Data("local".utf8))
            #expect(copy(genp("twin", "sync")).0 == errSecItemNotFound, "the item is synchronizable now")
            // A live twin still refuses the update.
            #expect(add(genp("twin", "sync", [kSecValueData as String: Data("second".utf8)])) == errSecSuccess)
            #expect(SecItemUpdate(genp("twin", "sync") as CFDictionary, synced as CFDictionary) == errSecDuplicateItem)
        }
    }

    /// `kSecValueRef` of a certificate, key or identity finds and deletes exactly that item.
    @Test(arguments: Backend.allCases) func valueRefFindsAndDeletesExactlyItsItem(_ backend: Backend) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let keychain = try TestKeychain(backend)
        let first = try OpenSSLCertificate.make(bench, name: "one", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], subject: "/CN=one.example.com")
        let second = try OpenSSLCertificate.make(bench, name: "two", key: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], subject: "/CN=two.example.com")
        try keychain.run {
            let one = try #require(SecCertificateCreateWithData(nil, first.der as CFData))
            let two = try #require(SecCertificateCreateWithData(nil, second.der as CFData))
            #expect(add([kSecValueRef as String: one]) == errSecSuccess)
            #expect(add([kSecValueRef as String: two]) == errSecSuccess)
            let (status, found) = copy([kSecValueRef as String: two, kSecReturnAttributes as String: true])
            #expect(status == errSecSuccess)
            #expect((found as? [String: Any])?[kSecAttrLabel as String] as? String == "two.example.com")
            #expect(SecItemDelete([kSecValueRef as String: one] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecValueRef as String: one]).0 == errSecItemNotFound)
            #expect(copy([kSecValueRef as String: two]).0 == errSecSuccess, "only that certificate went")
            #expect(SecItemDelete([kSecValueRef as String: one] as CFDictionary) == errSecItemNotFound)

            var error: Unmanaged<CFError>?
            let privateKey = try #require(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, &error))
            let other = try #require(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, &error))
            #expect(add([kSecValueRef as String: privateKey, kSecAttrLabel as String: "mine"]) == errSecSuccess)
            #expect(add([kSecValueRef as String: other, kSecAttrLabel as String: "other"]) == errSecSuccess)
            let (keyStatus, keyFound) = copy([kSecValueRef as String: privateKey, kSecReturnAttributes as String: true])
            #expect(keyStatus == errSecSuccess)
            #expect((keyFound as? [String: Any])?[kSecAttrLabel as String] as? String == "mine")
            #expect(SecItemDelete([kSecValueRef as String: privateKey] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecValueRef as String: privateKey]).0 == errSecItemNotFound)
            #expect(copy([kSecValueRef as String: other]).0 == errSecSuccess)
            #expect(
                SecItemDelete([kSecClass as String: kSecClassCertificate, kSecValueRef as String: privateKey] as CFDictionary) == errSecParam,
                "a key is not a certificate")

            // SecItemUpdate finds its item the same way.
            #expect(SecItemUpdate([kSecValueRef as String: other] as CFDictionary, [kSecAttrLabel as String: "renamed"] as CFDictionary) == errSecSuccess)
            let (renamedStatus, renamed) = copy([kSecValueRef as String: other, kSecReturnAttributes as String: true])
            #expect(renamedStatus == errSecSuccess)
            #expect((renamed as? [String: Any])?[kSecAttrLabel as String] as? String == "renamed")
            #expect(SecItemUpdate([kSecValueRef as String: privateKey] as CFDictionary, [kSecAttrLabel as String: "gone"] as CFDictionary) == errSecItemNotFound)
            #expect(SecItemUpdate([kSecValueRef as String: two] as CFDictionary, [kSecAttrLabel as String: "two, renamed"] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "two, renamed"]).0 == errSecSuccess)

            // A key that never leaves the keychain is found by its public key's label, as its class says.
            let token = try #require(tokenKey("value-ref-token"))
            #expect(copy([kSecValueRef as String: token]).0 == errSecSuccess)
            #expect(SecItemDelete([kSecValueRef as String: token] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecValueRef as String: token]).0 == errSecItemNotFound)
            #expect(copy([kSecValueRef as String: other]).0 == errSecSuccess, "only the token key went")
        }
    }
}
