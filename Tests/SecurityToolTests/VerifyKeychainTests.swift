import Foundation
import KeychainTestSupport
import Testing

/// `security verify-keychain`, and what a search does when it meets a damaged item, on a keychain whose file was
/// altered by hand: one flipped byte in an item's sealed attributes.
@Suite("security: damaged items are reported, never dropped")
struct VerifyKeychainTests {
    /// Flips one bit of the sealed attributes of generic password row `row`, with Python's sqlite3 module.
    static func flipAttributeByte(_ database: String, row: Int) throws {
        let script = """
        import sqlite3, sys
        c = sqlite3.connect(sys.argv[1]); meta = bytearray(c.execute("SELECT meta FROM genp WHERE rowid = ?", (int(sys.argv[2]),)).fetchone()[0])
        meta[len(meta) // 2] ^= 1; c.execute("UPDATE genp SET meta = ? WHERE rowid = ?", (bytes(meta), int(sys.argv[2]))); c.commit()
        """
        let run = try ProgramRun.run("/usr/bin/python3", ["-c", script, database, "\(row)"], environment: ProcessInfo.processInfo.environment)
        guard run.status == 0 else { throw TestProcessError("could not alter the database: \(run.stderr)") }
    }

    @Test(arguments: ToolMode.allCases)
    func aFlippedByteIsErrSecDecodeAndVerifyKeychainListsIt(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "one"])
            try kc.succeed(["add-generic-password", "-a", "bob", "-s", "example.com", "-w", "two"])
            let clean = try kc.run(["verify-keychain"])
            #expect(clean.status == 0)
            #expect(clean.stdout == "2 items checked, 0 damaged\n")

            try Self.flipAttributeByte(kc.home + "/keychain-2.db", row: 1)
            // The search that meets it fails with errSecDecode (-26275; the tool exits with its low byte), it does
            // not report the item missing.
            let find = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"])
            #expect(find.status == Int32(UInt8(truncatingIfNeeded: -26275)))
            #expect(find.stderr.contains("security verify-keychain"), "\(find.stderr)")
            #expect(try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com", "-w"]).stdout == "two\n")

            let checked = try kc.run(["verify-keychain"])
            #expect(checked.status == 1)
            #expect(checked.stdout == "damaged: genp row 1: its attributes fail authentication (damaged or altered)\n2 items checked, 1 damaged\n")
            #expect(!checked.stdout.contains("alice") && !checked.stdout.contains("one"), "nothing of the item is shown")
        }
    }
}
