import Foundation
import KeychainTestSupport
import Testing

/// `security create-keychain`, `list-keychains`, `default-keychain`, `login-keychain`, `delete-keychain`, and the
/// item verbs' keychain arguments (`-k`, a keychain named last), in process and through a real keychaind: the
/// README's walk-through of a second keychain.
@Suite("security: many keychains and the search list")
struct KeychainListToolTests {
    /// The exit status of a failure with `status` (its low byte, as macOS's tool exits).
    static func exitCode(_ status: Int32) -> Int32 { Int32(UInt32(bitPattern: status) & 0xff) }

    /// Runs the tool with `input` on standard input.
    static func run(_ kc: Sandbox, _ arguments: [String], input: String) throws -> ToolResult {
        try kc.launch(kc.tool, arguments, input: Data(input.utf8))
    }

    @Test(arguments: ToolMode.allCases)
    func aSecondKeychainInTheSearchList(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            // In process every command is a new process, so the new keychain has no passcode there (a passcode
            // would lock it again for each command); keychaind keeps it unlocked after creation.
            let password = mode == .keychaind ? "work-pass\n" : "\n"
            let created = try Self.run(kc, ["create-keychain", "--password-stdin", "work"], input: password)
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout == "" && created.stderr == "")
            let work = kc.home + "/keychains/work.keychain-db"
            // show-keychain-info prints its database file, which names it again.
            let info = try kc.run(["show-keychain-info", "work"])
            #expect(info.stdout == "Keychain \"\(work)/keychain-2.db\" timeout=600s\n")
            #expect(try kc.run(["show-keychain-info", work + "/keychain-2.db"]).stdout == info.stdout)

