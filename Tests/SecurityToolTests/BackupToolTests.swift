import Foundation
import Testing

@Suite("security: backup-keychain, restore-keychain, export and import")
struct BackupToolTests {
    @Test(arguments: ToolMode.allCases) func backupOnOneMachineRestoreOnAnother(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
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

    @Test(arguments: ToolMode.allCases) func exportAndImportMoveTheWholeKeychainInTheBackupFormat(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            let file = kc.root + "/keychain.export"
            let exported = try kc.run(["export", "-k", "login.keychain", "-t", "all", "-f", "backup", "-P", "pp", "-o", file])
            #expect(exported.status == 0)
            #expect(exported.stdout == "" && exported.stderr == "")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(bytes.starts(with: Array("SKBK".utf8)))
            #expect(bytes.range(of: Data("s3cret".utf8)) == nil && bytes.range(of: Data("alice".utf8)) == nil)
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode.map { $0 & 0o077 } == 0)
            // Without -o the backup goes to standard output, byte for byte a backup.
            let piped = try kc.run(["export", "-f", "backup", "-P", "pp"])
            #expect(piped.status == 0)
            #expect(piped.stdoutData.starts(with: Array("SKBK".utf8)))

            try withKeychain { other in
                let wrong = try other.run(["import", file, "-P", "nope"])
                #expect(wrong.status == 51)
                #expect(wrong.stderr.hasPrefix("security: SecKeychainItemImport: The user name or passphrase you entered is not correct.\n"))
                let imported = try other.run(["import", file, "-k", "login.keychain", "-P", "pp"])
                #expect(imported.status == 0)
                #expect(imported.stdout == "restored 1 items (1 added, 0 replaced by newer copies); kept 0 newer items; skipped 0 ThisDeviceOnly items from another machine\n")
                #expect(try other.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "s3cret\n")
                // The same file again, with the format named: nothing is newer, nothing changes.
                let again = try other.run(["import", file, "-f", "backup", "-t", "agg", "-P", "pp"])
                #expect(again.stdout == "restored 0 items (0 added, 0 replaced by newer copies); kept 1 newer items; skipped 0 ThisDeviceOnly items from another machine\n")
            }
        }
    }

    @Test func exportAndImportRefuseWhatTheyCannotDoWithApplesCodes() throws {
        try withKeychain { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"])
            let notYet =
                "security: Certificates and public keys export as PEM (-f pemseq) or one DER certificate (-f x509); identities as PKCS#12 (-t identities -f pkcs12); -f backup moves the whole keychain.\n"
            // errSecUnsupportedFormat (-25256) exits 88.
            let p12 = try kc.run(["export", "-t", "certs", "-f", "pkcs12", "-o", kc.root + "/certs.p12"])
            #expect(p12.status == 88)
            #expect(p12.stderr == "security: SecKeychainItemExport: Import/Export format unsupported.\nsecurity: PKCS#12 holds identities: use -t identities.\n")
            #expect(!FileManager.default.fileExists(atPath: kc.root + "/certs.p12"))
            let p7 = try kc.run(["export", "-t", "certs", "-f", "pkcs7", "-o", kc.root + "/certs.p7"])
            #expect(p7.status == 88)
            #expect(p7.stderr == "security: SecKeychainItemExport: Import/Export format unsupported.\n" + notYet)
            // No identity to put in a PKCS#12 file: errSecItemNotFound (-25300) exits 44.
            let none = try kc.run(["export", "-t", "identities", "-f", "pkcs12", "-P", "pp", "-o", kc.root + "/none.p12"])
            #expect(none.status == 44)
            #expect(
                none.stderr
                    == "security: SecKeychainItemExport: The specified item could not be found in the keychain.\nsecurity: The keychain has no identity: a certificate together with its private key.\n"
            )
            // Nothing to export in PEM: errSecItemNotFound.
            #expect(try kc.run(["export", "-o", kc.root + "/x"]).status == 44)
            // errSecParam (-50) exits 206.
            let partial = try kc.run(["export", "-t", "certs", "-f", "backup", "-P", "pp", "-o", kc.root + "/x"])
            #expect(partial.status == 206)
            #expect(partial.stderr == "security: The backup format holds the whole keychain: use -t all (the default).\nsecurity: SecKeychainItemExport: OSStatus -50 (see `security error -50`)\n")
            #expect(try kc.run(["export", "-f", "tarball"]).status == 2, "an unknown format is a usage error")

            let text = kc.root + "/cert.pem"
            try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: text))
            // errSecUnknownFormat (-25257) exits 87.
            // A PEM certificate that does not parse: errSecDecode (-26275) exits 93.
            let broken = try kc.run(["import", text, "-P", "pp"])
            #expect(broken.status == 93)
            #expect(broken.stderr.hasPrefix("security: SecKeychainItemImport: Unable to decode the provided data.\nsecurity: A CERTIFICATE block of the PEM file does not parse."))
            // Neither backup, PEM, DER nor PKCS#12: errSecUnknownFormat (-25257) exits 87.
            try Data("plain text".utf8).write(to: URL(fileURLWithPath: kc.root + "/plain"))
            let unknown = try kc.run(["import", kc.root + "/plain", "-P", "pp"])
            #expect(unknown.status == 87)
            #expect(unknown.stderr == "security: SecKeychainItemImport: Unknown format in import.\nsecurity: \(kc.root)/plain is not a keychain backup, PEM, DER or PKCS#12.\n")
            #expect(try kc.run(["import", text, "-f", "pkcs12", "-P", "pp"]).status == 93)
            #expect(try kc.run(["import", text, "-f", "pkcs7", "-P", "pp"]).status == 88)
            let named = try kc.run(["import", text, "-f", "backup", "-P", "pp"])
            #expect(named.status == Int32(UInt8(truncatingIfNeeded: -26275)))
            #expect(named.stderr.hasPrefix("security: SecKeychainItemImport: Unable to decode the provided data.\n"))
            let missing = try kc.run(["import", kc.root + "/nothing-here", "-P", "pp"])
            #expect(missing.status == 220)  // errSecIO (-36)
            #expect(missing.stderr.contains("nothing-here does not exist."))
            // No passphrase and no terminal: refused at once, nothing changed.
            let file = kc.root + "/b"
            try kc.succeed(["export", "-f", "backup", "-P", "pp", "-o", file])
            let prompt = try kc.run(["import", file], detached: true)
            #expect(prompt.status == 36)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-w"]).stdout == "s3cret\n")
        }
    }

    @Test func backupRestoreExportAndImportGoThroughARunningKeychaind() throws {
        try withKeychain { kc in
            let daemon = try SandboxDaemon(kc)
            // The tool's own KEYCHAIN_HOME stays empty: everything happens in the daemon's keychain.
            var env = daemon.environment
            env["KEYCHAIN_HOME"] = kc.root + "/elsewhere"
            #expect(try kc.run(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "s3cret"], environment: env).status == 0)
            let file = kc.root + "/through-daemon.backup"
            let backup = try kc.run(["backup-keychain", "-o", file, "-P", "pw"], environment: env)
            #expect(backup.status == 0)
            #expect(backup.stdout == "backed up 1 items (0 restorable only on this machine); 0 WhenPasscodeSetThisDeviceOnly items are never backed up\n")
            #expect(try kc.run(["delete-generic-password", "-a", "alice", "-s", "svc"], environment: env).status == 0)
            let restored = try kc.run(["restore-keychain", "-i", file, "-P", "pw"], environment: env)
            #expect(restored.status == 0)
            #expect(restored.stdout.hasPrefix("restored 1 items (1 added"))
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"], environment: env).stdout == "s3cret\n")
            let exported = try kc.run(["export", "-f", "backup", "-P", "pw", "-o", kc.root + "/e"], environment: env)
            #expect(exported.status == 0)
            let wrong = try kc.run(["import", kc.root + "/e", "-P", "bad"], environment: env)
            #expect(wrong.status == 51)
            #expect(try kc.run(["import", kc.root + "/e", "-P", "pw"], environment: env).status == 0)
            #expect(!FileManager.default.fileExists(atPath: kc.root + "/elsewhere/keychain-2.db"), "the tool never opened a store itself")
            #expect(!daemon.output.contains("s3cret") && !daemon.output.contains("alice"))
            #expect(daemon.stop() == 0)
        }
    }
}
