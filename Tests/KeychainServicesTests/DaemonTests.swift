import Foundation
import Testing
import KeychainServices
import KeychainClient
import KeychainCore

#if canImport(Glibc)
import Glibc
import KeychainTestSupport
#endif

/// A folder with a keychain, an in-process engine for setting it up and checking it afterwards, and helpers to
/// run programs against a keychaind serving it.
final class DaemonFixture: @unchecked Sendable {
    let folder: String
    let home: String
    private var opened: KeychainEngine?

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kd-test-\(UUID().uuidString.prefix(8))").path
        home = folder + "/home"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// The keychain opened in this process (on first use, so a test can let the daemon be its only user).
    var engine: KeychainEngine {
        get throws {
            if let opened { return opened }
            let engine = try KeychainEngine(location: KeychainLocation(home: home))
            opened = engine
            return engine
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// A copy of the test helper at `folder/name`, made a different program by a trailing marker (an ELF file
    /// runs the same with bytes appended, but hashes differently).
    func program(_ name: String) throws -> String {
        let path = folder + "/" + name
        var bytes = try Data(contentsOf: productsDirectory().appendingPathComponent("keychain-test-helper"))
        bytes.append(Data("\n\(name)\n".utf8))
        try writeExecutable(bytes, to: path)
        return path
    }

    func environment(_ daemon: DaemonProcess, entitlements: [String: Any]? = nil) throws -> [String: String] {
        var env = baseEnvironment(home: home)
        env["KEYCHAIN_DAEMON_SOCKET"] = daemon.socketPath
        if let entitlements {
            let path = folder + "/entitlements-\(UUID().uuidString.prefix(6)).plist"
            try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0).write(to: URL(fileURLWithPath: path))
            env["KEYCHAIN_ENTITLEMENTS"] = path
        }
        return env
    }

    /// Every generic password in `group`, as account → secret, read in-process (not through the daemon).
    func items(in group: String) throws -> [String: String] {
        let engine = try self.engine
        let query: [String: PlistValue] = [
            "class": .string("genp"), "m_Limit": .string("m_LimitAll"), "r_Attributes": .bool(true), "r_Data": .bool(true),
        ]
        let found: Result<PlistValue?, KeychainCore.KeychainError> = Result { () throws(KeychainCore.KeychainError) in
            try InProcessKeychain(engine: engine, caller: AccessPolicy(groups: [group])).secItemCopyMatching(query)
        }
        if case .failure(let error) = found, error.code == .itemNotFound { return [:] }
        guard case .array(let list)? = try found.get() else { return [:] }
        var out: [String: String] = [:]
        for case .dictionary(let d) in list {
            guard case .string(let account)? = d["acct"] else { continue }
            if case .data(let v)? = d["v_Data"] { out[account] = String(decoding: v, as: UTF8.self) } else { out[account] = "" }
        }
        return out
    }
}

extension DaemonFixture {
    /// Registers `program` for `group`, and stores there, in this process, the generic password (x, svc) holding
    /// `secret`.
    func registeredItem(of program: AppRegistration.Program, group: String, secret: String) throws {
        try engine.updateAppRegistry { $0.register(AppRegistration(program: program, applicationIdentifier: nil, accessGroups: [group])) }
        _ = try InProcessKeychain(engine: engine, caller: AccessPolicy(groups: [group]))
            .secItemAdd(["class": .string("genp"), "acct": .string("x"), "svce": .string("svc"), "v_Data": .data(Data(secret.utf8))])
    }

    /// A program `victim` registered for TEAM.victim, a keychaind, and the victim's item (x, svc) holding `secret-v`,
    /// stored through that keychaind.
    func servedVictim() throws -> (app: String, daemon: DaemonProcess, environment: [String: String]) {
        let app = try program("victim")
        try registerProgram(engine, path: app, groups: ["TEAM.victim"])
        let daemon = try DaemonProcess(home: home)
        let env = try environment(daemon)
        #expect(try runProgram(app, ["add", "x", "svc", "secret-v"], environment: env).stdout == "status=0\n")
        return (app, daemon, env)
    }
}

@Suite struct DaemonIdentityTests {
    @Test func registeredProgramsSeeTheirGroupsAndOnlyThose() throws {
        let f = try DaemonFixture()
        let appA = try f.program("app-a"), appB = try f.program("app-b")
        try registerProgram(f.engine, path: appA, groups: ["TEAM.a", "TEAM.shared"])
        try registerProgram(f.engine, path: appB, groups: ["TEAM.b", "TEAM.shared"])
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)

