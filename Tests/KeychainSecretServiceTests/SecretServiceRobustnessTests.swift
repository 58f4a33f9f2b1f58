import Foundation
import KeychainDBus
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a hostile or broken client can do to the Secret Service: die in the middle, send garbage.
@Suite(
    "Secret Service robustness", .serialized,
    .enabled(if: SecretServiceRig.isAvailable && SecretServiceRig.hasSecretStorage, "needs dbus-daemon, secret-tool and python3-secretstorage"),
    .enabled(if: settingsMayNameATestPinentry, "the rig names its scripted pinentry in the keychain's settings, which only a root run may (a setting names only a pinentry only root can change)"))
struct SecretServiceRobustnessTests {
    @Test("A client killed mid-session leaves no session or prompt behind")
    func killedClientLeavesNothing() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            let program = try rig.pythonCopy("dies")
            let result = try rig.python(
                """
                import os, secretstorage, secretstorage.util
                from jeepney import new_method_call
                connection = secretstorage.dbus_init()
                for _ in range(3):
                    secretstorage.util.open_session(connection)
                service = secretstorage.util.DBusAddressWrapper("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", connection)
                unlocked, prompt = service.call("Unlock", "ao", ["/org/freedesktop/secrets/aliases/default"])
                print(prompt, flush=True)
                os.kill(os.getpid(), 9)
                """, interpreter: program)
            let prompt = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(prompt.hasPrefix("/org/freedesktop/secrets/prompt/"), "\(result.stderr)")
            // keychaind hears of the departure from the bus and drops everything of that connection.
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, !(rig.daemon?.output.contains("secret service client left the bus") ?? false) { usleep(20_000) }
            let log = rig.daemon?.output ?? ""
            let line = try #require(log.split(separator: "\n").last { $0.contains("secret service client left the bus") && $0.contains("sessions closed=3") })
            #expect(line.contains("prompts dropped=1"))
            #expect(line.contains("sessions open=0"))
            #expect(line.contains("prompts waiting=0"))
            // Its prompt is gone for everyone.
            let call = try rig.run("/usr/bin/busctl", ["--user", "call", "org.freedesktop.secrets", prompt, "org.freedesktop.Secret.Prompt", "Prompt", "s", ""])
            #expect(call.status != 0)
            #expect(call.stderr.contains("No such object"))
            #expect(rig.promptsShown == 0)
        }
    }

    @Test("10,000 malformed calls crash nothing and leave the data intact")
    func malformedCalls() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=keep", "keep", "me"], input: "intact").status == 0)
            let client = try DBusConnection(address: rig.bus.address, timeout: .seconds(10))
            let destination = "org.freedesktop.secrets"
            let paths = [
                "/org/freedesktop/secrets", "/org/freedesktop/secrets/collection/login", "/org/freedesktop/secrets/aliases/default",
                "/org/freedesktop/secrets/collection/login/0000000000000000", "/org/freedesktop/secrets/session/s999",
                "/org/freedesktop/secrets/prompt/p1", "/org/freedesktop/secrets/collection/x/y/z", "/", "/nope",
            ]
            let interfaces = [
                "org.freedesktop.Secret.Service", "org.freedesktop.Secret.Collection", "org.freedesktop.Secret.Item",
                "org.freedesktop.Secret.Session", "org.freedesktop.Secret.Prompt", "org.freedesktop.DBus.Properties",
                "org.freedesktop.DBus.Introspectable", "org.example.Nothing",
            ]
            let members = [
                "OpenSession", "CreateCollection", "SearchItems", "Unlock", "Lock", "GetSecrets", "ReadAlias", "SetAlias",
                "Delete", "CreateItem", "GetSecret", "SetSecret", "Close", "Prompt", "Dismiss", "Get", "GetAll", "Set",
                "Introspect", "Bogus",
            ]
            let huge = DBusValue.array(elementSignature: "{ss}", (0..<20_000).map { .dictEntry(.string("k\($0)"), .string(String(repeating: "v", count: 40))) })
            let wrongs: [[DBusValue]] = [
                [], [.string("plain")], [.string("plain"), .variant(.bytes(Array(repeating: 7, count: 200)))],
                [.string("dh-ietf1024-sha256-aes128-cbc-pkcs7"), .variant(.bytes([0]))],
                [.string("dh-ietf1024-sha256-aes128-cbc-pkcs7"), .variant(.bytes(Array(repeating: 0xff, count: 4096)))],
                [.int32(5)], [.objectPath("/x"), .objectPath("/y")], [huge], [.array(elementSignature: "o", [])],
                [
                    .array(elementSignature: "{sv}", [.dictEntry(.string("org.freedesktop.Secret.Item.Attributes"), .variant(.string("not a dict")))]),
                    .structure([.objectPath("/org/freedesktop/secrets/session/s1"), .bytes([]), .bytes(Array(repeating: 1, count: 100_000)), .string("text/plain")]),
                    .bool(true),
                ],
                [.string(String(repeating: "a", count: 300)), .objectPath("/org/freedesktop/secrets/collection/login")],
                [.string("org.freedesktop.Secret.Collection"), .string("Label"), .variant(.uint64(1))],
            ]
            var generator = SystemRandomNumberGenerator()
            var answered = 0
            for index in 0..<10_000 {
                let path = paths[index % paths.count]
                let interface = interfaces[Int.random(in: 0..<interfaces.count, using: &generator)]
                let member = members[Int.random(in: 0..<members.count, using: &generator)]
                var arguments = wrongs[Int.random(in: 0..<wrongs.count, using: &generator)]
                // Delete without arguments is a well-formed call that would delete the data: not malformed.
                if member == "Delete" && arguments.isEmpty { arguments = wrongs[5] }
                do {
                    try client.call(destination: destination, path: path, interface: interface, member: member, arguments)
                } catch DBusError.remote(let name, _) {
                    #expect(!name.contains("NoReply") && !name.contains("ServiceUnknown"), "call \(index) \(interface).\(member) at \(path): \(name)")
                    answered += 1
                    continue
                } catch {
                    Issue.record("call \(index): \(error)")
                    break
                }
                answered += 1
            }
            #expect(answered == 10_000)
            #expect(rig.daemon?.process.isRunning == true)
            #expect(try rig.run("/usr/bin/secret-tool", ["lookup", "keep", "me"]).stdout == "intact")
            #expect(try client.nameOwner(of: destination).hasPrefix(":"))
        }
    }

    @Test("Another connection cannot use a session or a prompt it did not open, even knowing its path")
    func sessionsAndPromptsBelongToTheirConnection() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "ask")
            #expect(try rig.run("/usr/bin/secret-tool", ["store", "--label=x", "k", "v"], input: "s").status != 0)  // ask: locked, prompt cancelled
            let result = try rig.python(
                """
                import secretstorage, secretstorage.util
                from secretstorage.util import DBusAddressWrapper
                from jeepney.wrappers import DBusErrorResponse
                from secretstorage.exceptions import ItemNotFoundException
                owner, thief = secretstorage.dbus_init(), secretstorage.dbus_init()
                session = secretstorage.util.open_session(owner)
                service = DBusAddressWrapper("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", owner)
                _, prompt = service.call("Unlock", "ao", ["/org/freedesktop/secrets/aliases/default"])
                stolen = DBusAddressWrapper("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", thief)
                def attempt(name, call):
                    try:
                        call()
                        print(name, "allowed")
                    except DBusErrorResponse as error:
                        print(name, error.name)
                    except ItemNotFoundException as error:  # secretstorage's name for NoSuchObject
                        print(name, error.__cause__.name)
                attempt("GetSecrets", lambda: stolen.call("GetSecrets", "aoo", [], session.object_path))
                attempt("Close", lambda: DBusAddressWrapper(session.object_path, "org.freedesktop.Secret.Session", thief).call("Close", ""))
                attempt("Prompt", lambda: DBusAddressWrapper(prompt, "org.freedesktop.Secret.Prompt", thief).call("Prompt", "s", ""))
                attempt("Dismiss", lambda: DBusAddressWrapper(prompt, "org.freedesktop.Secret.Prompt", thief).call("Dismiss", ""))
                attempt("own Close", lambda: DBusAddressWrapper(session.object_path, "org.freedesktop.Secret.Session", owner).call("Close", ""))
                """)
            #expect(
                result.stdout == """
                    GetSecrets org.freedesktop.Secret.Error.NoSession
                    Close org.freedesktop.Secret.Error.NoSuchObject
                    Prompt org.freedesktop.Secret.Error.NoSuchObject
                    Dismiss org.freedesktop.Secret.Error.NoSuchObject
                    own Close allowed

                    """, "\(result.stderr)")
        }
    }
}
