import Foundation
import Testing
import KeychainServices
import KeychainCore

@Suite struct DuplicateDetectionTests {
    @Test(arguments: Backend.allCases) func genericPasswordPrimaryKeyIsAccountAndService(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("alice", "svc", [kSecValueData as String: Data("1".utf8)])) == errSecSuccess)
            // Label, comment, accessibility and data are not part of the key.
            #expect(
                add(
                    genp(
                        "alice", "svc",
                        [
                            kSecAttrLabel as String: "other", kSecAttrComment as String: "c",
                            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
                            kSecValueData as String: Data("2".utf8),
                        ])) == errSecDuplicateItem)
            #expect(add(genp("alice", "svc2")) == errSecSuccess)
            #expect(add(genp("bob", "svc")) == errSecSuccess)
            // No account collides with an explicit empty account.
            #expect(add(genp(nil, "svc")) == errSecSuccess)
            #expect(add(genp("", "svc")) == errSecDuplicateItem)
            // A String and Data with the same UTF-8 bytes are the same account.
            #expect(add(genp(nil, nil, [kSecAttrAccount as String: Data("alice".utf8), kSecAttrService as String: "svc"])) == errSecDuplicateItem)
            // Synchronizable is part of the key.
            #expect(add(genp("alice", "svc", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            #expect(add(genp("alice", "svc", [kSecAttrSynchronizable as String: true])) == errSecDuplicateItem)
        }
    }

    @Test(arguments: Backend.allCases) func classesAreSeparateTables(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("alice", "x")) == errSecSuccess)
            #expect(add([kSecClass as String: kSecClassInternetPassword, kSecAttrAccount as String: "alice"]) == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func internetPasswordPrimaryKey(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            let base: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrAccount as String: "a",
                kSecAttrServer as String: "example.com",
            ]
            #expect(add(base) == errSecSuccess)
            #expect(add(base.merging([kSecAttrPort as String: 0]) { $1 }) == errSecDuplicateItem)  // port defaults to 0
            #expect(add(base.merging([kSecAttrPort as String: 443]) { $1 }) == errSecSuccess)
            #expect(add(base.merging([kSecAttrPort as String: "443"]) { $1 }) == errSecDuplicateItem)  // numeric string → number
            #expect(add(base.merging([kSecAttrProtocol as String: kSecAttrProtocolHTTPS]) { $1 }) == errSecSuccess)
            #expect(add(base.merging([kSecAttrPath as String: "/x"]) { $1 }) == errSecSuccess)
            #expect(add(base.merging([kSecAttrSecurityDomain as String: "d"]) { $1 }) == errSecSuccess)
            #expect(add(base.merging([kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTTPBasic]) { $1 }) == errSecSuccess)
            #expect(add(base.merging([kSecAttrLabel as String: "ignored for uniqueness"]) { $1 }) == errSecDuplicateItem)
        }
    }

    @Test(arguments: Backend.allCases) func certificateAndKeyPrimaryKeys(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            let cert: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecAttrCertificateType as String: 3,
                kSecAttrIssuer as String: Data([1, 2]), kSecAttrSerialNumber as String: Data([7]),
                kSecValueData as String: Data([0x30, 0x00]),
            ]
            #expect(add(cert) == errSecSuccess)
            #expect(add(cert.merging([kSecAttrLabel as String: "another label"]) { $1 }) == errSecDuplicateItem)
            #expect(add(cert.merging([kSecAttrSerialNumber as String: Data([8])]) { $1 }) == errSecSuccess)
            let key: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrApplicationTag as String: Data("tag".utf8), kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256, kSecValueData as String: Data([4, 5]),
            ]
            #expect(add(key) == errSecSuccess)
            #expect(add(key.merging([kSecAttrLabel as String: "x"]) { $1 }) == errSecDuplicateItem)
            #expect(add(key.merging([kSecAttrKeySizeInBits as String: 384]) { $1 }) == errSecSuccess)
            // Certificates default to kSecAttrAccessibleAlways, keys to WhenUnlocked.
            let (s1, c) = copy([kSecClass as String: kSecClassCertificate, kSecReturnAttributes as String: true])
            #expect(s1 == errSecSuccess)
            #expect((c as? [String: Any])?[kSecAttrAccessible as String] as? String == "dk")
            let (s2, k) = copy([kSecClass as String: kSecClassKey, kSecReturnAttributes as String: true])
            #expect(s2 == errSecSuccess)
            #expect((k as? [String: Any])?[kSecAttrAccessible as String] as? String == "ak")
            #expect((k as? [String: Any])?[kSecAttrKeyType as String] as? Int == 73)  // stored as a number
        }
    }
}

