import Foundation
import KeychainDBus
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real gnome-keyring on a private bus, in its own HOME: the login keyring made unlocked with a password given
/// on standard input (`--unlock`), and a second keyring, "Work", in gnome-keyring's plain-text format, which it
/// loads locked and unlocks without a prompt (so the import's Unlock is exercised). Filled by Python's secretstorage.
final class GnomeKeyringSource: @unchecked Sendable {
    static let daemon = "/usr/bin/gnome-keyring-daemon"
    static var isAvailable: Bool {
        PrivateSessionBus.isAvailable && FileManager.default.isExecutableFile(atPath: daemon) && SecretServiceRig.hasSecretStorage
    }

    let bus: PrivateSessionBus
    let root: String
    private var process: Process
    private let loginPassword: String?

    /// The Work keyring: one item, its dates fixed in the file (2020-09-13 12:26:40 UTC and a bit after).
    static let workKeyring = """
        [keyring]
        display-name=Work
        ctime=1600000000
        mtime=1600000100
        lock-on-idle=false
        lock-after=false

        [1]
        item-type=0
        display-name=Work VPN
        secret=vpn-secret
        mtime=1600000300
        ctime=1600000200

        [1:attribute0]
        name=service
        type=string
        value=vpn

        [1:attribute1]
        name=user
        type=string
        value=bob

        """

    /// With `loginPassword` nil, no login keyring: the default one is "Plain", a keyring without a password in
    /// the plain-text format (gnome-keyring's keyring with no password), empty, and nothing is filled in.
    init(loginPassword: String? = "login-password") throws {
        bus = try PrivateSessionBus()
        root = FileManager.default.temporaryDirectory.path + "/ss-import-" + UUID().uuidString.prefix(8)
        let keyrings = root + "/home/.local/share/keyrings"
        try FileManager.default.createDirectory(
            atPath: keyrings, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(
            atPath: root + "/run", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try Data(Self.workKeyring.utf8).write(to: URL(fileURLWithPath: keyrings + "/work.keyring"))
        if loginPassword == nil {
            try Data("[keyring]\ndisplay-name=Plain\nctime=1600000000\nmtime=1600000000\nlock-on-idle=false\nlock-after=false\n".utf8)
                .write(to: URL(fileURLWithPath: keyrings + "/plain.keyring"))
            try Data("plain".utf8).write(to: URL(fileURLWithPath: keyrings + "/default"))
        }
        self.loginPassword = loginPassword
        process = try Self.launch(environment: Self.environment(root: root, address: bus.address), loginPassword: loginPassword, bus: bus)
        guard loginPassword != nil else { return }
        // The login keyring appears once the password is read.
        let filled = try python(Self.fill)
        guard filled.status == 0 else { throw TestProcessError("filling gnome-keyring failed: \(filled.stderr)") }
    }

    /// Starts gnome-keyring-daemon and waits until it owns the Secret Service's name.
    private static func launch(environment: [String: String], loginPassword: String?, bus: PrivateSessionBus) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.daemon)
        process.arguments = ["--foreground", "--components=secrets"] + (loginPassword == nil ? [] : ["--unlock"])
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        if let loginPassword { input.fileHandleForWriting.write(Data(loginPassword.utf8)) }
        try input.fileHandleForWriting.close()
        let client = try DBusConnection(address: bus.address)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? client.nameOwner(of: "org.freedesktop.secrets")) == nil {
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw TestProcessError("gnome-keyring-daemon did not take org.freedesktop.secrets")
            }
            usleep(20_000)
        }
        return process
    }

    /// Stops gnome-keyring and starts it again: everything it serves is then read from its files.
    func restart() throws {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let client = try DBusConnection(address: bus.address)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? client.nameOwner(of: "org.freedesktop.secrets")) != nil, ContinuousClock.now < deadline { usleep(20_000) }
        process = try Self.launch(environment: environment, loginPassword: loginPassword, bus: bus)
    }

    deinit {
        // SIGKILL: gnome-keyring-daemon inherits the test runner's blocked SIGTERM and would not stop on it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: root)
    }

    var environment: [String: String] { Self.environment(root: root, address: bus.address) }

    static func environment(root: String, address: String) -> [String: String] {
        [
            "HOME": root + "/home", "XDG_DATA_HOME": root + "/home/.local/share", "XDG_CONFIG_HOME": root + "/home/.config",
            "XDG_CACHE_HOME": root + "/home/.cache", "XDG_RUNTIME_DIR": root + "/run", "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8", "DBUS_SESSION_BUS_ADDRESS": address,
        ]
    }

    /// Runs a Python program with the environment of the bus at `address` (gnome-keyring's by default).
    func python(_ program: String, address: String? = nil) throws -> ProgramRun {
        let path = root + "/script-\(UUID().uuidString.prefix(6)).py"
        try Data(program.utf8).write(to: URL(fileURLWithPath: path))
        var env = environment
        if let address { env["DBUS_SESSION_BUS_ADDRESS"] = address }
        return try ProgramRun.run(SecretServiceRig.python, [path], environment: env, scratch: root)
    }

    /// Three items in the login keyring: text, binary with its own content type, and a Unicode label and values.
    static let fill = """
        import time, secretstorage
        c = secretstorage.dbus_init()
        deadline = time.time() + 10
        while True:
            d = secretstorage.get_default_collection(c)
            if d.collection_path.endswith("/login") or time.time() > deadline: break
            time.sleep(0.1)
        d.create_item("Mail", {"service": "mail", "user": "alice"}, b"s3cret", content_type="text/plain")
        d.create_item("Binary", {"service": "bin"}, bytes(range(256)), content_type="application/octet-stream")
        d.create_item("Café ☕", {"service": "café", "user": "zoë"}, "naïve".encode(), content_type="text/plain")
        """

    /// Prints, as JSON sorted by collection label, every collection with items: its items' labels, attributes,
    /// secrets (hex), content types and dates. Locked collections are unlocked first (no prompt expected).
    static let dump = """
        import json, secretstorage
        from secretstorage.util import DBusAddressWrapper
        c = secretstorage.dbus_init()
        out = {}
        for col in secretstorage.get_all_collections(c):
            if col.is_locked():
                col.unlock()
            items = []
            for it in col.get_all_items():
                items.append({"label": it.get_label(), "attributes": it.get_attributes(), "secret": it.get_secret().hex(),
                              "type": it.get_secret_content_type(), "created": it.get_created(), "modified": it.get_modified()})
            if items:
                out[col.get_label()] = sorted(items, key=lambda i: i["label"])
        print(json.dumps(out, sort_keys=True))
        """
}