        // A's first group is its default; it can also write to the shared group.
        #expect(try runProgram(appA, ["add", "x", "svc", "secret-a"], environment: env).stdout == "status=0\n")
        #expect(try runProgram(appA, ["add", "shared", "svc", "secret-s", "TEAM.shared"], environment: env).stdout == "status=0\n")
        #expect(try runProgram(appA, ["find", "x", "svc"], environment: env).stdout == "status=0\ndata=secret-a\nagrp=TEAM.a\n")
        // B cannot see A's item, nor name A's group; it shares the shared group.
        #expect(try runProgram(appB, ["find", "x", "svc"], environment: env).stdout == "status=-25300\n")
        #expect(try runProgram(appB, ["find", "x", "svc", "TEAM.a"], environment: env).stdout == "status=-34018\n")
        #expect(try runProgram(appB, ["add", "y", "svc", "z", "TEAM.a"], environment: env).stdout == "status=-34018\n")
        #expect(try runProgram(appB, ["find", "shared", "svc"], environment: env).stdout == "status=0\ndata=secret-s\nagrp=TEAM.shared\n")

        // An unregistered program gets a private group of its own (its path), and nothing else.
        let stranger = try f.program("stranger")
        #expect(try runProgram(stranger, ["add", "u", "svc", "secret-u"], environment: env).stdout == "status=0\n")
        #expect(try runProgram(stranger, ["find", "u", "svc"], environment: env).stdout == "status=0\ndata=secret-u\nagrp=\(stranger)\n")
        #expect(try runProgram(stranger, ["find", "shared", "svc"], environment: env).stdout == "status=-25300\n")
        #expect(try runProgram(stranger, ["find", "shared", "svc", "TEAM.shared"], environment: env).stdout == "status=-34018\n")
        #expect(try runProgram(appA, ["find", "u", "svc", stranger], environment: env).stdout == "status=-34018\n")
        #expect(daemon.stop() == 0)
        #expect(try f.items(in: stranger) == ["u": "secret-u"])
    }

    /// A child after `fork` makes its own connection to keychaind (which closes a connection that another process
    /// sends on), and the parent's pooled connection stays its own.
    @Test func aForkedChildMakesItsOwnConnectionAndTheParentKeepsItsOwn() throws {
        let f = try DaemonFixture()
        let app = try f.program("forker")
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        #expect(try runProgram(app, ["add", "x", "svc", "secret"], environment: env).stdout == "status=0\n")
        let run = try runProgram(app, ["fork-find", "x", "svc"], environment: env)
        #expect(run.stdout == "parent=0\nchild=0\nparent-after=0\n", "\(run.stdout)\(run.stderr)")
        #expect(!daemon.output.contains("sent on a connection that belongs to process"), "no process sent on another's connection")
        #expect(daemon.stop() == 0)
    }

    /// KeychainKit goes through keychaind whenever it runs, so the daemon's access-group decisions apply to
    /// Swift-native callers too: each program sees only its own group's items.
    @Test func keychainKitCallersSeeOnlyTheirOwnGroupThroughKeychaind() throws {
        let f = try DaemonFixture()
        let appA = try f.program("kit-a"), appB = try f.program("kit-b")
        try registerProgram(f.engine, path: appA, groups: ["TEAM.a"])
        try registerProgram(f.engine, path: appB, groups: ["TEAM.b"])
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        #expect(try runProgram(appA, ["kit-set", "token", "secret-a"], environment: env).stdout == "ok\n")
        #expect(try runProgram(appA, ["kit-set", "only-a", "1"], environment: env).stdout == "ok\n")
        #expect(try runProgram(appB, ["kit-set", "token", "secret-b"], environment: env).stdout == "ok\n")
        #expect(try runProgram(appA, ["kit-keys"], environment: env).stdout == "only-a,token\n")
        #expect(try runProgram(appB, ["kit-keys"], environment: env).stdout == "token\n")
        #expect(try runProgram(appA, ["kit-get", "token"], environment: env).stdout == "value=secret-a\n")
        #expect(try runProgram(appB, ["kit-get", "token"], environment: env).stdout == "value=secret-b\n")
        #expect(try runProgram(appB, ["kit-get", "only-a"], environment: env).stdout == "none\n")
        #expect(daemon.stop() == 0)
        // The daemon put each program's items in its registered group.
        #expect(try f.items(in: "TEAM.a") == ["token": "secret-a", "only-a": "1"])
        #expect(try f.items(in: "TEAM.b") == ["token": "secret-b"])
    }

