import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Per-application isolation on the bus: programs are identified by keychaind from the bus daemon's credentials
/// for their connection (executable path and SHA-256), never from anything they say.
@Suite(
    "Secret Service isolation", .serialized,
    .enabled(if: SecretServiceRig.isAvailable && SecretServiceRig.hasSecretStorage, "needs dbus-daemon, secret-tool and python3-secretstorage"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may (a setting names only a pinentry only root can change)"))
struct SecretServiceIsolationTests {
    /// Stores then reads one item in the default collection; prints `stored`, `read VALUE` or `locked`.
    static let storeAndRead = """
        import sys, secretstorage
        from secretstorage.exceptions import LockedException
        connection = secretstorage.dbus_init()
        collection = secretstorage.get_default_collection(connection)
        if collection.is_locked():
            dismissed = collection.unlock()
            print("dismissed" if dismissed else "unlocked")
        try:
            item = collection.create_item("App item", {"app": sys.argv[1]}, sys.argv[1].encode(), replace=True)
            print("read", item.get_secret().decode())
        except LockedException:
            print("locked")
        """

    @Test("ask: an unregistered program is refused until the person confirms; always survives a restart, not a rebuilt binary")
    func unregisteredProgramIsAsked() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            let program = try rig.pythonCopy("mail-app")
            // The person cancels: nothing is granted, nothing remembered.
            let cancelled = try rig.python(Self.storeAndRead, interpreter: program, arguments: ["one"])
            #expect(cancelled.stdout == "dismissed\nlocked\n", "\(cancelled.stderr)")
            #expect(rig.promptsShown == 1)
            // "Deny" is remembered: asked no more, still refused.
            try rig.queuePrompts("notok")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["two"]).stdout == "dismissed\nlocked\n")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["two"]).stdout == "dismissed\nlocked\n")
            #expect(rig.promptsShown == 2)
            #expect(try rig.security(["app", "revoke", program]).status == 0)
            // "Allow", then "Always allow".
            try rig.queuePrompts("confirm confirm")
            let allowed = try rig.python(Self.storeAndRead, interpreter: program, arguments: ["three"])
            #expect(allowed.stdout == "unlocked\nread three\n", "\(allowed.stderr)")
            #expect(rig.promptsShown == 3)
            // Remembered across a restart of keychaind (a fresh start on the same keychain): no prompt.
            try rig.restart()
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["four"]).stdout == "read four\n")
            #expect(rig.promptsShown == 3)
            // Another program is asked on its own.
            let other = try rig.pythonCopy("other-app")
            #expect(try rig.python(Self.storeAndRead, interpreter: other, arguments: ["x"]).stdout == "dismissed\nlocked\n")
            #expect(rig.promptsShown == 4)
            // A rebuilt binary at the same path is another program: asked again.
            var bytes = try Data(contentsOf: URL(fileURLWithPath: program))
            bytes.append(0)
            try writeExecutable(bytes, to: program)
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["five"]).stdout == "dismissed\nlocked\n")
            #expect(rig.promptsShown == 5)
            // "Only this time": allowed for that connection, and asked again by the next.
            try rig.queuePrompts("confirm notok")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["six"]).stdout == "unlocked\nread six\n")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["seven"]).stdout == "dismissed\nlocked\n")
            #expect(rig.promptsShown == 7)
        }
    }

    @Test("ask: a program keychaind cannot identify reliably (LD_LIBRARY_PATH) is asked Allow or Deny each time, never offered Always")
    func unidentifiedProgramIsNeverOfferedAlways() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            let program = try rig.pythonCopy("loader-app")
            let loader = ["LD_LIBRARY_PATH": rig.root]
            try rig.queuePrompts("confirm")
            let allowed = try rig.python(Self.storeAndRead, interpreter: program, arguments: ["one"], extraEnvironment: loader)
            #expect(allowed.stdout == "unlocked\nread one\n", "\(allowed.stderr)")
            #expect(rig.promptsShown == 1)
            // One CONFIRM with Allow and Deny: no second step, no "Always allow".
            let log = try String(contentsOfFile: rig.pinentryLog, encoding: .utf8)
            #expect(log.components(separatedBy: "\n").filter { $0 == "CONFIRM" }.count == 1, "\(log)")
            #expect(!log.contains("Always"), "\(log)")
            #expect(log.contains("asked each time and nothing is remembered"), "\(log)")
            // Nothing was remembered: the next connection is asked again, and a deny is not remembered either.
            try rig.queuePrompts("notok")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["two"], extraEnvironment: loader).stdout == "dismissed\nlocked\n")
            try rig.queuePrompts("confirm")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["three"], extraEnvironment: loader).stdout == "unlocked\nread three\n")
            #expect(rig.promptsShown == 3)
        }
    }

    @Test("ask: after an Unlock that opened nothing, IsLocked says why (a cancelled prompt, then a remembered refusal)")
    func isLockedSaysWhy() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            let store = ["store", "--label=Why", "app", "why"]
            // secret-tool calls Unlock, its prompt is dismissed, and CreateItem answers IsLocked with the prompt's outcome.
            try rig.queuePrompts("cancel")
            let cancelled = try rig.run("/usr/bin/secret-tool", store, input: "secret")
            #expect(cancelled.status != 0)
            #expect(cancelled.stderr.contains("is locked for this program: its last Unlock opened nothing. The person cancelled the prompt"), "\(cancelled.stderr)")
            #expect(!cancelled.stderr.contains("Call Unlock"), "\(cancelled.stderr)")
            // "Deny" is remembered; the next connection is told so, with how to be asked again.
            try rig.queuePrompts("notok")
            let denied = try rig.run("/usr/bin/secret-tool", store, input: "secret")
            #expect(denied.stderr.contains("its last Unlock opened nothing. The person refused"), "\(denied.stderr)")
            #expect(denied.stderr.contains("security app revoke"), "\(denied.stderr)")
            let again = try rig.run("/usr/bin/secret-tool", store, input: "secret")
            #expect(again.stderr.contains("the refusal is remembered"), "\(again.stderr)")
            #expect(rig.promptsShown == 2)
        }
    }

    @Test("ask with no pinentry: Unlock is refused with a message saying what to do")
    func askWithoutPrompter() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            try
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict><key>lock-on-sleep</key><false/><key>pinentry-program</key><string>/nonexistent/pinentry</string></dict></plist>"
                .write(toFile: rig.home + "/keychain.settings", atomically: true, encoding: .utf8)
            let program = try rig.pythonCopy("headless-app")
            let result = try rig.python(
                """
                import secretstorage
                from jeepney.wrappers import DBusErrorResponse
                connection = secretstorage.dbus_init()
                collection = secretstorage.get_default_collection(connection)
                try:
                    collection.unlock()
                    print("no error")
                except DBusErrorResponse as error:
                    print(error.name)
                    print(error.data[0])
                """, interpreter: program)
            #expect(result.stdout.hasPrefix("org.freedesktop.DBus.Error.AccessDenied\n"), "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("no prompt can be shown"))
            #expect(result.stdout.contains("KEYCHAIN_SECRET_SERVICE_UNREGISTERED=allow"))
        }
    }

    @Test("deny: registered programs reach their own groups' collections; two in different groups never see each other's items")
    func registeredProgramsAreIsolated() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "deny")
            let a = try rig.pythonCopy("app-a"), b = try rig.pythonCopy("app-b"), stranger = try rig.pythonCopy("stranger")
            #expect(try rig.security(["app", "add", "-g", "TEAM.a", a]).status == 0)
            #expect(try rig.security(["app", "add", "-g", "TEAM.b", b]).status == 0)
            let create = """
                import sys, secretstorage
                connection = secretstorage.dbus_init()
                collection = secretstorage.create_collection(connection, sys.argv[1], alias=sys.argv[1])
                item = collection.create_item("secret of " + sys.argv[1], {"owner": sys.argv[1]}, b"only-" + sys.argv[1].encode())
                print(collection.collection_path)
                print(item.item_path)
                """
            let madeA = try rig.python(create, interpreter: a, arguments: ["teamA"])
            #expect(madeA.status == 0, "\(madeA.stderr)")
            let pathsA = madeA.stdout.split(separator: "\n").map(String.init)
            #expect(try rig.python(create, interpreter: b, arguments: ["teamB"]).status == 0)
            let look = """
                import sys, secretstorage
                from jeepney.wrappers import DBusErrorResponse
                connection = secretstorage.dbus_init()
                print("collections", sorted(c.collection_path for c in secretstorage.get_all_collections(connection)))
                print("search", [i.item_path for i in secretstorage.search_items(connection, {"owner": sys.argv[1]})])
                try:
                    print("label", secretstorage.Collection(connection, sys.argv[2]).get_label())
                except Exception as error:
                    print("error", type(error).__name__)
                """
            let fromB = try rig.python(look, interpreter: b, arguments: ["teamA", pathsA[0]])
            #expect(fromB.stdout == "collections ['/org/freedesktop/secrets/collection/teamb']\nsearch []\nerror ItemNotFoundException\n", "\(fromB.stderr)")
            let fromA = try rig.python(look, interpreter: a, arguments: ["teamA", pathsA[0]])
            #expect(fromA.stdout == "collections ['/org/freedesktop/secrets/collection/teama']\nsearch ['\(pathsA[1])']\nlabel teamA\n", "\(fromA.stderr)")
            // Not registered, with deny: sees nothing and may create nothing.
            let fromStranger = try rig.python(look, interpreter: stranger, arguments: ["teamA", pathsA[0]])
            #expect(fromStranger.stdout == "collections []\nsearch []\nerror ItemNotFoundException\n", "\(fromStranger.stderr)")
            let strangerStores = try rig.run("/usr/bin/secret-tool", ["store", "--label=x", "k", "v"], input: "s")
            #expect(strangerStores.status != 0)
        }
    }

    @Test("The keychain's settings choose the policy (ask by default) and apply at once")
    func policyFromSettings() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "")
            let program = try rig.pythonCopy("settings-app")
            // Nothing set: ask (the scripted pinentry cancels).
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["a"]).stdout == "dismissed\nlocked\n")
            #expect(rig.promptsShown == 1)
            let allowed = try rig.security(["set-keychain-settings", "--secret-service-unregistered", "allow"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(try rig.python(Self.storeAndRead, interpreter: program, arguments: ["b"]).stdout == "read b\n")
            #expect(try rig.security(["set-keychain-settings", "--secret-service-unregistered", "deny"]).status == 0)
            let denied = try rig.run("/usr/bin/secret-tool", ["lookup", "app", "b"])
            #expect(denied.status == 1)
            #expect(denied.stdout == "")
            let wrong = try rig.security(["set-keychain-settings", "--secret-service-unregistered", "maybe"])
            #expect(wrong.status == 2)
            #expect(wrong.stderr.contains("ask"))
            // The pinentry setting was kept through both changes.
            #expect(try String(contentsOfFile: rig.home + "/keychain.settings", encoding: .utf8).contains("pinentry-program"))
        }
    }

    @Test(
        "A registered program traced after its first call loses its identity at the next call",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"), "needs strace"))
    func tracedAfterTheFirstCall() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "deny")
            let program = try rig.pythonCopy("traced-app")
            #expect(try rig.security(["app", "add", "-g", "TEAM.t", program]).status == 0)
            let result = try rig.python(
                """
                import os, subprocess, time, secretstorage
                connection = secretstorage.dbus_init()
                secretstorage.create_collection(connection, "Mine", alias="mine")
                print("before", [c.get_label() for c in secretstorage.get_all_collections(connection)], flush=True)
                tracer = subprocess.Popen(["/usr/bin/strace", "-p", str(os.getpid()), "-o", "/dev/null"])
                for _ in range(200):
                    with open("/proc/self/status") as status:
                        if any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in status):
                            break
                    time.sleep(0.02)
                print("after", [c.get_label() for c in secretstorage.get_all_collections(connection)], flush=True)
                tracer.kill()
                """, interpreter: program)
            #expect(result.stdout == "before ['Mine']\nafter []\n", "\(result.stderr)")
        }
    }
}
