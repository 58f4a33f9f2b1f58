import Foundation
import KeychainServices
import Testing

// Security objects are Equatable and Hashable on Apple's platforms (CoreFoundation's CFEqual and CFHash), and
// certificate-pinning code relies on it: `pinned.contains(serverCertificate)`, `Set<SecCertificate>`.

/// A pinning check in the usual shape: is the server's leaf one of the pinned certificates?
func isPinned(_ serverCertificate: SecCertificate, pinned: [SecCertificate]) -> Bool {
    pinned.contains(serverCertificate)
}

@Suite struct EqualityTests {
    @Test func certificatesAreEqualWhenTheirBytesAre() throws {
        let der = try #require(Data(base64Encoded: BlueRSASnippets.certificateBase64, options: .ignoreUnknownCharacters))
        let first = try #require(SecCertificateCreateWithData(nil, der as CFData))
        let second = try #require(SecCertificateCreateWithData(nil, der as CFData))
        #expect(first !== second)
        #expect(first == second)
        #expect(isPinned(second, pinned: [first]))
        #expect(Set([first, second]).count == 1)
        #expect(CFEqual(first, second))
        #expect(CFHash(first) == CFHash(second))
    }

    @Test(arguments: Mode.allCases) func keysAreEqualWhenTheyAreTheSameKey(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        try keychain.run {
            let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256]
            var error: Unmanaged<CFError>?
            let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
            let other = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
            let bytes = try #require(SecKeyCopyExternalRepresentation(key, &error))
            let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]
            let again = try #require(SecKeyCreateWithData(bytes, attributes as CFDictionary, &error))
            #expect(key == again)
            #expect(CFEqual(key, again))
            #expect(CFHash(key) == CFHash(again))
            #expect(key != other)
            #expect(!CFEqual(key, other))
            // A private key is not its public key.
            #expect(SecKeyCopyPublicKey(key).map { $0 == key } == false)
            #expect(Set([key, again, other]).count == 2)
        }
    }

    @Test func policiesAreEqualWhenTheyCheckTheSameThings() {
        #expect(SecPolicyCreateSSL(true, "example.com" as CFString) == SecPolicyCreateSSL(true, "example.com" as CFString))
        #expect(SecPolicyCreateSSL(true, "example.com" as CFString) != SecPolicyCreateSSL(true, "example.org" as CFString))
        #expect(SecPolicyCreateBasicX509() != SecPolicyCreateSSL(true, nil))
    }

    @Test func stringsAndTheirObjectsAreOneKey() {
        let attributes: [AnyHashable: Any] = ["acct": "alice"]
        #expect(attributes[kSecAttrAccount] as? String == "alice")
        #expect(AnyHashable(kSecAttrAccount) == AnyHashable("acct"))
        #expect(CFEqual(kSecAttrAccount, "acct" as CFString))
        #expect(CFHash(kSecAttrAccount) == CFHash(NSString(string: "acct")))
    }
}
