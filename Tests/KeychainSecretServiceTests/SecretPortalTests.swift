import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where Debian installs xdg-desktop-portal.
let xdgDesktopPortal = "/usr/libexec/xdg-desktop-portal"

/// Flatpak applications' secrets through the real xdg-desktop-portal: the application calls
/// `org.freedesktop.portal.Secret.RetrieveSecret`, the portal identifies it from its `/.flatpak-info` (here a
/// bubblewrap sandbox, as Flatpak makes one) and calls keychaind's `org.freedesktop.impl.portal.Secret` backend, which
/// writes that application's secret to the descriptor the application gave.
@Suite(
    "Secret portal backend", .serialized,
    .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: xdgDesktopPortal), "needs xdg-desktop-portal (Debian's xdg-desktop-portal)"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap"), "needs bubblewrap for a Flatpak-style sandbox"),
    .enabled(if: SecretServiceRig.hasSecretStorage, "needs python3-jeepney (with python3-secretstorage)"))
struct SecretPortalTests {

    /// Asks the portal for the application's secret; prints the response code and the secret in hex.
    static let client = """
        import os, sys
        from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
        from jeepney.io.blocking import open_dbus_connection, Proxy
        connection = open_dbus_connection(bus="SESSION", enable_fds=True)
        portal = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.portal.Desktop",
                             interface="org.freedesktop.portal.Secret")
        token = "keychaintest"
        sender = connection.unique_name[1:].replace(".", "_")
        handle = f"/org/freedesktop/portal/desktop/request/{sender}/{token}"
        rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response", path=handle)
        Proxy(message_bus, connection).AddMatch(rule)
        read_end, write_end = os.pipe()
        with connection.filter(rule) as responses:
            reply = connection.send_and_get_reply(
                new_method_call(portal, "RetrieveSecret", "ha{sv}", (write_end, {"handle_token": ("s", token)})), timeout=30)
            os.close(write_end)
            if reply.header.message_type.name == "error":
                print("error", reply.body)
                sys.exit(1)
            response, _results = connection.recv_until_filtered(responses, timeout=30).body
        secret = b""
        while True:
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            secret += chunk
        print(response, secret.hex())
        """

    /// Calls keychaind's backend directly, as a program of the user that is not the portal: prints the error name.
    static let impostor = """
        import os
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        connection = open_dbus_connection(bus="SESSION", enable_fds=True)
        backend = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.secrets",
                              interface="org.freedesktop.impl.portal.Secret")
        read_end, write_end = os.pipe()
        reply = connection.send_and_get_reply(new_method_call(
            backend, "RetrieveSecret", "osha{sv}", ("/org/freedesktop/portal/desktop/request/1_1/t", "org.example.First", write_end, {})))
        os.close(write_end)
        print(reply.header.message_type.name, reply.body[0] if reply.body else "", os.read(read_end, 4096).hex())
        """

    /// Starts xdg-desktop-portal on the rig's bus, with keychaind's `.portal` file as its only backend.
    func startPortal(_ rig: SecretServiceRig) throws -> Process {
        let portals = rig.root + "/portals"
        try FileManager.default.createDirectory(atPath: portals, withIntermediateDirectories: true)
        let installed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/portal/keychain.portal")
        try FileManager.default.copyItem(atPath: installed.path, toPath: portals + "/keychain.portal")
        let runtime = rig.root + "/portal-run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: xdgDesktopPortal)
        process.arguments = ["--replace"]
        process.environment = rig.environment.merging(
            ["XDG_DESKTOP_PORTAL_DIR": portals, "XDG_CURRENT_DESKTOP": "keychain-test", "XDG_RUNTIME_DIR": runtime]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Waits for the name's owner to change, after subscribing, rather than polling.
        let client = try rig.python(
            """
            from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
            from jeepney.io.blocking import open_dbus_connection, Proxy
            connection = open_dbus_connection(bus="SESSION")
            bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
            rule = MatchRule(type="signal", sender="org.freedesktop.DBus", interface="org.freedesktop.DBus",
                             member="NameOwnerChanged", path="/org/freedesktop/DBus")
            rule.add_arg_condition(0, "org.freedesktop.portal.Desktop")
            Proxy(message_bus, connection).AddMatch(rule)
            with connection.filter(rule) as changes:
                if not connection.send_and_get_reply(new_method_call(bus, "NameHasOwner", "s", ("org.freedesktop.portal.Desktop",))).body[0]:
                    connection.recv_until_filtered(changes, timeout=20)
            print("up")
            """)
        guard client.stdout == "up\n" else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestProcessError("xdg-desktop-portal did not take org.freedesktop.portal.Desktop: \(client.stdout)\(client.stderr)")
        }
        return process
    }

