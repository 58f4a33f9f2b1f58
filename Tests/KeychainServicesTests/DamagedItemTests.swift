import Foundation
import Testing
import KeychainServices
import KeychainCore
import KeychainClient

/// A damaged item is reported, never dropped: one changed byte in an item's stored attributes (the sealed blob
/// in `keychain-2.db`) used to make the item vanish (`errSecItemNotFound`). Each query that meets it now gets
/// `errSecDecode`; `kSecMatchLimitAll` skips it (logged) and fails only when nothing intact matched.
@Suite struct DamagedItemTests {
    /// Changes one byte (at `offset`, 1-based) of a row's sealed attributes with the sqlite3 shell, as damage
    /// on disk or someone with write access to the file would.
    static func damageAttributes(home: String, table: String = "genp", rowid: Int, offset: Int = 41) throws {
        let sql = """
            UPDATE \(table) SET meta = substr(meta, 1, \(offset - 1)) \
            || (CASE WHEN substr(meta, \(offset), 1) = x'00' THEN x'01' ELSE x'00' END) \
            || substr(meta, \(offset + 1)) WHERE rowid = \(rowid);
            """
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [home + "/keychain-2.db", sql]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
    }

    static let hasSQLite = FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")

    @Test(.enabled(if: hasSQLite, "needs the sqlite3 shell to damage the database"), arguments: Backend.allCases)
    func aDamagedItemGivesErrSecDecode(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("alice", "svc", [kSecValueData as String: Data("A".utf8)])) == errSecSuccess)
            #expect(add(genp("bob", "svc", [kSecValueData as String: Data("B".utf8)])) == errSecSuccess)
            #expect(add(genp("carol", "other", [kSecValueData as String: Data("C".utf8)])) == errSecSuccess)
        }
        try Self.damageAttributes(home: kc.home, rowid: 1)
        kc.run {
            // The damaged item itself: errSecDecode, not errSecItemNotFound.
            #expect(copy(genp("alice", "svc", [kSecReturnData as String: true])).0 == errSecDecode)
            #expect(copy(genp("alice", "svc")).0 == errSecDecode)
            // kSecMatchLimitOne meets it first (row order): errSecDecode.
            #expect(copy(genp(nil, "svc", [kSecReturnAttributes as String: true])).0 == errSecDecode)
            // kSecMatchLimitAll skips it and returns the intact match.
            let all = copy(genp(nil, "svc", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]))
            #expect(all.0 == errSecSuccess)
            #expect((all.1 as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String } == ["bob"])
            // …and fails with errSecDecode when the damaged item is all it met.
            #expect(copy(genp("alice", "svc", [kSecMatchLimit as String: kSecMatchLimitAll])).0 == errSecDecode)
            // Update and delete of the damaged item alone: errSecDecode, nothing changed.
            #expect(SecItemUpdate(genp("alice", "svc") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecDecode)
            #expect(SecItemDelete(genp("alice", "svc") as CFDictionary) == errSecDecode)
            // Items the query cannot meet are untouched.
            #expect(copy(genp("carol", "other", [kSecReturnData as String: true])).1 as? Data == Data("C".utf8))
            #expect(copy(genp("bob", "svc", [kSecReturnData as String: true])).1 as? Data == Data("B".utf8))
        }
    }

    @Test(.enabled(if: hasSQLite, "needs the sqlite3 shell to damage the database"))
    func verifyListsTheDamagedItemAndRestoreRepairsIt() throws {
        let kc = try TestKeychain()
        kc.run {
            #expect(add(genp("alice", "svc", [kSecValueData as String: Data("A".utf8)])) == errSecSuccess)
            #expect(add(genp("bob", "svc", [kSecValueData as String: Data("B".utf8)])) == errSecSuccess)
        }
        let intact = try kc.engine.verify()
        #expect(intact == KeychainIntegrityReport(verified: 2, notChecked: 0, damaged: []))
        let backup = try kc.engine.backup(password: "backup password").data
        var q = ItemQuery(itemClass: .genericPassword)
        q.limit = .all
        let uuid = try #require(try kc.engine.find(q, caller: kc.caller).first { $0.attributes["acct"] == .string("alice") }?.uuid)

        try Self.damageAttributes(home: kc.home, rowid: 1)
        let report = try kc.engine.verify()
        #expect(report.verified == 1)
        #expect(report.damaged.count == 1)
        let damaged = try #require(report.damaged.first)
        #expect(damaged.itemClass == .genericPassword)
        #expect(damaged.rowid == 1)
        #expect(damaged.persistentRef == PersistentReference(itemClass: .genericPassword, uuid: uuid))
        #expect(damaged.problem.hasPrefix("its sealed attributes fail authentication"))
        #expect(!damaged.problem.contains("alice") && !damaged.problem.contains("svc"))

        // A backup leaves the damaged item out; restoring the earlier backup replaces it.
        #expect(try kc.engine.backup(password: "p").summary.items == 1)
        _ = try kc.engine.restore(backup, password: "backup password")
        #expect(try kc.engine.verify() == KeychainIntegrityReport(verified: 2, notChecked: 0, damaged: []))
        kc.run {
            #expect(copy(genp("alice", "svc", [kSecReturnData as String: true])).1 as? Data == Data("A".utf8))
        }
    }

    @Test(.enabled(if: hasSQLite, "needs the sqlite3 shell to damage the database"))
    func verifyFindsAStaleSearchIndexAndADamagedSecret() throws {
        let kc = try TestKeychain()
        kc.run {
            #expect(add(genp("alice", "svc", [kSecValueData as String: Data("A".utf8)])) == errSecSuccess)
            #expect(add(genp("bob", "svc", [kSecValueData as String: Data("B".utf8)])) == errSecSuccess)
        }
        // Row 1's account index points at bob's (queries on alice miss it); row 2's secret loses its last byte.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [
            kc.home + "/keychain-2.db",
            """
            UPDATE genp SET h_acct = (SELECT h_acct FROM genp WHERE rowid = 2) WHERE rowid = 1;
            UPDATE genp SET secret = substr(secret, 1, length(secret) - 1) WHERE rowid = 2;
            """,
        ]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
        let report = try kc.engine.verify()
        #expect(report.verified == 0)
        #expect(report.damaged.map(\.rowid) == [1, 2])
        #expect(report.damaged.first?.problem == "its search index h_acct does not match its attributes, so queries on acct miss it")
        #expect(report.damaged.last?.problem.hasPrefix("its sealed secret fails authentication") == true)
        kc.run {
            // Bob's secret no longer opens: errSecDecode, not a wrong or empty secret.
            #expect(copy(genp("bob", "svc", [kSecReturnData as String: true])).0 == errSecDecode)
        }
    }
}
