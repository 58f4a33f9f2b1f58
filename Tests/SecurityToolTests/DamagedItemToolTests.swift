import Foundation
import KeychainCore
import Testing

/// `security verify-keychain` and `dump-keychain` on a keychain with a damaged item (one changed byte in its
/// sealed attributes), run as the built tool, in-process and through keychaind.
@Suite("security: damaged items")
struct DamagedItemToolTests {
    static let hasSQLite = FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")

    /// Changes one byte of row `rowid`'s sealed attributes with the sqlite3 shell.
    static func damage(_ kc: Sandbox, rowid: Int) throws {
        let sql = "UPDATE genp SET meta = substr(meta, 1, 40) || (CASE WHEN substr(meta, 41, 1) = x'00' THEN x'01' ELSE x'00' END) || substr(meta, 42) WHERE rowid = \(rowid);"
        let result = try kc.launch("/usr/bin/sqlite3", [kc.home + "/keychain-2.db", sql])
        #expect(result.status == 0, "sqlite3: \(result.stderr)")
    }

    @Test(.enabled(if: hasSQLite, "needs the sqlite3 shell to damage the database"), arguments: ToolMode.allCases)
    func verifyAndDumpReportTheDamagedItem(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            for (account, secret) in [("alice", "A-secret"), ("bob", "B-secret")] {
                let added = try kc.launch(
                    kc.tool, ["add-generic-password", "-a", account, "-s", "svc", "--password-stdin"],
                    input: Data("\(secret)\n".utf8))
                #expect(added.status == 0, "\(added.stderr)")
            }
            let intact = try kc.run(["verify-keychain"])
            #expect(intact.status == 0)
            #expect(intact.stdout == "2 items verified\n")
            #expect(intact.stderr == "")
            let backup = try kc.launch(
                kc.tool, ["backup-keychain", "-o", kc.root + "/before.backup", "--password-stdin"],
                input: Data("backup pass\n".utf8))
            #expect(backup.status == 0, "\(backup.stderr)")

            try Self.damage(kc, rowid: 1)

            let decode = KeychainStatus.decode.exitCode
            let found = try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"])
            #expect(found.status == decode)
            #expect(found.stdout == "")
            #expect(found.stderr.hasPrefix("security: SecKeychainSearchCopyNext: Unable to decode the provided data.\n"))

            let verify = try kc.run(["verify-keychain"])
            #expect(verify.status == decode)
            let lines = verify.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("damaged: genp rowid 1 ref 67656e70") == true)
            #expect(lines.first?.contains(": its sealed attributes fail authentication") == true)
            #expect(lines.last == "1 item verified, 1 damaged")
            #expect(verify.stderr.contains("security: SecKeychainVerify: Unable to decode the provided data.\n"))
            #expect(verify.stderr.contains("security: 1 damaged item in the keychain"))
            #expect(!(verify.stdout + verify.stderr).contains("A-secret"))
            #expect(!(verify.stdout + verify.stderr).contains("alice"))

            // dump-keychain prints the intact item, lists the damaged one on stderr and fails.
            let dump = try kc.run(["dump-keychain", "-d"])
            #expect(dump.status == decode)
            #expect(dump.stdout.contains("\"acct\"<blob>=\"bob\""))
            #expect(!dump.stdout.contains("alice"))
            #expect(dump.stderr.contains("damaged: genp rowid 1 ref 67656e70"))
            #expect(dump.stderr.contains("security: SecKeychainSearchCopyNext: Unable to decode the provided data.\n"))

            // The earlier backup repairs it.
            let restored = try kc.launch(
                kc.tool, ["restore-keychain", "-i", kc.root + "/before.backup", "--password-stdin"],
                input: Data("backup pass\n".utf8))
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(try kc.run(["verify-keychain"]).stdout == "2 items verified\n")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "A-secret\n")
        }
    }
}