    /// Runs the client in a bubblewrap sandbox whose `/.flatpak-info` names `appID`, as Flatpak's does.
    func runSandboxed(_ rig: SecretServiceRig, appID: String) throws -> ProgramRun {
        let info = rig.root + "/flatpak-info-\(appID)"
        try "[Application]\nname=\(appID)\nruntime=runtime/org.example.Platform/x86_64/1\n".write(toFile: info, atomically: true, encoding: .utf8)
        let script = rig.root + "/portal-client.py"
        try Self.client.write(toFile: script, atomically: true, encoding: .utf8)
        var arguments = [
            "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--bind", "/tmp", "/tmp", "--proc", "/proc", "--dev", "/dev",
            "--ro-bind", info, "/.flatpak-info",
        ]
        for link in ["bin", "lib", "lib64", "sbin"] where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/" + link)) != nil {
            arguments += ["--symlink", "usr/" + link, "/" + link]
        }
        arguments += [SecretServiceRig.python, script]
        return try rig.run("/usr/bin/bwrap", arguments, timeout: 60)
    }

    @Test("each sandboxed application gets a secret of its own, the same each time; only the portal may ask keychaind")
    func perApplicationSecrets() async throws {
        try await onThread {
            let rig = try SecretServiceRig(policy: "allow", activating: false)
            let portal = try startPortal(rig)
            defer {
                // xdg-desktop-portal started this way does not stop on SIGTERM.
                kill(portal.processIdentifier, SIGKILL)
                portal.waitUntilExit()
            }
            let first = try runSandboxed(rig, appID: "org.example.First")
            let fields = first.stdout.split(separator: " ").map(String.init)
            #expect(first.status == 0 && fields.count == 2 && fields[0] == "0", "\(first.stdout)\(first.stderr)")
            let secret = fields.count == 2 ? fields[1].trimmingCharacters(in: .whitespacesAndNewlines) : ""
            #expect(secret.count == 128, "64 bytes: \(secret)")
            let again = try runSandboxed(rig, appID: "org.example.First")
            #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0 \(secret)", "the same secret: \(again.stdout)\(again.stderr)")
            let second = try runSandboxed(rig, appID: "org.example.Second")
            #expect(second.stdout.hasPrefix("0 ") && !second.stdout.contains(secret), "another application, another secret: \(second.stdout)\(second.stderr)")

            // Any other program of the user naming an application gets nothing.
            let impostor = try rig.python(Self.impostor)
            #expect(impostor.stdout.hasPrefix("error "), "\(impostor.stdout)\(impostor.stderr)")
            #expect(!impostor.stdout.contains(secret))
            #expect(impostor.stdout.contains("Only xdg-desktop-portal"), "\(impostor.stdout)")
            // The secret is the application's item, in its own access group.
            let dump = try rig.run(try BuiltProducts.path(of: "security"), ["dump-keychain"])
            #expect(dump.stdout.contains("org.example.First") && dump.stdout.contains("org.freedesktop.portal.Secret"), "\(dump.stdout)")
            #expect(!FileManager.default.fileExists(atPath: NSHomeDirectory() + "/.cache/doc"), "no document portal was started")
        }
    }
}
