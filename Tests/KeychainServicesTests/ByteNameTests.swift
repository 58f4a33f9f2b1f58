import Foundation
import Testing
import KeychainServices

/// Names that are bytes (issue 30, item 8), through SecItem in both backends: a `Data` account is matched on its
/// exact bytes, so accounts that differ in one byte that is not UTF-8 are two items and neither is the String
/// U+FFFD. As in Apple's keychain (secitem-semantics.md, "Matching is on bytes"), a String and a Data with the
/// same UTF-8 bytes name the same item, and each item keeps the type it was stored with.
@Suite struct ByteNameTests {
    @Test(arguments: Backend.allCases) func dataAccountsAreMatchedOnTheirExactBytes(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let account = kSecAttrAccount as String, value = kSecValueData as String
            let ff = Data([0xFF]), fe = Data([0xFE])
            #expect(add(genp(nil, "s", [account: ff, value: Data("one".utf8)])) == errSecSuccess)
            #expect(add(genp(nil, "s", [account: fe, value: Data("two".utf8)])) == errSecSuccess)
            #expect(add(genp(nil, "s", [account: ff, value: Data("three".utf8)])) == errSecDuplicateItem)

            #expect(copy(genp(nil, "s", [account: ff, kSecReturnData as String: true])).1 as? Data == Data("one".utf8))
            #expect(copy(genp(nil, "s", [account: fe, kSecReturnData as String: true])).1 as? Data == Data("two".utf8))
            // The String U+FFFD (what a lossy decoding makes of both) is neither.
            #expect(copy(genp("\u{FFFD}", "s")).0 == errSecItemNotFound)
            #expect(add(genp("\u{FFFD}", "s", [value: Data("four".utf8)])) == errSecSuccess)
            #expect(copy(genp("\u{FFFD}", "s", [kSecReturnData as String: true])).1 as? Data == Data("four".utf8))

            // The account comes back as the Data it was stored as.
            let (status, found) = copy(genp(nil, "s", [account: fe, kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let attributes = try #require(found as? [String: Any])
            #expect(attributes[account] as? Data == fe)

            // Update and delete touch exactly the item of those bytes.
            #expect(SecItemUpdate(genp(nil, "s", [account: ff]) as CFDictionary, [value: Data("uno".utf8)] as CFDictionary) == errSecSuccess)
            #expect(copy(genp(nil, "s", [account: ff, kSecReturnData as String: true])).1 as? Data == Data("uno".utf8))
            #expect(copy(genp(nil, "s", [account: fe, kSecReturnData as String: true])).1 as? Data == Data("two".utf8))
            #expect(SecItemDelete(genp(nil, "s", [account: fe]) as CFDictionary) == errSecSuccess)
            #expect(copy(genp(nil, "s", [account: fe])).0 == errSecItemNotFound)
            #expect(copy(genp(nil, "s", [account: ff])).0 == errSecSuccess)
            #expect(copy(genp("\u{FFFD}", "s")).0 == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func stringAndDataOfTheSameBytesAreOneName(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let account = kSecAttrAccount as String
            #expect(add(genp("alice", "s", [kSecValueData as String: Data("1".utf8)])) == errSecSuccess)
            // Apple matches on the bytes: the Data "alice" is the same account, so adding it is a duplicate …
            #expect(add(genp(nil, "s", [account: Data("alice".utf8)])) == errSecDuplicateItem)
            // … and a Data query finds the String item, which comes back as the String it was stored as.
            let (status, found) = copy(genp(nil, "s", [account: Data("alice".utf8), kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let attributes = try #require(found as? [String: Any])
            #expect(attributes[account] as? String == "alice")
            // A Data service of other bytes is another item.
            #expect(add(genp("alice", nil, [kSecAttrService as String: Data([0x73, 0xFF])])) == errSecSuccess)
            #expect(copy(genp("alice", "s\u{FFFD}")).0 == errSecItemNotFound)
        }
    }
}
