import Foundation
import KeychainKit
import KeychainTestSupport
import Testing

/// KeychainKit's whole-item API (what the `security` tool is built on), in-process and through keychaind.
@Suite struct KeychainStoreItemsTests {
    @Test(arguments: StoreMode.allCases) func itemsAreAddedFoundUpdatedAndDeleted(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            try store.addItem(
                .genericPassword, attributes: ["acct": .string("alice"), "svce": .string("example.com"), "crtr": .int(0x61626364)],
                data: Data("s3cret".utf8))
            try store.addItem(.genericPassword, attributes: ["acct": .string("bob"), "svce": .string("example.com")], data: Data("b".utf8))
            expectKeychainError(.duplicateItem, status: .duplicateItem) {
                try store.addItem(.genericPassword, attributes: ["acct": .string("alice"), "svce": .string("example.com")], data: nil)
            }
            var query = KeychainQuery(.genericPassword, attributes: ["svce": .string("example.com")])
            query.limit = .all
            let all = try store.items(matching: query)
            #expect(Set(all.compactMap { $0.attributes["acct"]?.stringValue }) == ["alice", "bob"])
            #expect(all.allSatisfy { $0.data == nil }, "secrets only when asked for")
            #expect(all.allSatisfy { $0.itemClass == .genericPassword && $0.attributes["agrp"] == .string("com.example.tests") })

            var alice = KeychainQuery(.genericPassword, attributes: ["acct": .string("alice")])
            alice.returnsData = true
            let found = try #require(try store.items(matching: alice).first)
            #expect(found.data == Data("s3cret".utf8))
            #expect(found.attributes["crtr"]?.intValue == 0x61626364)

            var byReference = KeychainQuery(.genericPassword)
            byReference.persistentReference = found.persistentReference
            try store.updateItems(matching: byReference, attributes: ["labl": .string("Alice")], data: Data("new".utf8))
            let updated = try #require(try store.items(matching: alice).first)
            #expect(updated.data == Data("new".utf8))
            #expect(updated.attributes["labl"] == .string("Alice"))

            #expect(try store.deleteItems(matching: query) == 2)
            expectKeychainError(.itemNotFound, status: .itemNotFound) { try store.items(matching: query) }
            expectKeychainError(.itemNotFound, status: .itemNotFound) { try store.deleteItems(matching: query) }
            var bad = KeychainQuery(.genericPassword)
            bad.persistentReference = Data([1, 2, 3])
            expectKeychainError(.invalidParameter, status: .param) { try store.items(matching: bad) }
        }
    }

    /// kSecAttrSynchronizable as an attribute (`sync`): an added item syncs, an update moves it between local and
    /// synchronizable, a search sees one side; a value that is not 1 or 0, or a code that is no attribute of the
    /// class, is refused rather than dropped.
    @Test(arguments: StoreMode.allCases) func theSyncAttributeIsHonouredNotDropped(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let key: [String: KeychainItem.Value] = ["acct": .string("ann"), "svce": .string("sync.example.com")]
            try store.addItem(.genericPassword, attributes: key.merging(["sync": .int(1)]) { $1 }, data: Data("s".utf8))
            var synchronizable = KeychainQuery(.genericPassword, attributes: key)
            synchronizable.synchronizable = .synchronizable
            #expect(try store.items(matching: synchronizable).first?.attributes["sync"]?.intValue == 1)
            // Searching by the attribute is the same as by the property.
            #expect(try store.items(matching: KeychainQuery(.genericPassword, attributes: key.merging(["sync": .int(1)]) { $1 })).count == 1)
            expectKeychainError(.itemNotFound, status: .itemNotFound) { try store.items(matching: KeychainQuery(.genericPassword, attributes: key)) }

            try store.updateItems(matching: synchronizable, attributes: ["sync": .int(0)], data: nil)
            #expect(try store.items(matching: KeychainQuery(.genericPassword, attributes: key)).first?.attributes["sync"]?.intValue == 0)
            expectKeychainError(.itemNotFound, status: .itemNotFound) { try store.items(matching: synchronizable) }

            expectKeychainError(.invalidParameter, status: .param) {
                try store.addItem(.genericPassword, attributes: ["acct": .string("bob"), "sync": .int(2)], data: nil)
            }
            expectKeychainError(.noSuchAttribute, status: .noSuchAttribute) {
                try store.addItem(.genericPassword, attributes: ["acct": .string("bob"), "kSecAttrSynchronizable": .int(1)], data: nil)
            }
        }
    }

    @Test(arguments: StoreMode.allCases) func statusAndSettings(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let status = try store.status()
            #expect(status.directory == store.directory)
            #expect(status.lockStatus == .noPasscode)
            #expect((status.daemon != nil) == (mode == .keychaind))
            #expect(store.databasePath == store.directory + "/keychain-2.db")
            #expect(try store.settings() == nil)
            if mode == .inProcess {
                try store.setSettings(.init(idleTimeout: .seconds(90), lockOnSleep: true))
                #expect(try store.settings() == .init(idleTimeout: .seconds(90), lockOnSleep: true))
            } else {
                // Only keychaind's admin tool may change its settings.
                expectKeychainError(.missingEntitlement, status: .missingEntitlement) { try store.setSettings(.init(idleTimeout: .seconds(90))) }
            }
        }
    }

    @Test func programsAreRegisteredListedAndRemoved() throws {
        try withStore { store in
            let digest = try KeychainStore.RegisteredProgram.sha256(ofFileAt: "/bin/sh")
            #expect(digest.count == 64)
            try store.register(.init(program: .executable(path: "/bin/sh", sha256: digest), applicationIdentifier: "TEAM.sh", accessGroups: ["TEAM.shared"]))
            try store.register(.init(program: .flatpak("org.example.App"), accessGroups: ["TEAM.app"]))
            let programs = try store.registeredPrograms()
            #expect(programs.count == 2)
            #expect(programs.first?.groups == ["TEAM.shared", "TEAM.sh"])
            #expect(try store.unregisterProgram(named: "org.example.App") == 1)
            #expect(try store.registeredPrograms().count == 1)
            expectKeychainError(.missingEntitlement) { try KeychainStore.RegisteredProgram.sha256(ofFileAt: "/nonexistent/program") }
        }
    }

    @Test func filesWithoutKeysOrCertificatesAreNotRead() throws {
        #expect(try KeychainKeyAndCertificateFile.read(Data("hello".utf8)) == nil)
        expectKeychainError(.invalidParameter) { try KeychainCertificate(der: Data([0x30, 0x03, 0x02, 0x01, 0x01])) }
        try withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try KeychainFiles.write(Data("secret".utf8), to: directory + "/file")
            #expect(try KeychainFiles.read(directory + "/file") == Data("secret".utf8))
            #expect(try KeychainFiles.read(directory + "/missing") == nil)
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/file")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            // A link planted where the output goes is replaced, and what it pointed at is untouched.
            try Data("victim".utf8).write(to: URL(fileURLWithPath: directory + "/victim"))
            try FileManager.default.createSymbolicLink(atPath: directory + "/out", withDestinationPath: directory + "/victim")
            try KeychainFiles.write(Data("export".utf8), to: directory + "/out")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/victim")) == Data("victim".utf8))
            #expect(try KeychainFiles.read(directory + "/out") == Data("export".utf8))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/out")) == nil, "the link itself was replaced")
        }
    }
}