@Suite struct DefaultsAndDatesTests {
    @Test(arguments: Backend.allCases) func defaultsAreApples(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            #expect(add(genp(nil, nil, [kSecValueData as String: Data("x".utf8)])) == errSecSuccess)
            let (status, item) = copy(genp(nil, nil, [kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let attrs = try #require(item as? [String: Any])
            #expect(attrs[kSecAttrAccount as String] as? String == "")
            #expect(attrs[kSecAttrService as String] as? String == "")
            #expect(attrs[kSecAttrAccessible as String] as? String == "ak")
            #expect(attrs[kSecAttrSynchronizable as String] as? Int == 0)
            #expect(attrs[kSecAttrAccessGroup as String] as? String == "com.example.app")
            #expect(attrs[kSecValueData as String] == nil)  // attributes only: no data
            #expect(attrs[kSecClass as String] == nil)
        }
    }

    @Test(arguments: Backend.allCases) func datesAreSetByTheKeychain(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let fake = Date(timeIntervalSince1970: 0)
            #expect(add(genp("a", "s", [kSecAttrCreationDate as String: fake, kSecAttrModificationDate as String: fake])) == errSecSuccess)
            let (_, item) = copy(genp("a", "s", [kSecReturnAttributes as String: true]))
            let attrs = try #require(item as? [String: Any])
            let created = try #require(attrs[kSecAttrCreationDate as String] as? Date)
            let modified = try #require(attrs[kSecAttrModificationDate as String] as? Date)
            #expect(created == modified)
            #expect(abs(created.timeIntervalSinceNow) < 60)
            Thread.sleep(forTimeInterval: 0.01)
            #expect(SecItemUpdate(genp("a", "s") as CFDictionary, [kSecAttrLabel as String: "l", kSecAttrModificationDate as String: fake] as CFDictionary) == errSecSuccess)
            let (_, after) = copy(genp("a", "s", [kSecReturnAttributes as String: true]))
            let attrs2 = try #require(after as? [String: Any])
            #expect(attrs2[kSecAttrCreationDate as String] as? Date == created)
            let modified2 = try #require(attrs2[kSecAttrModificationDate as String] as? Date)
            #expect(modified2 > modified)
            // A query on the creation date matches by value.
            #expect(copy(genp(nil, nil, [kSecAttrCreationDate as String: created])).0 == errSecSuccess)
            #expect(copy(genp(nil, nil, [kSecAttrCreationDate as String: fake])).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases) func storedTypesComeBackAsStored(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            #expect(
                add(
                    [
                        kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: Data("srv".utf8),
                        kSecAttrProtocol as String: kSecAttrProtocolHTTPS, kSecAttrPort as String: 8443,
                        kSecAttrIsInvisible as String: true, kSecAttrGeneric as String: "x",
                    ].filter { $0.key != kSecAttrGeneric as String }) == errSecSuccess)
            let (_, item) = copy([kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "srv", kSecReturnAttributes as String: true])
            let attrs = try #require(item as? [String: Any])
            #expect(attrs[kSecAttrServer as String] as? Data == Data("srv".utf8))  // Data stays Data
            #expect(attrs[kSecAttrProtocol as String] as? String == "htps")  // a code string stays a string
            #expect(attrs[kSecAttrPort as String] as? Int == 8443)
            #expect(attrs[kSecAttrIsInvisible as String] as? Int == 1)  // booleans come back as 0/1
        }
    }
}