    @Test func aClaimBeyondTheRegistrationIsRefused() throws {
        let f = try DaemonFixture()
        let appA = try f.program("app-a"), appB = try f.program("app-b")
        try registerProgram(f.engine, path: appA, groups: ["TEAM.a"], applicationIdentifier: "TEAM.com.example.a")
        try registerProgram(f.engine, path: appB, groups: ["TEAM.b"])
        let daemon = try DaemonProcess(home: f.home)
        #expect(try runProgram(appA, ["add", "x", "svc", "secret-a"], environment: f.environment(daemon)).stdout == "status=0\n")

        // B's entitlements file claims A's group: every call is refused, whatever else it claims.
        let spoofed = try f.environment(daemon, entitlements: ["keychain-access-groups": ["TEAM.b", "TEAM.a"]])
        #expect(try runProgram(appB, ["find", "x", "svc", "TEAM.a"], environment: spoofed).stdout == "status=-34018\n")
        #expect(try runProgram(appB, ["add", "y", "svc", "z"], environment: spoofed).stdout == "status=-34018\n")
        // A claim may narrow a registration: A claiming only its application identifier writes there.
        let narrowed = try f.environment(daemon, entitlements: ["application-identifier": "TEAM.com.example.a"])
        #expect(try runProgram(appA, ["add", "n", "svc", "v"], environment: narrowed).stdout == "status=0\n")
        #expect(try runProgram(appA, ["find", "n", "svc"], environment: narrowed).stdout == "status=0\ndata=v\nagrp=TEAM.com.example.a\n")
        #expect(try runProgram(appA, ["find", "x", "svc"], environment: narrowed).stdout == "status=-25300\n")
        // An unregistered program claiming any group is refused too.
        let stranger = try f.program("stranger")
        let claims = try f.environment(daemon, entitlements: ["keychain-access-groups": ["TEAM.a"]])
        #expect(try runProgram(stranger, ["find", "x", "svc"], environment: claims).stdout == "status=-34018\n")

        // A registered binary that changes is a different program: it falls back to its private group.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: appA))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("tampered".utf8))
        try handle.close()
        #expect(try runProgram(appA, ["find", "x", "svc"], environment: f.environment(daemon)).stdout == "status=-25300\n")
        #expect(try runProgram(appA, ["find", "x", "svc", "TEAM.a"], environment: f.environment(daemon)).stdout == "status=-34018\n")
    }

    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "runs a client as another user with setpriv, which needs root"))
    func anotherUsersProcessIsRefusedAtConnect() throws {
        let f = try DaemonFixture()
        let daemon = try DaemonProcess(home: f.home)
        // Let the other user reach the socket, so the daemon (not the file mode) has to refuse it.
        let socketFolder = NSString(string: daemon.socketPath).deletingLastPathComponent
        _ = chmod(socketFolder, 0o755)
        _ = chmod(daemon.socketPath, 0o666)
        let helper = try f.program("other-user")
        _ = chmod(f.folder, 0o755)
        let r = try runProgram(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", helper, "add", "x", "svc", "v"],
            environment: f.environment(daemon))
        #expect(r.stdout == "status=-34018\n", "the refusal keychaind sends in place of its greeting: \(r.stderr)")
        #expect(daemon.logs("refused connection"), "\(daemon.output)")
        #expect(try f.items(in: helper).isEmpty)
    }

    @Test func theDaemonCannotBeTracedOrDumped() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kd-dump-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Run the daemon as an ordinary user (nobody when the tests run as root), so that the kernel's
        // non-dumpable marking shows: its /proc files then belong to root instead of to that user.
        var prefix: [String] = []
        var user = getuid()
        if getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            user = 65534
            for path in [folder, folder + "/home"] { _ = chown(path, 65534, 65534) }
            prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        }
        let daemon = try DaemonProcess(home: folder + "/home", socketPath: folder + "/d.sock", commandPrefix: prefix)
        let control = Process()
        control.executableURL = URL(fileURLWithPath: prefix.first ?? "/bin/sleep")
        control.arguments = Array(prefix.dropFirst()) + (prefix.isEmpty ? ["10"] : ["/bin/sleep", "10"])
        try control.run()
        defer { kill(control.processIdentifier, SIGKILL); control.waitUntilExit() }
        usleep(100_000)
        var daemonStat = stat(), controlStat = stat()
        #expect(stat("/proc/\(daemon.process.processIdentifier)/mem", &daemonStat) == 0)
        #expect(stat("/proc/\(control.processIdentifier)/mem", &controlStat) == 0)
        #expect(controlStat.st_uid == user, "an ordinary process's memory belongs to its user")
        #expect(daemonStat.st_uid == 0, "keychaind's memory is closed to its own user")
        if getuid() != 0 {
            #expect(open("/proc/\(daemon.process.processIdentifier)/mem", O_RDONLY) < 0)
        }
        #expect(daemon.stop() == 0)
    }
}