@Suite(
    "security import-secret-service", .serialized,
    .enabled(if: GnomeKeyringSource.isAvailable, "needs dbus-daemon, gnome-keyring-daemon and python3-secretstorage"))
struct SecretServiceImportTests {
    /// A fresh keychain folder, and the environment of `security` reading the bus at `address`, in this process
    /// (no keychaind socket) or through keychaind at `socket`.
    static func toolEnvironment(home: String, address: String?, socket: String?) -> [String: String] {
        var env = [
            "KEYCHAIN_HOME": home + "/keychain", "HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "XDG_RUNTIME_DIR": home + "/run",
        ]
        if let address { env["DBUS_SESSION_BUS_ADDRESS"] = address }
        // In this process: `off`, or the tool would start a keychaind of its own for the keychain.
        env["KEYCHAIN_DAEMON_SOCKET"] = socket ?? "off"
        return env
    }

    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/ss-import-kc-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }

    static func security(_ arguments: [String], environment: [String: String], scratch: String) throws -> ProgramRun {
        try ProgramRun.run(try BuiltProducts.path(of: "security"), arguments, environment: environment, scratch: scratch)
    }

    /// Imports from gnome-keyring twice (the second run adds nothing), then reads the keychain back through
    /// keychaind's own Secret Service on another bus and compares everything with what gnome-keyring serves.
    func importAndCompare(throughKeychaind: Bool) throws {
        let source = try GnomeKeyringSource()
        let home = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let ours = try PrivateSessionBus()
        var daemon: KeychaindProcess?
        var env = Self.toolEnvironment(home: home, address: source.bus.address, socket: throughKeychaind ? home + "/d.sock" : nil)
        if throughKeychaind {
            // One keychaind serving the keychain over its socket and its Secret Service on another bus: what the
            // import adds through the socket is seen by its provider at once.
            var daemonEnv = env
            daemonEnv["DBUS_SESSION_BUS_ADDRESS"] = ours.address
            daemonEnv["KEYCHAIN_SECRET_SERVICE_UNREGISTERED"] = "allow"
            // The person at the machine approves the import and the dump of other programs' secrets.
            daemonEnv.merge(try ApprovingPerson(in: home + "/person").environment) { $1 }
            daemon = try KeychaindProcess(socketPath: home + "/d.sock", environment: daemonEnv, arguments: ["--secret-service"])
        }
        defer { _ = daemon?.stop() }

        let first = try Self.security(["import-secret-service"], environment: env, scratch: home)
        #expect(first.stdout == "imported 4 items from 2 collections (0 already present)\n")
        #expect(first.stderr == "")
        #expect(first.status == 0)
        // Read after the import, which unlocked Work (gnome-keyring loads it locked): the three login items and
        // Work's, its dates from the keyring file.
        let expected = try source.python(GnomeKeyringSource.dump)
        try #require(expected.status == 0, "\(expected.stderr)")
        #expect(expected.stdout.contains("\"Work VPN\""))
        #expect(expected.stdout.contains("\"created\": 1600000200"))
        #expect(expected.stdout.contains("\"modified\": 1600000300"))
        let second = try Self.security(["import-secret-service"], environment: env, scratch: home)
        #expect(second.stdout == "imported 0 items from 2 collections (4 already present)\n")
        #expect(second.stderr == "")
        #expect(second.status == 0)

        if daemon == nil {
            var daemonEnv = env
            daemonEnv["DBUS_SESSION_BUS_ADDRESS"] = ours.address
            daemonEnv["KEYCHAIN_SECRET_SERVICE_UNREGISTERED"] = "allow"
            daemonEnv.merge(try ApprovingPerson(in: home + "/person").environment) { $1 }
            daemon = try KeychaindProcess(socketPath: home + "/d.sock", environment: daemonEnv, arguments: ["--secret-service"])
            env["KEYCHAIN_DAEMON_SOCKET"] = home + "/d.sock"
        }
        let client = try DBusConnection(address: ours.address)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? client.nameOwner(of: "org.freedesktop.secrets")) == nil, ContinuousClock.now < deadline { usleep(20_000) }
        let actual = try source.python(GnomeKeyringSource.dump, address: ours.address)
        try #require(actual.status == 0, "\(actual.stderr)")
        #expect(actual.stdout == expected.stdout)

        // The secrets are items of the keychain like any other: dump-keychain shows them.
        let dumped = try Self.security(["dump-keychain", "-d"], environment: env, scratch: home)
        #expect(dumped.status == 0)
        #expect(dumped.stdout.contains("\"svce\"<blob>=\"secret-service:login\""))
        #expect(dumped.stdout.contains("\"svce\"<blob>=\"secret-service:work\""))
        #expect(dumped.stdout.contains("\"vpn-secret\""))
    }

    @Test("Imports every collection in this process, keeping labels, attributes, secrets, content types and dates; a second run adds nothing")
    func inProcess() async throws {
        try await onThread {
            try importAndCompare(throughKeychaind: false)
        }
    }

    @Test("Imports through keychaind (an admin-only request), and keychaind's provider sees the new collection at once")
    func throughKeychaind() async throws {
        try await onThread {
            try importAndCompare(throughKeychaind: true)
        }
    }

    @Test("With no provider on the bus: a clear error and status 1; without a bus address: another")
    func noProvider() async throws {
        try await onThread {
            let home = try Self.folder()
            defer { try? FileManager.default.removeItem(atPath: home) }
            let bus = try PrivateSessionBus()
            let run = try Self.security(["import-secret-service"], environment: Self.toolEnvironment(home: home, address: bus.address, socket: nil), scratch: home)
            #expect(run.status == 1)
            #expect(run.stdout == "")
            #expect(
                run.stderr
                    == "security: import-secret-service: No Secret Service provider runs on the session bus (nobody owns org.freedesktop.secrets). Start the one to import from (gnome-keyring-daemon, KeePassXC with its Secret Service integration on), then run the import again.\n"
            )

            let unset = try Self.security(["import-secret-service"], environment: Self.toolEnvironment(home: home, address: nil, socket: nil), scratch: home)
            #expect(unset.status == 1)
            #expect(
                unset.stderr
                    == "security: import-secret-service: The session bus is not known: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist. Run the import from your desktop session, or set DBUS_SESSION_BUS_ADDRESS to the bus of the provider to import from.\n"
            )
        }
    }

    @Test("keychaind's own Secret Service is refused as a source")
    func refusesKeychaind() async throws {
        try await onThread {
            let rig = try SecretServiceRig()
            let run = try rig.security(["import-secret-service"])
            #expect(run.status == 1)
            #expect(run.stdout == "")
            #expect(run.stderr.hasPrefix("security: import-secret-service: The Secret Service on the session bus is keychaind (PID "))
            #expect(
                run.stderr.hasSuffix(
                    "), which serves a keychain already: there is nothing to import from it. Stop it and start the provider to import from (gnome-keyring-daemon, KeePassXC), run the import, then start keychaind --secret-service again.\n"
                ))
        }
    }
}
