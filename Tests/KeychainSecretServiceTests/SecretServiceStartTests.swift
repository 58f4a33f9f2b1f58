import Foundation
import KeychainDBus
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Starting for real: D-Bus activation by the first client, and the refusal to start beside another provider.
@Suite("Secret Service start", .serialized, .enabled(if: SecretServiceRig.isAvailable, "needs dbus-daemon and secret-tool"))
struct SecretServiceStartTests {
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/ss-start-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("The first client's call starts keychaind through the bus's activation file")
    func activation() async throws {
        try await onThread {
            let root = try Self.folder()
            defer { try? FileManager.default.removeItem(atPath: root) }
            let services = root + "/services"
            try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
            let keychaind = try BuiltProducts.path(of: "keychaind")
            // Our activation file as installed, with keychaind started by the bus instead of by systemd.
            let installed = try String(
                contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../Support/dbus/org.freedesktop.secrets.service").standardized.path, encoding: .utf8)
            #expect(installed.contains("Name=org.freedesktop.secrets"))
            #expect(installed.contains("SystemdService=keychaind.service"))
            let file = installed.replacingOccurrences(of: "Exec=/bin/false", with: "Exec=\(keychaind) --foreground --socket \(root)/d.sock --secret-service")
                .replacingOccurrences(of: "SystemdService=keychaind.service\n", with: "")
            try Data(file.utf8).write(to: URL(fileURLWithPath: services + "/org.freedesktop.secrets.service"))
            let bus = try PrivateSessionBus(
                serviceDirectory: services,
                environment: [
                    "KEYCHAIN_HOME": root + "/keychain", "HOME": root, "KEYCHAIN_SECRET_SERVICE_UNREGISTERED": "allow",
                ])
            let client = try DBusConnection(address: bus.address)
            #expect(throws: DBusError.remote(name: "org.freedesktop.DBus.Error.NameHasNoOwner", message: "Could not get owner of name 'org.freedesktop.secrets': no such name")) {
                try client.nameOwner(of: "org.freedesktop.secrets")
            }
            let env = ["DBUS_SESSION_BUS_ADDRESS": bus.address, "HOME": root, "PATH": "/usr/bin:/bin"]
            let stored = try ProgramRun.run(
                "/usr/bin/secret-tool", ["store", "--label=first", "activated", "yes"], environment: env,
                input: Data("by activation".utf8), scratch: root)
            #expect(stored.status == 0, "\(stored.stderr)")
            let owner = try client.nameOwner(of: "org.freedesktop.secrets")
            let pid = try #require(
                try client.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "GetConnectionUnixProcessID", [.string(owner)]
                ).first?.uint32)
            defer { kill(pid_t(pid), SIGTERM) }
            #expect(try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8).hasPrefix("keychaind"))
            #expect(try ProgramRun.run("/usr/bin/secret-tool", ["lookup", "activated", "yes"], environment: env, scratch: root).stdout == "by activation")
            #expect(FileManager.default.fileExists(atPath: root + "/keychain/keychain-2.db"))
        }
    }

    @Test("When its session bus dies, keychaind's Secret Service ends within 2 s, taking keychaind with it, and says why")
    func endsWithTheSessionBus() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bus = try PrivateSessionBus()
        let env = [
            "KEYCHAIN_HOME": root + "/keychain", "HOME": root, "PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": bus.address,
        ]
        let daemon = try KeychaindProcess(
            socketPath: root + "/d.sock", environment: env, arguments: ["--secret-service", "--log-level", "info"])
        #expect(daemon.waitForOutput(containing: "serving the Secret Service"), "\(daemon.output)")
        bus.kill()
        #expect(daemon.waitForExit(timeout: .seconds(2)) == 0, "\(daemon.output)")
        #expect(daemon.output.contains("the session bus closed; keychaind stops"), "\(daemon.output)")
    }

    @Test("keychaind refuses to start beside another provider (status 3), and replaces one that allows it when told to")
    func anotherProvider() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bus = try PrivateSessionBus()
        let env = ["KEYCHAIN_HOME": root + "/keychain", "HOME": root, "PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": bus.address]
        let keychaind = try BuiltProducts.path(of: "keychaind")
        // Another provider that does not allow replacement.
        let other = try DBusServerConnection(address: bus.address)
        #expect(try await other.requestName("org.freedesktop.secrets", allowReplacement: false) == .primaryOwner)
        for arguments in [["--secret-service"], ["--secret-service-replace"]] {
            let refused = try ProgramRun.run(keychaind, ["--foreground", "--socket", root + "/d.sock"] + arguments, environment: env, scratch: root)
            #expect(refused.status == 3, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("Another Secret Service provider"))
            #expect(refused.stderr.contains("--secret-service-replace"))
        }
        other.close()
        // The bus frees the name when it has read the hang-up, which may come after a new connection's request: wait.
        let client = try DBusConnection(address: bus.address)
        let freed = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < freed, (try? client.nameOwner(of: "org.freedesktop.secrets")) != nil { usleep(20_000) }
        #expect(throws: DBusError.remote(name: "org.freedesktop.DBus.Error.NameHasNoOwner", message: "Could not get owner of name 'org.freedesktop.secrets': no such name")) {
            try client.nameOwner(of: "org.freedesktop.secrets")
        }
        // One that allows replacement (as gnome-keyring does) is replaced with --secret-service-replace.
        let yielding = try DBusServerConnection(address: bus.address)
        #expect(try await yielding.requestName("org.freedesktop.secrets", allowReplacement: true) == .primaryOwner)
        let daemon = try KeychaindProcess(socketPath: root + "/d.sock", environment: env, arguments: ["--secret-service-replace"])
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, (try? client.nameOwner(of: "org.freedesktop.secrets")) == yielding.uniqueName { usleep(20_000) }
        #expect(try client.nameOwner(of: "org.freedesktop.secrets") != yielding.uniqueName)
        #expect(daemon.process.isRunning)
        daemon.stop()
        yielding.close()
    }
}
