import Foundation
import KeychainCore
import KeychainDBus
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real Secret Service for one test: a private session bus (dbus-daemon), and keychaind serving a fresh keychain
/// with `--secret-service` on it; prompts answered by the scripted pinentry (Tests/ScriptedPinentry) from this rig's
/// script. Clients are real programs (`secret-tool`, Python's `secretstorage`, `busctl`) run with ``run(_:_:input:)``.
final class SecretServiceRig: @unchecked Sendable {
    let bus: PrivateSessionBus
    let root: String
    var home: String { root + "/keychain" }
    var socket: String { root + "/d.sock" }
    private(set) var daemon: KeychaindProcess?
    let policy: String
    var script: String { root + "/pinentry-script" }
    var pinentryLog: String { root + "/pinentry-log" }

    /// Whether this machine has what the rig needs.
    static var isAvailable: Bool {
        PrivateSessionBus.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/secret-tool")
    }
    static let python = "/usr/bin/python3"
    /// Whether Python's secretstorage is installed (Debian's python3-secretstorage).
    static var hasSecretStorage: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/secretstorage/__init__.py")
    }

    /// Starts the bus and keychaind with `policy` for programs that are not registered. With `activating` false the
    /// bus starts no service of the system's on demand (xdg-desktop-portal would have it start the document portal,
    /// which mounts a FUSE file system in the home folder and leaves it dead when the bus goes).
    init(policy: String = "allow", activating: Bool = true) throws {
        root = FileManager.default.temporaryDirectory.path + "/secret-service-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: root + "/bus-services", withIntermediateDirectories: true)
        bus = activating ? try PrivateSessionBus() : try PrivateSessionBus(serviceDirectory: root + "/bus-services")
        self.policy = policy
        let wrapper = root + "/pinentry"
        try writeExecutable(
            Data(
                """
                #!/bin/sh
                SCRIPTED_PINENTRY_SCRIPT='\(script)' SCRIPTED_PINENTRY_LOG='\(pinentryLog)' SCRIPTED_PINENTRY_DEFAULT='\(root)/person' exec '\(try BuiltProducts.path(of: "scripted-pinentry"))'

                """.utf8), to: wrapper)
        try KeychainSettings(pinentryProgram: wrapper, promptTimeout: 20).save(KeychainLocation(home: home))
        try start()
    }

    deinit {
        daemon?.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The environment of keychaind and of every client.
    /// (An empty `policy` leaves `KEYCHAIN_SECRET_SERVICE_UNREGISTERED` unset: the keychain's settings decide.)
    var environment: [String: String] {
        var env = [
            "KEYCHAIN_HOME": home, "HOME": root, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "DBUS_SESSION_BUS_ADDRESS": bus.address, "KEYCHAIN_DAEMON_SOCKET": socket,
        ]
        if !policy.isEmpty { env["KEYCHAIN_SECRET_SERVICE_UNREGISTERED"] = policy }
        return env
    }

    /// Starts keychaind and waits until it owns org.freedesktop.secrets.
    func start() throws {
        daemon = try KeychaindProcess(socketPath: socket, environment: environment, arguments: ["--secret-service", "--log-level", "debug"])
        let client = try DBusConnection(address: bus.address)
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if (try? client.nameOwner(of: "org.freedesktop.secrets")) != nil { return }
            usleep(20_000)
        }
        throw TestProcessError("keychaind did not take org.freedesktop.secrets:\n\(daemon?.output ?? "")")
    }

    /// Stops keychaind (SIGTERM) and starts it again on the same keychain.
    func restart() throws {
        daemon?.stop()
        daemon = nil
        try start()
    }

    /// Runs `executable` with the rig's environment (and `extraEnvironment` over it).
    func run(
        _ executable: String, _ arguments: [String], input: String? = nil, timeout: TimeInterval = 60, extraEnvironment: [String: String] = [:]
    ) throws -> ProgramRun {
        try ProgramRun.run(
            executable, arguments, environment: environment.merging(extraEnvironment) { $1 }, input: input.map { Data($0.utf8) }, scratch: root,
            timeout: timeout)
    }

    /// Runs `security`.
    /// Runs the security tool against the rig's keychaind, with the person at the machine approving what keychaind
    /// asks them meanwhile (registering a program, a setting, another program's item); the queued answers of
    /// ``queuePrompts(_:)`` still come first.
    func security(_ arguments: [String]) throws -> ProgramRun {
        let person = root + "/person"
        try "confirm\n".write(toFile: person, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: person) }
        return try run(try BuiltProducts.path(of: "security"), arguments)
    }

    /// Runs a Python program (given as text) with `/usr/bin/python3` or another interpreter.
    func python(
        _ program: String, interpreter: String = SecretServiceRig.python, arguments: [String] = [], extraEnvironment: [String: String] = [:]
    ) throws -> ProgramRun {
        let path = root + "/client-\(UUID().uuidString.prefix(6)).py"
        try Data(program.utf8).write(to: URL(fileURLWithPath: path))
        return try run(interpreter, [path] + arguments, extraEnvironment: extraEnvironment)
    }

    /// Queues answers of the scripted pinentry, one line per prompt to come.
    func queuePrompts(_ lines: String...) throws {
        let old = (try? String(contentsOfFile: script, encoding: .utf8)) ?? ""
        try (old + lines.map { $0 + "\n" }.joined()).write(toFile: script, atomically: true, encoding: .utf8)
    }

    /// How many pinentries were started.
    var promptsShown: Int {
        ((try? String(contentsOfFile: pinentryLog, encoding: .utf8)) ?? "").components(separatedBy: "\n").filter { $0.hasPrefix("--- start") }.count
    }

    /// A copy of the Python interpreter at `name` under the rig's folder: another program, as keychaind identifies
    /// programs (by executable path and contents).
    func pythonCopy(_ name: String) throws -> String {
        let path = root + "/" + name
        try copyExecutable(from: URL(fileURLWithPath: Self.python).resolvingSymlinksInPath().path, to: path)
        return path
    }
}

/// The Python source of the client script next to this file.
func clientScript() throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/secretstorage_client.py")
    return try String(contentsOf: url, encoding: .utf8)
}
