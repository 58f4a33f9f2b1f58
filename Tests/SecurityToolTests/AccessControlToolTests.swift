import Foundation
import Testing

@Suite struct AccessControlToolTests {
    @Test(
        "add --access-control protects the item: find shows its access control, -g cannot read the password without a prompt",
        arguments: ToolMode.allCases)
    func addWithAccessControl(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "vault", "-w", "s3cret", "--access-control", "devicePasscode"])
            try kc.succeed(["add-generic-password", "-a", "bob", "-s", "vault", "-w", "plain"])

            // The attributes are readable without a prompt; the access control is listed after them.
            let listed = try kc.run(["find-generic-password", "-a", "alice", "-s", "vault"])
            #expect(listed.status == 0)
            #expect(listed.stdout.contains("    \"acct\"<blob>=\"alice\"\n"))
            #expect(listed.stdout.contains("access control: devicePasscode;whenUnlocked\n"))
            // An item without one has no such line.
            let plain = try kc.run(["find-generic-password", "-a", "bob", "-s", "vault", "-g"])
            #expect(plain.status == 0)
            #expect(!plain.stdout.contains("access control"))
            #expect(plain.stderr == "password: \"plain\"\n")

            // -g: the item is shown, and its password needs the user's presence, which no pinentry here can ask
            // for: errSecInteractionNotAllowed (-25308, exit status 36).
            let shown = try kc.run(["find-generic-password", "-a", "alice", "-s", "vault", "-g"], detached: true)
            #expect(shown.status == 36)
            #expect(shown.stdout.contains("access control: devicePasscode;whenUnlocked\n"))
            #expect(shown.stderr.hasPrefix("security: SecKeychainItemCopyContent: User interaction is not allowed.\n"))
            #expect(shown.stderr.contains("No prompt can be shown"))
            #expect(!shown.stderr.contains("s3cret") && !shown.stdout.contains("s3cret"))
            // -w prints nothing on stdout.
            let only = try kc.run(["find-generic-password", "-a", "alice", "-s", "vault", "-w"], detached: true)
            #expect(only.status == 36)
            #expect(only.stdout == "")

            // Deleting needs no prompt.
            let deleted = try kc.run(["delete-generic-password", "-a", "alice", "-s", "vault"])
            #expect(deleted.status == 0)
            #expect(deleted.stderr == "password has been deleted.\n")
        }
    }

    @Test("several constraints: all needed, or any one with --or; Apple's invalid combinations exit with errSecParam")
    func constraintCombinations() throws {
        try withKeychain { kc in
            try kc.succeed([
                "add-internet-password", "-a", "alice", "-s", "example.com", "-w", "pw",
                "--access-control", "devicePasscode,biometryAny", "--or",
            ])
            let listed = try kc.run(["find-internet-password", "-a", "alice", "-s", "example.com"])
            #expect(listed.status == 0)
            #expect(listed.stdout.contains("access control: devicePasscode,biometryAny,or;whenUnlocked\n"))

            try kc.succeed([
                "add-generic-password", "-a", "carol", "-s", "vault", "-w", "pw",
                "--access-control", "devicePasscode", "--access-control", "biometryCurrentSet",
            ])
            let both = try kc.run(["find-generic-password", "-a", "carol", "-s", "vault"])
            #expect(both.stdout.contains("access control: devicePasscode,biometryCurrentSet;whenUnlocked\n"))

            // An application password is asked for when the item is added: with no pinentry that can show a prompt here (no display, no terminal), errSecInteractionNotAllowed.
            let password = try kc.run(
                [
                    "add-generic-password", "-a", "erin", "-s", "vault", "-w", "pw",
                    "--access-control", "applicationPassword",
                ], detached: true)
            #expect(password.status == 36)
            #expect(password.stderr.hasPrefix("security: SecKeychainItemCreateFromContent (<default>): User interaction is not allowed.\n"))
            #expect(try kc.run(["find-generic-password", "-a", "erin", "-s", "vault"]).status == 44)

            // userPresence combines only with applicationPassword (and privateKeyUsage): errSecParam, exit 206.
            let invalid = try kc.run([
                "add-generic-password", "-a", "dave", "-s", "vault", "-w", "pw",
                "--access-control", "userPresence,devicePasscode",
            ])
            #expect(invalid.status == 206)
            #expect(invalid.stderr.hasSuffix("security: SecKeychainItemCreateFromContent (<default>): OSStatus -50 (see `security error -50`)\n"))
            // An unknown name is a usage error.
            let unknown = try kc.run(["add-generic-password", "-a", "dave", "-s", "vault", "-w", "pw", "--access-control", "faceID"])
            #expect(unknown.status == 2)
            #expect(unknown.stderr.contains("'faceID' is not a constraint"))
        }
    }

    @Test("dump-keychain -d lists every item, a protected one without its password, and then fails", arguments: ToolMode.allCases)
    func dumpWithProtectedItems(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "vault", "-w", "s3cret", "--access-control", "devicePasscode"])
            try kc.succeed(["add-generic-password", "-a", "bob", "-s", "vault", "-w", "plain"])
            // Without -d nothing needs a prompt.
            let listing = try kc.run(["dump-keychain"])
            #expect(listing.status == 0)
            #expect(listing.stdout.contains("access control: devicePasscode;whenUnlocked\n"))

            let dump = try kc.run(["dump-keychain", "-d"], detached: true)
            #expect(dump.status == 36)
            #expect(dump.stdout.contains("    \"acct\"<blob>=\"alice\"\n"))
            #expect(dump.stdout.contains("    \"acct\"<blob>=\"bob\"\n"))
            #expect(dump.stdout.contains("data:\n\"plain\"\n"))
            #expect(!dump.stdout.contains("s3cret"))
            #expect(dump.stderr.hasPrefix("security: SecKeychainItemCopyContent: User interaction is not allowed.\n"))
            #expect(dump.stderr.contains("1 item's password (with an access control) not shown"))
        }
    }

    @Test("authorize --reset prints how many contexts were forgotten and exits 0", arguments: ToolMode.allCases)
    func authorizeReset(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let reset = try kc.run(["authorize", "--reset"])
            #expect(reset.status == 0)
            #expect(reset.stdout == "0 authorization contexts forgotten.\n")
            #expect(reset.stderr == "")
            // Without --reset: a usage error.
            #expect(try kc.run(["authorize"]).status == 2)
        }
    }
}