@Suite struct ResultShapeTests {
    /// Two items with data, one with none.
    func populated(_ backend: Backend) throws -> TestKeychain {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("one".utf8)])) == errSecSuccess)
            #expect(add(genp("b", "s", [kSecValueData as String: Data("two".utf8)])) == errSecSuccess)
            #expect(add(genp("c", "s")) == errSecSuccess)
        }
        return kc
    }

    @Test(arguments: Backend.allCases) func noReturnKeyGivesNoResult(_ backend: Backend) throws {
        let kc = try populated(backend)
        kc.run {
            let (status, item) = copy(genp("a", "s"))
            #expect(status == errSecSuccess)
            #expect(item == nil)
            #expect(SecItemCopyMatching(genp("a", "s") as CFDictionary, nil) == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func dataOnly(_ backend: Backend) throws {
        let kc = try populated(backend)
        kc.run {
            #expect(copy(genp("a", "s", [kSecReturnData as String: true])).1 as? Data == Data("one".utf8))
            let all = copy(genp(nil, "s", [kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll])).1 as? [Data]
            #expect(all?.count == 3)
            #expect(Set(all ?? []) == [Data("one".utf8), Data("two".utf8), Data()])
        }
    }

    @Test(arguments: Backend.allCases) func attributesOnlyAndWithData(_ backend: Backend) throws {
        let kc = try populated(backend)
        try kc.run {
            let attrs = try #require(copy(genp("a", "s", [kSecReturnAttributes as String: true])).1 as? [String: Any])
            #expect(attrs[kSecAttrAccount as String] as? String == "a")
            #expect(attrs[kSecValueData as String] == nil)
            let both = try #require(copy(genp("a", "s", [kSecReturnAttributes as String: true, kSecReturnData as String: true])).1 as? [String: Any])
            #expect(both[kSecValueData as String] as? Data == Data("one".utf8))
            #expect(both[kSecAttrAccount as String] as? String == "a")
            let noData = try #require(copy(genp("c", "s", [kSecReturnAttributes as String: true, kSecReturnData as String: true])).1 as? [String: Any])
            #expect(noData[kSecValueData as String] == nil)
        }
    }

    @Test(arguments: Backend.allCases) func persistentRefAlone(_ backend: Backend) throws {
        let kc = try populated(backend)
        try kc.run {
            let ref = try #require(copy(genp("a", "s", [kSecReturnPersistentRef as String: true])).1 as? Data)
            #expect(ref.count == 20)
            #expect(ref.prefix(4) == Data("genp".utf8))
            let refs = try #require(copy(genp(nil, "s", [kSecReturnPersistentRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll])).1 as? [Data])
            #expect(refs.count == 3)
            #expect(refs.contains(ref))
        }
    }

    @Test(arguments: Backend.allCases) func refForPasswordsIsNullWithSuccess(_ backend: Backend) throws {
        let kc = try populated(backend)
        try kc.run {
            let (status, item) = copy(genp("a", "s", [kSecReturnRef as String: true]))
            #expect(status == errSecSuccess)
            #expect(item == nil)
            let withAttrs = try #require(copy(genp("a", "s", [kSecReturnRef as String: true, kSecReturnAttributes as String: true])).1 as? [String: Any])
            #expect(withAttrs[kSecClass as String] as? String == "genp")
            #expect(withAttrs[kSecValueRef as String] == nil)
            #expect(withAttrs[kSecAttrAccount as String] as? String == "a")
        }
    }

    @Test(arguments: Backend.allCases) func dataAndPersistentRef(_ backend: Backend) throws {
        let kc = try populated(backend)
        try kc.run {
            let dict = try #require(copy(genp("a", "s", [kSecReturnData as String: true, kSecReturnPersistentRef as String: true])).1 as? [String: Any])
            #expect(dict[kSecValueData as String] as? Data == Data("one".utf8))
            #expect((dict[kSecValuePersistentRef as String] as? Data)?.count == 20)
            let attrsAndRef = try #require(copy(genp("a", "s", [kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true])).1 as? [String: Any])
            #expect(attrsAndRef[kSecValuePersistentRef as String] is Data)
            #expect(attrsAndRef[kSecAttrAccount as String] as? String == "a")
            #expect(attrsAndRef[kSecValueData as String] == nil)
            let everything = try #require(
                copy(
                    genp(
                        "a", "s",
                        [
                            kSecReturnData as String: true, kSecReturnAttributes as String: true,
                            kSecReturnRef as String: true, kSecReturnPersistentRef as String: true,
                        ])
                ).1 as? [String: Any])
            #expect(everything[kSecValueData as String] as? Data == Data("one".utf8))
            #expect(everything[kSecValuePersistentRef as String] is Data)
            #expect(everything[kSecClass as String] as? String == "genp")
        }
    }

    @Test(arguments: Backend.allCases) func limits(_ backend: Backend) throws {
        let kc = try populated(backend)
        try kc.run {
            // Default limit is one: a single object, not an array.
            #expect(copy(genp(nil, "s", [kSecReturnAttributes as String: true])).1 is [String: Any])
            // Numeric 1 behaves like LimitOne.
            #expect(copy(genp(nil, "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: 1])).1 is [String: Any])
            let two = try #require(copy(genp(nil, "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: 2])).1 as? [[String: Any]])
            #expect(two.count == 2)
            let all = try #require(copy(genp(nil, "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll])).1 as? [[String: Any]])
            #expect(Set(all.compactMap { $0[kSecAttrAccount as String] as? String }) == ["a", "b", "c"])
            // No match is errSecItemNotFound, never an empty array, and the result stays nil.
            let (status, item) = copy(genp("zzz", "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
            #expect(status == errSecItemNotFound)
            #expect(item == nil)
        }
    }

    @Test(arguments: Backend.allCases) func addReturnsResultWhenAsked(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            var result: CFTypeRef?
            #expect(SecItemAdd(genp("a", "s", [kSecValueData as String: Data("x".utf8), kSecReturnPersistentRef as String: true]) as CFDictionary, &result) == errSecSuccess)
            let ref = try #require(result as? Data)
            let found = copy([kSecValuePersistentRef as String: ref, kSecReturnData as String: true]).1 as? Data
            #expect(found == Data("x".utf8))
            var attrs: CFTypeRef?
            #expect(SecItemAdd(genp("b", "s", [kSecReturnAttributes as String: true]) as CFDictionary, &attrs) == errSecSuccess)
            #expect((attrs as? [String: Any])?[kSecAttrAccount as String] as? String == "b")
            var none: CFTypeRef? = NSString(string: "sentinel")
            #expect(SecItemAdd(genp("c", "s") as CFDictionary, &none) == errSecSuccess)
            #expect(none == nil)
        }
    }
}

