import Foundation
import KeychainCore
import KeychainDBus
import KeychainImport
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `security import-keyring` on files the real programs wrote: gnome-keyring's keyrings (binary with a password,
/// plain text without) and a `pass` store made by `pass` with a real GnuPG key; what lands in the keychain is read
/// back through keychaind's Secret Service and compared with what the source program serves.
@Suite(
    "security import-keyring", .serialized,
    .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may"))
struct KeyringFileImportTests {
    /// Runs `security` against the rig's keychaind with the person approving, and `extra` in the environment.
    static func security(_ rig: SecretServiceRig, _ arguments: [String], input: String? = nil, extra: [String: String] = [:]) throws -> ProgramRun {
        let person = rig.root + "/person"
        try "confirm\n".write(toFile: person, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: person) }
        return try rig.run(try BuiltProducts.path(of: "security"), arguments, input: input, timeout: 300, extraEnvironment: extra)
    }

    /// The code `body` fails with, or nil when it does not.
    static func code(_ body: () throws(KeychainError) -> Void) -> KeychainError.Code? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test(
        "gnome-keyring's own files: every item of the login keyring (binary, password) and of a plain one, as gnome-keyring serves them; a second run adds nothing",
        .enabled(if: GnomeKeyringSource.isAvailable, "needs gnome-keyring-daemon and python3-secretstorage"))
    func gnomeKeyringFiles() async throws {
        try await onThread {
            let source = try GnomeKeyringSource()
            let expected = try source.python(GnomeKeyringSource.dump)
            try #require(expected.status == 0, "\(expected.stderr)")
            let keyrings = source.root + "/home/.local/share/keyrings"
            let login = try #require(FileManager.default.contents(atPath: keyrings + "/login.keyring"))
            #expect(login.starts(with: Data("GnomeKeyring\n\r\0\n".utf8)), "gnome-keyring wrote its binary format")

            // The file as gnome-keyring wrote it, cut anywhere or with a byte changed: a clear error, never a crash.
            for cut in stride(from: 0, to: login.count, by: max(1, login.count / 40)) {
                let code = Self.code { () throws(KeychainError) in _ = try GnomeKeyringFile.read(login.prefix(cut), password: "login-password", name: "login", isDefault: true) }
                #expect(code == .corruptData || code == .authenticationFailed, "cut at \(cut): \(String(describing: code))")
            }
            for offset in stride(from: 20, to: login.count, by: max(1, login.count / 40)) {
                var changed = login
                changed[offset] ^= 0x41
                let code = Self.code { () throws(KeychainError) in _ = try GnomeKeyringFile.read(changed, password: "login-password", name: "login", isDefault: true) }
                #expect(code == nil || code == .corruptData || code == .authenticationFailed, "byte \(offset) changed: \(String(describing: code))")
            }

            let rig = try SecretServiceRig()
            let wrong = try Self.security(rig, ["import-keyring", "--password-stdin", keyrings], input: "not-it\n")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("The password does not open the keyring 'login'"), "\(wrong.stderr)")

            let first = try Self.security(rig, ["import-keyring", "--password-stdin", keyrings], input: "login-password\n")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout == "imported 4 items from 2 files (0 already present)\n", "\(first.stdout)")
            let second = try Self.security(rig, ["import-keyring", "--password-stdin", keyrings], input: "login-password\n")
            #expect(second.stdout == "imported 0 items from 2 files (4 already present)\n", "\(second.stdout)\(second.stderr)")

            // Compared with what gnome-keyring serves from the same files once restarted: the files keep no content
            // type (it held the one a client gave in memory only), and it names an item's schema (xdg:schema) from
            // the type the file records.
            try source.restart()
            let fromFiles = try source.python(GnomeKeyringSource.dump)
            try #require(fromFiles.status == 0, "\(fromFiles.stderr)")
            #expect(fromFiles.stdout.contains("\"xdg:schema\": \"org.freedesktop.Secret.Generic\""), "\(fromFiles.stdout)")
            let actual = try source.python(GnomeKeyringSource.dump, address: rig.bus.address)
            try #require(actual.status == 0, "\(actual.stderr)")
            #expect(actual.stdout == fromFiles.stdout)
        }
    }

    @Test(
        "a pass store made by pass: every entry, multi-line ones whole, decrypted by the user's gpg; a second run adds nothing",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/pass") && FileManager.default.isExecutableFile(atPath: "/usr/bin/gpg"), "needs pass and gpg"))
    func passStore() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let gnupg = rig.root + "/gnupg"
            try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let store = rig.root + "/password-store"
            let env = ["GNUPGHOME": gnupg, "PASSWORD_STORE_DIR": store]
            defer { _ = try? rig.run("/usr/bin/gpgconf", ["--kill", "gpg-agent"], extraEnvironment: env) }
            let key = try rig.run(
                "/usr/bin/gpg", ["--batch", "--passphrase", "", "--quick-gen-key", "Import Test <import@example.com>", "default", "default", "never"],
                timeout: 120, extraEnvironment: env)
            try #require(key.status == 0, "\(key.stderr)")
            #expect(try rig.run("/usr/bin/pass", ["init", "import@example.com"], extraEnvironment: env).status == 0)
            #expect(try rig.run("/usr/bin/pass", ["insert", "-m", "email/work"], input: "hunter2\nuser: ann@example.com\nurl: https://mail.example.com\n", extraEnvironment: env).status == 0)
            #expect(try rig.run("/usr/bin/pass", ["insert", "-e", "Café ☕"], input: "naïve-secret\n", extraEnvironment: env).status == 0)
            #expect(try rig.run("/usr/bin/pass", ["insert", "-e", "servers/db/root"], input: "s3cret!\n", extraEnvironment: env).status == 0)

            let first = try Self.security(rig, ["import-keyring", store], extra: env)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout == "imported 3 items from 1 file (0 already present)\n", "\(first.stdout)")
            let second = try Self.security(rig, ["import-keyring", store], extra: env)
            #expect(second.stdout == "imported 0 items from 1 file (3 already present)\n", "\(second.stdout)\(second.stderr)")

            // Found by secret-tool through keychaind's Secret Service, whole, as `pass show` prints them.
            for entry in ["email/work", "Café ☕", "servers/db/root"] {
                let shown = try rig.run("/usr/bin/pass", ["show", entry], extraEnvironment: env)
                let lookup = try rig.run("/usr/bin/secret-tool", ["lookup", "pass-entry", entry])
                #expect(lookup.status == 0 && lookup.stdout == shown.stdout, "\(entry): \(lookup.stdout) \(lookup.stderr)")
            }
            let search = try rig.run("/usr/bin/secret-tool", ["search", "pass-entry", "email/work"])
            #expect(search.stdout.contains("label = email/work"), "\(search.stdout)")

            // Without the key (another GnuPG home): nothing decrypts, and the error says what to check.
            let empty = rig.root + "/gnupg-empty"
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let keyless = try Self.security(rig, ["import-keyring", store], extra: ["GNUPGHOME": empty])
            #expect(keyless.status == 1)
            #expect(keyless.stderr.contains("gpg could not decrypt any entry") && keyless.stderr.contains("pass show"), "\(keyless.stderr)")
        }
    }

    @Test(
        "a KeePassXC database with a password and a key file, made by keepassxc-cli: entries found by secret-tool by their fields",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/keepassxc-cli"), "needs keepassxc-cli (Debian's keepassxc)"))
    func keepassDatabase() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let database = rig.root + "/vault.kdbx"
            let key = rig.root + "/vault.keyx"
            let qt = ["QT_QPA_PLATFORM": "offscreen"]
            func cli(_ arguments: [String], _ input: String) throws {
                let run = try rig.run("/usr/bin/keepassxc-cli", arguments, input: input, extraEnvironment: qt)
                try #require(run.status == 0, "keepassxc-cli \(arguments): \(run.stderr)")
            }
            try cli(["db-create", "-q", "-p", "--set-key-file", key, database], "vault-pw\nvault-pw\n")
            try cli(["mkdir", "-q", "-k", key, database, "Email"], "vault-pw\n")
            try cli(["add", "-q", "-k", key, "-u", "ann", "--url", "https://mail.example.com", "-p", database, "Email/Work mail"], "vault-pw\nmail-pw\n")
            try cli(["add", "-q", "-k", key, "-u", "root", "-p", database, "Database ☕"], "vault-pw\ndb-pw\n")

            let withoutKey = try Self.security(rig, ["import-keyring", "--password-stdin", database], input: "vault-pw\n")
            #expect(withoutKey.status == 1 && withoutKey.stderr.contains("vault.kdbx"), "\(withoutKey.stderr)")
            let first = try Self.security(rig, ["import-keyring", "--password-stdin", "--key-file", key, database], input: "vault-pw\n")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout == "imported 2 items from 1 file (0 already present)\n", "\(first.stdout)")
            let second = try Self.security(rig, ["import-keyring", "--password-stdin", "--key-file", key, database], input: "vault-pw\n")
            #expect(second.stdout == "imported 0 items from 1 file (2 already present)\n", "\(second.stdout)\(second.stderr)")

            let mail = try rig.run("/usr/bin/secret-tool", ["lookup", "UserName", "ann", "URL", "https://mail.example.com"])
            #expect(mail.status == 0 && mail.stdout == "mail-pw", "\(mail.stdout)\(mail.stderr)")
            let search = try rig.run("/usr/bin/secret-tool", ["search", "UserName", "root"])
            #expect(search.stdout.contains("label = Database ☕") && search.stdout.contains("secret = db-pw"), "\(search.stdout)\(search.stderr)")
        }
    }

    @Test(
        "an import of several batches through keychaind asks the person once: \"only this time\" covers the whole command",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/keepassxc-cli"), "needs keepassxc-cli (Debian's keepassxc)"))
    func oneApprovalForTheWholeImport() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let xml = keePassXML(name: "Many", entries: 250)
            try Data(xml.utf8).write(to: URL(fileURLWithPath: rig.root + "/many.xml"))
            let made = try rig.run(
                "/usr/bin/keepassxc-cli", ["import", "-q", "-p", rig.root + "/many.xml", rig.root + "/many.kdbx"], input: "pw\npw\n",
                extraEnvironment: ["QT_QPA_PLATFORM": "offscreen"])
            try #require(made.status == 0, "\(made.stderr)")

            // Allow, then "Only this time"; nobody answers after that.
            try rig.queuePrompts("confirm notok")
            let shown = rig.promptsShown
            let run = try rig.run(try BuiltProducts.path(of: "security"), ["import-keyring", "--password-stdin", rig.root + "/many.kdbx"], input: "pw\n", timeout: 300)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "imported 250 items from 1 file (0 already present)\n", "\(run.stdout)")
            #expect(rig.promptsShown == shown + 1, "three batches, one prompt")
            // Nothing was remembered: the next command is asked again (and refused, nobody answering).
            let again = try rig.run(try BuiltProducts.path(of: "security"), ["import-keyring", "--password-stdin", rig.root + "/many.kdbx"], input: "pw\n", timeout: 300)
            #expect(again.status != 0)
            #expect(rig.promptsShown == shown + 2)
        }
    }
}
