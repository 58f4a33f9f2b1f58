import Foundation
import KeychainTestSupport
import Testing

/// Locking as Secret Service clients expect it, against gnome-keyring's own answers: `Lock` locks the collection it
/// names (the keychain, with a passcode; the collection for every caller, without), `Locked` says so, `SearchItems`
/// lists what a locked collection holds as locked, labels and attributes stay readable, secrets do not; and libsecret
/// (`secret-tool lookup`) then unlocks through the prompt and prints the secret.
@Suite(
    "Secret Service locking", .serialized,
    .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may"))
struct SecretServiceLockingTests {
    static var script: String {
        get throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/lock_compare.py")
            return try String(contentsOf: url, encoding: .utf8)
        }
    }

    /// The observations of Scripts/lock_compare.py, parsed.
    static func observations(_ run: ProgramRun) throws -> [String: String] {
        guard run.status == 0, let line = run.stdout.split(separator: "\n").last,
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw TestProcessError("lock_compare.py failed (\(run.status)):\n\(run.stdout)\(run.stderr)") }
        return object.mapValues { "\($0)" }
    }

    static func gnomeKeyring(password: String?) throws -> [String: String] {
        let gnome = try GnomeKeyringSource(loginPassword: password)
        return try observations(try gnome.python(try script))
    }

    @Test(
        "with a passcode: Lock, Locked, SearchItems and item properties answer as gnome-keyring's",
        .enabled(if: GnomeKeyringSource.isAvailable, "needs gnome-keyring-daemon and python3-secretstorage (jeepney)"))
    func withAPasscodeAsGnomeKeyring() async throws {
        try await onThread {
            let expected = try Self.gnomeKeyring(password: "login-password")
            let rig = try SecretServiceRig()
            let security = try BuiltProducts.path(of: "security")
            #expect(try rig.run(security, ["set-keychain-password", "--new-password-stdin"], input: "pw-1\n").status == 0)
            let ours = try Self.observations(try rig.python(try Self.script))
            #expect(ours == expected)
            #expect(expected["SearchItems locked is the item"] == "1" && expected["item Label"] == "Compared", "\(expected)")
            #expect(try rig.run(security, ["daemon", "status"]).stdout.contains("lock state: locked"), "Lock locked the keychain")
        }
    }

    @Test(
        "without a passcode: Lock locks the collection for every caller; as gnome-keyring, but Unlock asks the person",
        .enabled(if: GnomeKeyringSource.isAvailable, "needs gnome-keyring-daemon and python3-secretstorage (jeepney)"))
    func withoutAPasscodeAsGnomeKeyring() async throws {
        try await onThread {
            var expected = try Self.gnomeKeyring(password: nil)
            let rig = try SecretServiceRig()
            let ours = try Self.observations(try rig.python(try Self.script))
            // gnome-keyring opens a keyring without a password for anyone who asks; here the person confirms.
            #expect(expected["Unlock needs a prompt"] == "0")
            expected["Unlock needs a prompt"] = "1"
            #expect(ours == expected)

            // Locked for every program, not only the one that locked it: another connection finds it locked too.
            let other = try rig.run("/usr/bin/secret-tool", ["lookup", "compare", "locking"])
            #expect(other.status != 0 && other.stdout.isEmpty, "\(other.stdout)")
            // Opened again by `security unlock-keychain` (for when no prompt can be shown), or an Unlock's prompt.
            #expect(try rig.run(try BuiltProducts.path(of: "security"), ["unlock-keychain"], input: "\n").status == 0)
            let opened = try rig.run("/usr/bin/secret-tool", ["lookup", "compare", "locking"])
            #expect(opened.status == 0 && opened.stdout == "compared-secret", "\(opened.stdout)\(opened.stderr)")
        }
    }

    @Test("with a passcode, locked: secret-tool lookup shows the unlock prompt and prints the secret")
    func lookupUnlocksThroughThePrompt() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let security = try BuiltProducts.path(of: "security")
            #expect(try rig.run(security, ["set-keychain-password", "--new-password-stdin"], input: "pw-1\n").status == 0)
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=Mail", "service", "mail"], input: "mail-secret").status == 0)
            #expect(try rig.run(security, ["lock-keychain"]).status == 0)

            // A wrong passcode first: the prompt's action fails, libsecret reports it, nothing is printed.
            try rig.queuePrompts("pin wrong")
            let refused = try rig.run("/usr/bin/secret-tool", ["lookup", "service", "mail"])
            #expect(refused.status != 0 && refused.stdout.isEmpty, "\(refused.stdout)")

            let shown = rig.promptsShown
            try rig.queuePrompts("pin pw-1")
            let lookup = try rig.run("/usr/bin/secret-tool", ["lookup", "service", "mail"])
            #expect(lookup.status == 0 && lookup.stdout == "mail-secret", "\(lookup.stdout)\(lookup.stderr)")
            #expect(rig.promptsShown == shown + 1, "one prompt: the passcode")
            #expect(try rig.run(security, ["daemon", "status"]).stdout.contains("lock state: unlocked"))

            // `search --unlock` on a locked keychain, the same way; labels print even before the unlock.
            #expect(try rig.run(security, ["lock-keychain"]).status == 0)
            try rig.queuePrompts("pin pw-1")
            let search = try rig.run("/usr/bin/secret-tool", ["search", "--unlock", "service", "mail"])
            #expect(search.status == 0 && search.stdout.contains("label = Mail") && search.stdout.contains("secret = mail-secret"), "\(search.stdout)\(search.stderr)")
            #expect(!search.stderr.contains("CRITICAL"), "\(search.stderr)")
        }
    }

    @Test("without a passcode, a locked collection: secret-tool lookup asks the person to confirm, then prints the secret")
    func lookupConfirmsWithoutAPasscode() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=Mail", "service", "mail"], input: "mail-secret").status == 0)
            let lock = try rig.run(
                "/usr/bin/busctl",
                ["--user", "call", "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock", "ao", "1", "/org/freedesktop/secrets/aliases/default"])
            #expect(lock.status == 0, "\(lock.stderr)")

            try rig.queuePrompts("notok")
            let refused = try rig.run("/usr/bin/secret-tool", ["lookup", "service", "mail"])
            #expect(refused.status != 0 && refused.stdout.isEmpty, "\(refused.stdout)")
            try rig.queuePrompts("confirm")
            let lookup = try rig.run("/usr/bin/secret-tool", ["lookup", "service", "mail"])
            #expect(lookup.status == 0 && lookup.stdout == "mail-secret", "\(lookup.stdout)\(lookup.stderr)")
            let log = (try? String(contentsOfFile: rig.pinentryLog, encoding: .utf8)) ?? ""
            #expect(log.contains("which was locked"), "the prompt says why it asks: \(log)")
        }
    }
}