            #expect(try Self.run(kc, ["add-generic-password", "-a", "alice", "-s", "example.com", "--password-stdin"], input: "login-secret\n").status == 0)
            let added = try Self.run(kc, ["add-generic-password", "-a", "alice", "-s", "example.com", "--password-stdin", "-k", "work"], input: "work-secret\n")
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try Self.run(kc, ["add-generic-password", "-a", "bob", "-s", "example.com", "--password-stdin", work], input: "bob-secret\n").status == 0)

            // Not yet in the search list: only the login keychain is searched.
            let listed = try kc.run(["list-keychains"])
            #expect(listed.stdout == "    \"\(kc.home)\"\n")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"]).stdout == "login-secret\n")
            let missing = try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com", "-w"])
            #expect(missing.status == 44)
            // Named, a keychain is searched alone.
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w", "work"]).stdout == "work-secret\n")

            // The search list, in the order given.
            #expect(try kc.run(["list-keychains", "-s", "work", "login"]).status == 0)
            #expect(try kc.run(["list-keychains"]).stdout == "    \"\(work)\"\n    \"\(kc.home)\"\n")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"]).stdout == "work-secret\n")
            #expect(try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com", "-w"]).stdout == "bob-secret\n")
            #expect(try kc.run(["list-keychains", "-s", "login", "work"]).status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"]).stdout == "login-secret\n")

            // The default keychain takes adds that name none.
            #expect(try kc.run(["default-keychain"]).stdout == "    \"\(kc.home)\"\n")
            #expect(try kc.run(["login-keychain"]).stdout == "    \"\(kc.home)\"\n")
            #expect(try kc.run(["default-keychain", "-s", "work"]).status == 0)
            #expect(try kc.run(["default-keychain"]).stdout == "    \"\(work)\"\n")
            #expect(try Self.run(kc, ["add-generic-password", "-a", "carol", "-s", "example.com", "--password-stdin"], input: "carol-secret\n").status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "carol", "-s", "example.com", "-w", "login"]).status == 44)
            #expect(try kc.run(["find-generic-password", "-a", "carol", "-s", "example.com", "-w", "work"]).stdout == "carol-secret\n")

            // A second keychain of the same name, and the keychains the system gives, are refused.
            let again = try Self.run(kc, ["create-keychain", "--password-stdin", "work"], input: password)
            #expect(again.status == Self.exitCode(-25296))
            #expect(again.stderr.hasPrefix("security: SecKeychainCreate: A keychain with the same name already exists.\n"))
            let login = try kc.run(["delete-keychain", "login"])
            #expect(login.status == Self.exitCode(-50))
            #expect(login.stderr.contains("login is a keychain the system provides and cannot be deleted."))

            // Deleting it removes its items and takes it out of the list; the login keychain is the default again.
            #expect(try kc.run(["delete-keychain", "work"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: work))
            #expect(try kc.run(["list-keychains"]).stdout == "    \"\(kc.home)\"\n")
            #expect(try kc.run(["default-keychain"]).stdout == "    \"\(kc.home)\"\n")
            #expect(try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com"]).status == 44)
            let gone = try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com", "work"])
            #expect(gone.status == Self.exitCode(-25294))
            #expect(gone.stderr.contains("There is no keychain named work."))
        }
    }

    /// Through keychaind each keychain has its own lock state: locking the second leaves the login keychain open,
    /// a search over both still finds the login keychain's items, and the second's wait for its own passcode.
    @Test func lockingOneKeychainLeavesTheOthersOpen() throws {
        try withKeychain(.keychaind) { kc in
            #expect(try Self.run(kc, ["create-keychain", "--password-stdin", "work"], input: "work-pass\n").status == 0)
            #expect(try Self.run(kc, ["add-generic-password", "-a", "alice", "-s", "example.com", "--password-stdin"], input: "login-secret\n").status == 0)
            #expect(try Self.run(kc, ["add-generic-password", "-a", "wendy", "-s", "example.com", "--password-stdin", "-k", "work"], input: "work-secret\n").status == 0)
            #expect(try kc.run(["list-keychains", "-s", "login", "work"]).status == 0)

            #expect(try kc.run(["lock-keychain", "work"]).status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"]).stdout == "login-secret\n")
            let locked = try kc.run(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"])
            #expect(locked.status == 36)
            #expect(locked.stdout == "")
            // The tool names the locked keychain (not the login keychain, which is open) and says how to unlock it.
            #expect(
                locked.stderr == """
                    security: SecKeychainUnlock work: User interaction is not allowed.
                    security: There is no terminal to ask on. The keychain work is locked: unlock it with `security unlock-keychain work`, or run the command from a terminal to be asked for its password.

                    """)
            // A wrong passcode unlocks nothing; the right one unlocks that keychain.
            #expect(try Self.run(kc, ["unlock-keychain", "--password-stdin", "work"], input: "wrong\n").status == Self.exitCode(-25293))
            #expect(try kc.run(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"]).status == 36)
            #expect(try Self.run(kc, ["unlock-keychain", "--password-stdin", "work"], input: "work-pass\n").status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"]).stdout == "work-secret\n")

            // lock-keychain -a locks every open keychain.
            #expect(try kc.run(["lock-keychain", "-a"]).status == 0)
            #expect(try kc.run(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"]).status == 36)
        }
    }

    /// On a terminal, a command that meets another keychain locked asks for that keychain's password (not the login
    /// keychain's), unlocks it and runs once more; a wrong password unlocks nothing.
    @Test(.enabled(if: DaemonToolTests.hasScript, "needs script(1) for a terminal"), arguments: ToolMode.allCases)
    func aLockedKeychainIsAskedForByName(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            #expect(try Self.run(kc, ["create-keychain", "--password-stdin", "work"], input: "work-pass\n").status == 0)
            #expect(try kc.run(["list-keychains", "-s", "login", "work"]).status == 0)
            // In process the new keychain is locked again in the next command; through keychaind, lock it.
            let add = try kc.onTerminal(["add-generic-password", "-a", "wendy", "-s", "example.com", "-w", "work-secret", "-k", "work"], typing: "work-pass\n")
            #expect(add.status == 0, "\(add.stdout)")
            #expect(try kc.run(["lock-keychain", "work"]).status == 0)

            let wrong = try kc.onTerminal(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"], typing: "wrong\n")
            #expect(wrong.status == Self.exitCode(-25293))
            #expect(wrong.stdout.contains("password to unlock work: "))
            #expect(wrong.stdout.contains("security: SecKeychainUnlock work: The user name or passphrase you entered is not correct."))

            let found = try kc.onTerminal(["find-generic-password", "-a", "wendy", "-s", "example.com", "-w"], typing: "work-pass\n")
            #expect(found.status == 0)
            #expect(found.stdout.contains("password to unlock work: "))
            #expect(found.stdout.hasSuffix("work-secret\r\n"))
        }
    }

    /// SystemRoots is the distribution's trust store as a keychain: its certificates are found by naming it, and
    /// nothing can be added to it.
    @Test func systemRootsIsReadOnly() throws {
        try withKeychain { kc in
            let pem = kc.root + "/roots.pem"
            let key = kc.root + "/root.key"
            let made = try kc.launch(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", pem, "-subj", "/CN=Keychain Test Root", "-days", "30",
                ])
            #expect(made.status == 0, "\(made.stderr)")
            let roots = ["KEYCHAIN_SYSTEM_ROOTS": pem, "KEYCHAIN_SYSTEM_ROOTS_DIR": ""]
            #expect(try Self.run(kc, ["add-generic-password", "-a", "alice", "-s", "example.com", "--password-stdin"], input: "x\n").status == 0)
            let found = try kc.run(["find-certificate", "-c", "Keychain Test Root", "SystemRoots"], environment: roots)
            #expect(found.status == 0, "\(found.stderr)")
            #expect(found.stdout.contains("Keychain Test Root"))
            // Not in the search list: a search without it does not see the roots.
            #expect(try kc.run(["find-certificate", "-c", "Keychain Test Root"], environment: roots).status == 44)
            let added = try kc.run(["add-certificates", "-k", "SystemRoots", pem], environment: roots)
            #expect(added.status == Self.exitCode(-25292))
            #expect(added.stderr.contains("SystemRoots is read-only"))
        }
    }

    /// `import -k` and `export -k` act on the keychain named; without it, import goes to the default keychain and
    /// export reads the search list.
    @Test(arguments: ToolMode.allCases)
    func importAndExportTakeAKeychain(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let pem = kc.root + "/work.pem"
            let key = kc.root + "/work.key"
            let made = try kc.launch(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", pem, "-subj", "/CN=Work Certificate", "-days", "30",
                ])
            #expect(made.status == 0, "\(made.stderr)")
            let password = mode == .keychaind ? "work-pass\n" : "\n"
            #expect(try Self.run(kc, ["create-keychain", "--password-stdin", "work"], input: password).status == 0)

            let imported = try kc.run(["import", pem, "-k", "work"])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try kc.run(["find-certificate", "-c", "Work Certificate", "work"]).status == 0)
            #expect(try kc.run(["find-certificate", "-c", "Work Certificate", "login"]).status == 44)

            // Exported from the keychain named: the certificate openssl wrote; from the login keychain: nothing.
            let exported = try kc.run(["export", "-k", "work", "-t", "certs"])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(exported.stdout == (try String(contentsOfFile: pem, encoding: .utf8)))
            #expect(try kc.run(["export", "-k", "login", "-t", "certs"]).status == 44)
            // Without -k, export reads the search list: work only once it is in it.
            #expect(try kc.run(["export", "-t", "certs"]).status == 44)
            #expect(try kc.run(["list-keychains", "-s", "login", "work"]).status == 0)
            #expect(try kc.run(["export", "-t", "certs"]).stdout == exported.stdout)

            let missing = try kc.run(["export", "-k", "nowhere", "-t", "certs"])
            #expect(missing.status == Self.exitCode(-25294))
            #expect(missing.stderr.contains("There is no keychain named nowhere."))
        }
    }
}