@Suite struct MatchingTests {
    @Test(arguments: Backend.allCases) func matchingIsByteExactAndCaseInsensitiveIsIgnored(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("Alice", "s")) == errSecSuccess)
            #expect(copy(genp("alice", "s")).0 == errSecItemNotFound)
            #expect(copy(genp("alice", "s", [kSecMatchCaseInsensitive as String: true])).0 == errSecItemNotFound)
            #expect(copy(genp("Alice", "s", [kSecMatchCaseInsensitive as String: true])).0 == errSecSuccess)
            // NFC and NFD spellings are different accounts.
            #expect(add(genp("caf\u{E9}", "s")) == errSecSuccess)
            #expect(add(genp("cafe\u{301}", "s")) == errSecSuccess)
            #expect(copy(genp(nil, "s", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])).1.map { ($0 as? [Any])?.count } == 3)
        }
    }

    @Test(arguments: Backend.allCases) func valueDataInAQueryIsNotAFilter(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            let q = genp("a", "s", [kSecValueData as String: Data("secret".utf8)])
            #expect(add(q) == errSecSuccess)
            var other = q
            other[kSecValueData as String] = Data("different".utf8)
            #expect(copy(other).0 == errSecSuccess)
            #expect(SecItemDelete(other as CFDictionary) == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func synchronizableVisibility(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("local", "s")) == errSecSuccess)
            #expect(add(genp("synced", "s", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
            let all: [String: Any] = [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
            #expect((copy(genp(nil, "s", all)).1 as? [Any])?.count == 1)
            #expect(copy(genp("synced", "s")).0 == errSecItemNotFound)
            #expect((copy(genp(nil, "s", all.merging([kSecAttrSynchronizable as String: true]) { $1 })).1 as? [Any])?.count == 1)
            #expect((copy(genp(nil, "s", all.merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 })).1 as? [Any])?.count == 2)
            // Update and delete follow the same rule.
            #expect(SecItemUpdate(genp("synced", "s") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecItemNotFound)
            #expect(SecItemUpdate(genp("synced", "s", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecSuccess)
            #expect(SecItemDelete(genp("synced", "s") as CFDictionary) == errSecItemNotFound)
            #expect(SecItemDelete(genp("synced", "s", [kSecAttrSynchronizable as String: true]) as CFDictionary) == errSecSuccess)
            // Deleting a synchronizable item leaves an invisible tombstone; re-adding the same key works.
            #expect(copy(genp("synced", "s", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])).0 == errSecItemNotFound)
            #expect(add(genp("synced", "s", [kSecAttrSynchronizable as String: true])) == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func hostOrSubdomainMatch(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            for host in ["example.com", "api.example.com", "notexample.com"] {
                #expect(add([kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: host]) == errSecSuccess)
            }
            let found =
                copy([
                    kSecClass as String: kSecClassInternetPassword, kSecMatchHostOrSubdomainOfHost as String: "example.com",
                    kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
                ]).1 as? [[String: Any]]
            #expect(Set(found?.compactMap { $0[kSecAttrServer as String] as? String } ?? []) == ["example.com", "api.example.com"])
        }
    }
}

