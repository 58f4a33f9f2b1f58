import Foundation
import KeychainDBus
import KeychainTestSupport
import Testing

/// The Secret Service as real clients use it, on a private bus: libsecret's `secret-tool`, Python's `secretstorage`
/// (both transfer algorithms), `busctl`; and the items seen as keychain items by `security`.
@Suite(
    "Secret Service clients", .serialized, .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool (Debian: dbus-daemon, libsecret-tools)"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may (a setting names only a pinentry only root can change)"))
struct SecretServiceClientTests {
    @Test("secret-tool stores, looks up, searches and clears")
    func secretTool() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let stored = try rig.run("/usr/bin/secret-tool", ["store", "--label=Mail account", "service", "imap.example.com", "user", "alice"], input: "pa55 word")
            #expect(stored.status == 0, "\(stored.stderr)")
            let lookup = try rig.run("/usr/bin/secret-tool", ["lookup", "service", "imap.example.com", "user", "alice"])
            #expect(lookup.status == 0)
            #expect(lookup.stdout == "pa55 word")
            // A subset of the attributes finds it too; a wrong value finds nothing.
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "user", "alice"]).stdout == "pa55 word")
            let missing = try rig.run("/usr/bin/secret-tool", ["lookup", "user", "bob"])
            #expect(missing.status == 1)
            #expect(missing.stdout == "")
            let search = try rig.run("/usr/bin/secret-tool", ["search", "--all", "service", "imap.example.com"])
            #expect(search.status == 0)
            #expect(search.stdout.contains("label = Mail account"))
            #expect(search.stdout.contains("secret = pa55 word"))
            // secret-tool prints the attributes on standard error.
            #expect((search.stdout + search.stderr).contains("attribute.user = alice"))
            #expect((search.stdout + search.stderr).contains("attribute.service = imap.example.com"))
            // Storing the same attributes again replaces the secret (libsecret asks for replace).
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=Mail account", "service", "imap.example.com", "user", "alice"], input: "new").status == 0)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "service", "imap.example.com"]).stdout == "new")
            #expect(try rig.run("/usr/bin/secret-tool", ["search", "--all", "user", "alice"]).stdout.components(separatedBy: "label = ").count == 2)
            let cleared = try rig.run("/usr/bin/secret-tool", ["clear", "service", "imap.example.com"])
            #expect(cleared.status == 0)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "service", "imap.example.com"]).status == 1)
        }
    }

    @Test(
        "Python secretstorage: create, search, get, set, replace, collections, aliases, lock and unlock, delete",
        .enabled(if: SecretServiceRig.hasSecretStorage, "needs python3-secretstorage"),
        arguments: ["dh", "plain"])
    func secretStorage(algorithm: String) async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            try rig.queuePrompts("confirm")  // the Unlock after a Lock
            let result = try rig.python(try clientScript(), arguments: [algorithm])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.hasSuffix("ok\n"))
            #expect(result.stdout.contains("session encrypted \(algorithm == "dh" ? "True" : "False")"))
        }
    }

    @Test("busctl introspects the service, the default alias, a collection and an item")
    func introspection() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=x", "k", "v"], input: "s").status == 0)
            let search = try rig.run(
                "/usr/bin/busctl",
                [
                    "--user", "call", "org.freedesktop.secrets", "/org/freedesktop/secrets",
                    "org.freedesktop.Secret.Service", "SearchItems", "a{ss}", "1", "k", "v",
                ])
            // `aoao 1 "/org/freedesktop/secrets/collection/login/ID" 0`
            let item = try #require(search.stdout.split(separator: "\"").dropFirst().first.map(String.init))
            #expect(item.hasPrefix("/org/freedesktop/secrets/collection/login/"))
            let expected: [(String, String)] = [
                ("/org/freedesktop/secrets", "org.freedesktop.Secret.Service"),
                ("/org/freedesktop/secrets/aliases/default", "org.freedesktop.Secret.Collection"),
                ("/org/freedesktop/secrets/collection/login", "org.freedesktop.Secret.Collection"),
                (item, "org.freedesktop.Secret.Item"),
            ]
            for (path, interface) in expected {
                let shown = try rig.run("/usr/bin/busctl", ["--user", "introspect", "org.freedesktop.secrets", path])
                #expect(shown.status == 0, "\(path): \(shown.stderr)")
                #expect(shown.stdout.contains(interface), "\(path)")
                #expect(shown.stdout.contains("org.freedesktop.DBus.Properties"), "\(path)")
            }
            let label = try rig.run("/usr/bin/busctl", ["--user", "get-property", "org.freedesktop.secrets", item, "org.freedesktop.Secret.Item", "Label"])
            #expect(label.stdout == "s \"x\"\n")
            let tree = try rig.run("/usr/bin/busctl", ["--user", "tree", "org.freedesktop.secrets"])
            #expect(tree.stdout.contains(item))
            let unknown = try rig.run("/usr/bin/busctl", ["--user", "introspect", "org.freedesktop.secrets", "/org/freedesktop/secrets/collection/nope"])
            #expect(unknown.status != 0)
            #expect(unknown.stderr.contains("No such object"))
        }
    }

    @Test("A Secret Service item is a keychain item: security sees it, and a delete through security is seen on the bus, signal included")
    func itemsAreKeychainItems() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let watcher = try DBusConnection(address: rig.bus.address)
            let provider = try watcher.nameOwner(of: "org.freedesktop.secrets")
            let signals = try watcher.subscribe(
                sender: provider, path: "/org/freedesktop/secrets/collection/login",
                interface: "org.freedesktop.Secret.Collection", member: nil)
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=Shared label", "app", "demo"], input: "visible").status == 0)
            let created = try #require(try watcher.nextSignal(from: signals, until: .now + .seconds(10)))
            #expect(created.member == "ItemCreated")
            let path = try #require(created.arguments.first?.string)
            #expect(path.hasPrefix("/org/freedesktop/secrets/collection/login/"))
            let dump = try rig.security(["dump-keychain"])
            #expect(dump.status == 0, "\(dump.stderr)")
            #expect(dump.stdout.contains("Shared label"))
            #expect(dump.stdout.contains("secret-service:login"))
            // The secret itself is not in the file in the clear.
            let database = try Data(contentsOf: URL(fileURLWithPath: rig.home + "/keychain-2.db"))
            #expect(database.range(of: Data("visible".utf8)) == nil)
            #expect(database.range(of: Data("demo".utf8)) == nil)
            let deleted = try rig.security(["delete-generic-password", "-s", "secret-service:login", "-l", "Shared label"])
            #expect(deleted.status == 0, "\(deleted.stderr)")
            let gone = try #require(try watcher.nextSignal(from: signals, until: .now + .seconds(10)))
            #expect(gone.member == "ItemDeleted")
            #expect(gone.arguments.first?.string == path)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "app", "demo"]).status == 1)
        }
    }

    @Test("The session collection keeps items in memory only: found while keychaind runs, gone after a restart")
    func sessionCollection() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let stored = try rig.run("/usr/bin/secret-tool", ["store", "--label=temporary", "--collection=/org/freedesktop/secrets/aliases/session", "kind", "session"], input: "in memory")
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=kept", "kind", "login"], input: "on disk").status == 0)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "kind", "session"]).stdout == "in memory")
            let search = try rig.run("/usr/bin/secret-tool", ["search", "--all", "kind", "session"])
            #expect(search.stdout.contains("label = temporary"))
            let introspected = try rig.run("/usr/bin/busctl", ["--user", "introspect", "org.freedesktop.secrets", "/org/freedesktop/secrets/collection/session"])
            #expect(introspected.stdout.contains("org.freedesktop.Secret.Collection"))
            // Nothing of it reaches the disk.
            let database = try Data(contentsOf: URL(fileURLWithPath: rig.home + "/keychain-2.db"))
            #expect(database.range(of: Data("temporary".utf8)) == nil)
            try rig.restart()
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "kind", "session"]).status == 1)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "kind", "login"]).stdout == "on disk")
        }
    }
}
