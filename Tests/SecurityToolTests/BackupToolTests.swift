import Foundation
import Testing

@Suite("security: backup-keychain and restore-keychain")
struct BackupToolTests {
    @Test func backupOnOneMachineRestoreOnAnother() throws {
        try withKeychain { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            try kc.succeed(["add-internet-password", "-a", "bob", "-s", "example.com", "-w", "web"])
            let file = kc.root + "/keychain.backup"
            let backup = try kc.run(["backup-keychain", "-o", file, "-P", "backup pw"])
            #expect(backup.status == 0)
            #expect(backup.stdout == "backed up 2 items (0 restorable only on this machine); 0 WhenPasscodeSetThisDeviceOnly items are never backed up\n")
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode.map { $0 & 0o077 } == 0)

            try withKeychain { other in
                let wrong = try other.run(["restore-keychain", "-i", file, "-P", "nope"])
                #expect(wrong.status == 51)
                #expect(wrong.stderr.hasPrefix("security: SecKeychainRestore: The user name or passphrase you entered is not correct.\n"))
                #expect(try other.run(["dump-keychain"]).stdout == "")

                let restored = try other.run(["restore-keychain", "-i", file, "-P", "backup pw"])
                #expect(restored.status == 0)
                #expect(restored.stdout == "restored 2 items (2 added, 0 replaced by newer copies); kept 0 newer items; skipped 0 ThisDeviceOnly items from another machine\n")
                #expect(try other.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "s3cret\n")
                #expect(try other.run(["find-internet-password", "-a", "bob", "-s", "example.com", "-w"]).stdout == "web\n")
            }
            let missing = try kc.run(["restore-keychain", "-i", kc.root + "/nothing-here", "-P", "x"])
            #expect(missing.status != 0)
        }
    }
}