@Suite struct PersistentReferenceTests {
    @Test(arguments: Backend.allCases) func persistentRefFindsUpdatesAndDeletesTheSameItem(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("1".utf8)])) == errSecSuccess)
            #expect(add(genp("b", "s", [kSecValueData as String: Data("2".utf8)])) == errSecSuccess)
            let ref = try #require(copy(genp("b", "s", [kSecReturnPersistentRef as String: true])).1 as? Data)
            #expect(copy([kSecValuePersistentRef as String: ref, kSecReturnData as String: true]).1 as? Data == Data("2".utf8))
            // The reference survives an update, even one that changes the primary key.
            #expect(
                SecItemUpdate(
                    [kSecValuePersistentRef as String: ref] as CFDictionary,
                    [kSecAttrAccount as String: "b2", kSecValueData as String: Data("3".utf8)] as CFDictionary) == errSecSuccess)
            let attrs = try #require(copy([kSecValuePersistentRef as String: ref, kSecReturnAttributes as String: true, kSecReturnData as String: true]).1 as? [String: Any])
            #expect(attrs[kSecAttrAccount as String] as? String == "b2")
            #expect(attrs[kSecValueData as String] as? Data == Data("3".utf8))
            #expect(SecItemDelete([kSecValuePersistentRef as String: ref] as CFDictionary) == errSecSuccess)
            #expect(copy([kSecValuePersistentRef as String: ref]).0 == errSecItemNotFound)
            #expect(copy(genp("a", "s")).0 == errSecSuccess)  // the other item is untouched
            // A reference combined with attributes, or one that does not parse, is errSecParam.
            #expect(copy([kSecValuePersistentRef as String: ref, kSecAttrAccount as String: "a"]).0 == errSecParam)
            #expect(copy([kSecValuePersistentRef as String: Data("nonsense".utf8)]).0 == errSecParam)
        }
    }
}

@Suite struct UpdateDeleteTests {
    @Test(arguments: Backend.allCases) func updateChangesEveryMatch(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            for a in ["a", "b", "c"] { #expect(add(genp(a, "s", [kSecValueData as String: Data(a.utf8)])) == errSecSuccess) }
            #expect(add(genp("d", "other")) == errSecSuccess)
            #expect(SecItemUpdate(genp(nil, "s") as CFDictionary, [kSecAttrLabel as String: "L", kSecValueData as String: Data("new".utf8)] as CFDictionary) == errSecSuccess)
            let all = try #require(
                copy([
                    kSecClass as String: kSecClassGenericPassword, kSecAttrLabel as String: "L", kSecMatchLimit as String: kSecMatchLimitAll,
                    kSecReturnData as String: true,
                ]).1 as? [Data])
            #expect(all == [Data("new".utf8), Data("new".utf8), Data("new".utf8)])
            #expect(copy(genp("d", "other", [kSecReturnAttributes as String: true])).1.map { ($0 as? [String: Any])?[kSecAttrLabel as String] == nil } == true)
        }
    }

    @Test(arguments: Backend.allCases) func updateThatCollidesChangesNothing(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("A".utf8)])) == errSecSuccess)
            #expect(add(genp("b", "s", [kSecValueData as String: Data("B".utf8)])) == errSecSuccess)
            #expect(SecItemUpdate(genp(nil, "s") as CFDictionary, [kSecAttrAccount as String: "same"] as CFDictionary) == errSecDuplicateItem)
            #expect(copy(genp("a", "s", [kSecReturnData as String: true])).1 as? Data == Data("A".utf8))
            #expect(copy(genp("b", "s", [kSecReturnData as String: true])).1 as? Data == Data("B".utf8))
            #expect(copy(genp("same", "s")).0 == errSecItemNotFound)
            // Changing a primary-key attribute moves the item.
            #expect(SecItemUpdate(genp("a", "s") as CFDictionary, [kSecAttrAccount as String: "a2"] as CFDictionary) == errSecSuccess)
            #expect(copy(genp("a", "s")).0 == errSecItemNotFound)
            #expect(copy(genp("a2", "s", [kSecReturnData as String: true])).1 as? Data == Data("A".utf8))
            #expect(SecItemUpdate(genp("zzz", "s") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases) func updateAccessibilityKeepsTheSecret(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("keep".utf8)])) == errSecSuccess)
            #expect(SecItemUpdate(genp("a", "s") as CFDictionary, [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly] as CFDictionary) == errSecSuccess)
            #expect(copy(genp("a", "s", [kSecReturnData as String: true])).1 as? Data == Data("keep".utf8))
            #expect(copy(genp("a", "s", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly])).0 == errSecSuccess)
            #expect(copy(genp("a", "s", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases) func deleteRemovesEveryMatch(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            for a in ["a", "b", "c"] { #expect(add(genp(a, "s")) == errSecSuccess) }
            #expect(add(genp("d", "other")) == errSecSuccess)
            #expect(SecItemDelete(genp(nil, "s") as CFDictionary) == errSecSuccess)
            #expect(copy(genp(nil, "s")).0 == errSecItemNotFound)
            #expect(copy(genp("d", "other")).0 == errSecSuccess)
            #expect(SecItemDelete(genp(nil, "s") as CFDictionary) == errSecItemNotFound)
            // Return keys are ignored by delete.
            #expect(SecItemDelete(genp("d", "other", [kSecReturnData as String: true]) as CFDictionary) == errSecSuccess)
        }
    }

    @Test(arguments: Backend.allCases) func passcodeOnlyItemsNeedAPasscode(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("a", "s", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly])) == errSecAuthFailed)
            #expect(copy(genp("a", "s")).0 == errSecItemNotFound)
        }
    }
}

