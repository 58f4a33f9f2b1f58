import Foundation
import Testing
import KeychainServices
import KeychainCore
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

@Suite struct StoreSecurityTests {
    /// Every byte under KEYCHAIN_HOME, including the -wal and -shm files.
    func allFileBytes(_ home: String) throws -> [(String, Data)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: home)
        return try names.map { ($0, try Data(contentsOf: URL(fileURLWithPath: home + "/" + $0))) }
    }

    @Test func noSecretOrAttributeValueAppearsInAnyFile() throws {
        let kc = try TestKeychain(groups: ["GROUPMARKERq9Zx"])
        let secrets = ["SECRETMARKERx7Qw-correct-horse", "PASSWORDMARKERk2Jv"]
        let values = ["ACCOUNTMARKERp3Lm", "SERVICEMARKERr8Ty", "LABELMARKERa1Sd", "COMMENTMARKERf4Gh", "SERVERMARKERh5Jk", "PATHMARKERb2Nm", "GROUPMARKERq9Zx"]
        kc.run {
            #expect(
                add(
                    genp(
                        values[0], values[1],
                        [
                            kSecAttrLabel as String: values[2], kSecAttrComment as String: values[3],
                            kSecValueData as String: Data(secrets[0].utf8),
                        ])) == errSecSuccess)
            #expect(
                add([
                    kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: values[4], kSecAttrPath as String: values[5],
                    kSecAttrAccount as String: values[0], kSecValueData as String: Data(secrets[1].utf8),
                ]) == errSecSuccess)
            #expect(SecItemUpdate(genp(values[0], values[1]) as CFDictionary, [kSecValueData as String: Data((secrets[0] + "2").utf8)] as CFDictionary) == errSecSuccess)
            // The items are really there and readable.
            #expect(copy(genp(values[0], values[1], [kSecReturnData as String: true])).1 as? Data == Data((secrets[0] + "2").utf8))
        }
        let files = try allFileBytes(kc.home)
        #expect(files.contains { $0.0 == "keychain-2.db-wal" })  // the WAL is checked too
        for (name, bytes) in files {
            for marker in secrets + values {
                #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(marker) found in \(name)")
                // Also no UTF-16 copy of it.
                #expect(bytes.range(of: marker.data(using: .utf16LittleEndian) ?? Data()) == nil, "\(marker) (UTF-16) found in \(name)")
            }
        }
    }

    @Test func filesArePrivate() throws {
        let kc = try TestKeychain()
        kc.run { #expect(add(genp("a", "s", [kSecValueData as String: Data("x".utf8)])) == errSecSuccess) }
        let dirMode = try #require(try FileManager.default.attributesOfItem(atPath: kc.home)[.posixPermissions] as? Int)
        #expect(dirMode & 0o777 == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: kc.home) {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: kc.home + "/" + name)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(name) is readable by others: \(String(mode, radix: 8))")
        }
    }

    @Test func anExistingFolderOthersMayReadIsClosedToThemAndTheFilesArePrivate() throws {
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("kc-shared-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: shared) }
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let engine = try KeychainEngine(location: KeychainLocation(home: shared))
        var q = ItemQuery(itemClass: .genericPassword)
        q.valueData = Data("x".utf8)
        _ = try engine.add(q, caller: AccessPolicy(groups: ["g"]))
        let dirMode = try #require(try FileManager.default.attributesOfItem(atPath: shared)[.posixPermissions] as? Int)
        #expect(dirMode & 0o777 == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: shared) {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: shared + "/" + name)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(name) is readable by others")
        }
    }

    @Test func anExistingFolderOthersMayWriteIsRefused() throws {
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("kc-open-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: shared) }
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        _ = chmod(shared, 0o777)
        expectKeychainError(.io, status: .io) { _ = try KeychainEngine(location: KeychainLocation(home: shared)) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared).isEmpty)
    }

    @Test func aLostKeybagOrDeviceKeyIsAnErrorNotANewEmptyKeychain() throws {
        let kc = try TestKeychain()
        kc.run { #expect(add(genp("a", "s", [kSecValueData as String: Data("x".utf8)])) == errSecSuccess) }
        let fm = FileManager.default
        // Without the device key, the keybag cannot be opened: a clear error, and no new device key is made.
        try fm.moveItem(atPath: kc.home + "/device.key", toPath: kc.home + "/device.key.saved")
        do {
            _ = try KeychainEngine(location: KeychainLocation(home: kc.home))
            Issue.record("opened a keychain whose device key is missing")
        } catch {
            #expect(error.status == .notAvailable)
            #expect(error.message.contains("device.key"))
        }
        #expect(!fm.fileExists(atPath: kc.home + "/device.key"))
        try fm.moveItem(atPath: kc.home + "/device.key.saved", toPath: kc.home + "/device.key")
        // Without the keybag, the database's items are unreadable: a clear error, and no new keybag.
        try fm.moveItem(atPath: kc.home + "/keychain.keybag", toPath: kc.home + "/keychain.keybag.saved")
        do {
            _ = try KeychainEngine(location: KeychainLocation(home: kc.home))
            Issue.record("opened a keychain whose keybag is missing")
        } catch {
            #expect(error.status == .notAvailable)
            #expect(error.message.contains("keybag"))
        }
        #expect(!fm.fileExists(atPath: kc.home + "/keychain.keybag"))
        // With both restored, the item is there.
        try fm.moveItem(atPath: kc.home + "/keychain.keybag.saved", toPath: kc.home + "/keychain.keybag")
        let reopened = try KeychainEngine(location: KeychainLocation(home: kc.home))
        var q = ItemQuery(itemClass: .genericPassword)
        q.returns.data = true
        #expect(try reopened.find(q, caller: kc.caller).first?.data == Data("x".utf8))
    }

    @Test func swappedRowsAreRejectedNotMisread() throws {
        let kc = try TestKeychain()
        kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("AAA".utf8)])) == errSecSuccess)
            #expect(add(genp("b", "s", [kSecValueData as String: Data("BBB".utf8)])) == errSecSuccess)
        }
        // Someone with write access to the database moves b's sealed attributes and secret into a's row.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [
            kc.home + "/keychain-2.db",
            "UPDATE genp SET meta = (SELECT meta FROM genp WHERE rowid = 2), secret = (SELECT secret FROM genp WHERE rowid = 2) WHERE rowid = 1;",
        ]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
        kc.run {
            // Row 1 no longer authenticates and is reported damaged (never dropped in silence); b is still b;
            // nobody reads "BBB" as a's secret.
            #expect(copy(genp("a", "s", [kSecReturnData as String: true])).0 == errSecDecode)
            #expect(copy(genp("b", "s", [kSecReturnData as String: true])).1 as? Data == Data("BBB".utf8))
        }
    }

    @Test func nullsAndWrongTypesInTheDatabaseAreSkippedNotCrashed() throws {
        let kc = try TestKeychain()
        kc.run {
            for account in ["a", "b", "c", "d"] { #expect(add(genp(account, "s", [kSecValueData as String: Data("x".utf8)])) == errSecSuccess) }
        }
        // Rewrite the table without its constraints, then damage rows 1-3 in three ways.
        let sql = """
            CREATE TABLE damaged AS SELECT * FROM genp; DROP TABLE genp; ALTER TABLE damaged RENAME TO genp;
            UPDATE genp SET uuid = NULL WHERE rowid = 1;
            UPDATE genp SET sync = X'00' WHERE rowid = 2;
            UPDATE genp SET pdmn = 42 WHERE rowid = 3;
            """
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [kc.home + "/keychain-2.db", sql]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
        kc.run {
            let all = copy(genp(nil, "s", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])).1 as? [[String: Any]]
            #expect(all?.compactMap { $0[kSecAttrAccount as String] as? String } == ["d"])
        }
    }
}