/// Every combination of the four return keys, with limit One and limit All, against Apple's result shapes.
@Suite struct ReturnCombinationTests {
    static let combinations: [(data: Bool, attributes: Bool, ref: Bool, persistentRef: Bool, all: Bool)] =
        (0..<32).map { ($0 & 1 != 0, $0 & 2 != 0, $0 & 4 != 0, $0 & 8 != 0, $0 & 16 != 0) }

    /// Checks one item's result against the shape rules of secitem-semantics.md §5.
    func check(_ result: Any?, _ c: (data: Bool, attributes: Bool, ref: Bool, persistentRef: Bool, all: Bool)) {
        switch (c.data, c.attributes, c.ref, c.persistentRef) {
        case (false, false, false, false), (false, false, true, false):
            #expect(result == nil, "\(c)")
        case (true, false, false, false):
            #expect(result as? Data == Data("secret".utf8), "\(c)")
        case (false, false, false, true):
            #expect((result as? Data)?.count == 20, "\(c)")
        default:
            guard let dict = result as? [String: Any] else {
                Issue.record("expected a dictionary for \(c), got \(String(describing: result))")
                return
            }
            #expect((dict[kSecValueData as String] as? Data == Data("secret".utf8)) == c.data, "\(c)")
            #expect((dict[kSecValuePersistentRef as String] is Data) == c.persistentRef, "\(c)")
            #expect((dict[kSecClass as String] as? String == "genp") == c.ref, "\(c)")
            #expect((dict[kSecAttrAccount as String] as? String == "acct") == c.attributes, "\(c)")
            #expect(dict[kSecValueRef as String] == nil)
        }
    }

    @Test(arguments: Backend.allCases, 0..<32)
    func shape(_ backend: Backend, _ index: Int) throws {
        let c = Self.combinations[index]
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("acct", "svc", [kSecValueData as String: Data("secret".utf8)])) == errSecSuccess)
            var query = genp(
                "acct", "svc",
                [
                    kSecReturnData as String: c.data, kSecReturnAttributes as String: c.attributes,
                    kSecReturnRef as String: c.ref, kSecReturnPersistentRef as String: c.persistentRef,
                ])
            if c.all { query[kSecMatchLimit as String] = kSecMatchLimitAll }
            let (status, result) = copy(query)
            #expect(status == errSecSuccess)
            if c.all {
                let onlyRef = c.ref && !c.data && !c.attributes && !c.persistentRef
                let nothing = !c.data && !c.attributes && !c.ref && !c.persistentRef
                if onlyRef || nothing {
                    #expect(result == nil, "\(c)")
                } else {
                    let array = result as? [Any]
                    #expect(array?.count == 1, "\(c)")
                    check(array?.first, c)
                }
            } else {
                check(result, c)
            }
        }
    }
}
