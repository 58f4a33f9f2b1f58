import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether these tests can run: they create the `keychain` system user, run keychaind as that user with
/// CAP_SYS_PTRACE and run clients as other uids, all with `setpriv`, which needs root (CI runs as root).
private let canSwitchUsers =
    getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    && (getpwnam(SystemDaemon.userName) != nil || FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"))

/// `keychaind --system` against real users: the daemon runs as the `keychain` system user (created here when
/// missing, as `Support/install.sh` does), with CAP_SYS_PTRACE as `keychaind-system.service` gives it, on a state
/// folder and socket in a temporary folder; the clients are the built `keychain-test-helper` and `security`, run as
/// two uids with no account (`setpriv --reuid=N --regid=N --clear-groups`).
@Suite(.serialized, .enabled(if: canSwitchUsers, "runs keychaind as the keychain system user and clients as other uids with setpriv, which needs root"))
struct SystemModeTests {
    static let userA: UInt32 = 47_001
    static let userB: UInt32 = 47_002

    @Test func eachUserIsServedTheirOwnKeychain() throws {
        let daemon = try SystemDaemon()
        // The same account and service in both keychains: no duplicate, each user reads back their own secret.
        #expect(try daemon.helper(as: Self.userA, ["add", "mail", "svc", "secret-of-A"]).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userB, ["add", "mail", "svc", "secret-of-B"]).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userA, ["find", "mail", "svc"]).stdout.contains("data=secret-of-A\n"))
        #expect(try daemon.helper(as: Self.userB, ["find", "mail", "svc"]).stdout.contains("data=secret-of-B\n"))
        // An item of A only: B never sees it.
        #expect(try daemon.helper(as: Self.userA, ["add", "only-a", "svc", "a-private"]).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userB, ["find", "only-a", "svc"]).stdout == "status=-25300\n")
        #expect(try daemon.helper(as: Self.userA, ["find", "only-a", "svc"]).stdout.contains("data=a-private\n"))

        // Each keychain is a folder of the system user, 0700, in a state folder of the system user, 0700.
        for folder in [daemon.state, daemon.state + "/\(Self.userA)", daemon.state + "/\(Self.userB)"] {
            var info = stat()
            #expect(lstat(folder, &info) == 0)
            #expect(info.st_uid == daemon.uid, "\(folder) belongs to the keychain user")
            #expect(info.st_mode & 0o7777 == 0o700, "\(folder) is 0700")
        }
        #expect(daemon.stop() == 0)
    }

    @Test func theAdminToolActsOnItsOwnUsersKeychainOnly() throws {
        let daemon = try SystemDaemon()
        #expect(try daemon.helper(as: Self.userA, ["add", "a-account", "svc", "a-secret"]).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userB, ["add", "b-account", "svc", "b-secret"]).stdout == "status=0\n")
        // `security` beside keychaind is every user's admin tool (all access groups, no passcode set), but of their
        // own keychain: A's dump lists A's item and nothing of B's.
        let dumpA = try daemon.security(as: Self.userA, ["dump-keychain", "-d"])
        #expect(dumpA.status == 0, "\(dumpA.stderr)")
        #expect(dumpA.stdout.contains("a-account"))
        #expect(dumpA.stdout.contains("a-secret"))
        #expect(!dumpA.stdout.contains("b-account"))
        #expect(!dumpA.stdout.contains("b-secret"))
        // keychaind reads another user's environment too (from memory: that user's /proc/PID/environ is closed to
        // it). A program started with LD_PRELOAD is served, as untrusted, in a private group apart from its own;
        // the admin tool started so gets no admin identity.
        let inject = ["LD_PRELOAD": "/nonexistent/inject.so"]
        #expect(try daemon.helper(as: Self.userA, ["add", "injected", "svc", "v"], environment: inject).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userA, ["find", "injected", "svc"]).stdout == "status=-25300\n")
        #expect(try daemon.helper(as: Self.userA, ["find", "a-account", "svc"], environment: inject).stdout == "status=-25300\n")
        let preloaded = try daemon.security(as: Self.userA, ["dump-keychain", "-d"], environment: ["LD_PRELOAD": "/nonexistent/inject.so"])
        #expect(preloaded.status != 0)
        #expect(preloaded.stderr.contains("A required entitlement isn't present"), "\(preloaded.stderr)")
        #expect(!preloaded.stdout.contains("a-secret"))
        let dumpB = try daemon.security(as: Self.userB, ["dump-keychain", "-d"])
        #expect(dumpB.stdout.contains("b-secret"))
        #expect(!dumpB.stdout.contains("a-secret"))

        // The lock state and passcode are per user: A sets a passcode and locks; B's keychain stays open.
        #expect(try daemon.helper(as: Self.userA, ["add", "a-locked", "svc", "a-secret-2"]).stdout == "status=0\n")
        let passcode = try daemon.security(as: Self.userA, ["set-keychain-password", "-p", "passcode-of-A"])
        #expect(passcode.status == 0, "\(passcode.stderr)")
        #expect(try daemon.security(as: Self.userA, ["lock-keychain"]).status == 0)
        #expect(try daemon.helper(as: Self.userA, ["find", "a-locked", "svc"]).stdout == "status=-25308\n")
        #expect(try daemon.helper(as: Self.userB, ["find", "b-account", "svc"]).stdout.contains("data=b-secret\n"))
        #expect(try daemon.helper(as: Self.userB, ["add", "b-more", "svc", "v"]).stdout == "status=0\n")
        // B's admin tool has no passcode to give: it manages its own keychain, not A's.
        let infoB = try daemon.security(as: Self.userB, ["show-keychain-info"])
        #expect(infoB.status == 0, "\(infoB.stderr)")
        #expect(daemon.stop() == 0)
    }

    @Test func aUsersProgramsCannotOpenAnyFileOfTheStore() throws {
        let daemon = try SystemDaemon()
        #expect(try daemon.helper(as: Self.userA, ["add", "mail", "svc", "secret-of-A"]).stdout == "status=0\n")
        #expect(try daemon.helper(as: Self.userB, ["add", "mail", "svc", "secret-of-B"]).stdout == "status=0\n")
        // Every file and folder of the store, A's own keychain's included (device key, keybag, database).
        var paths = [daemon.state]
        let walker = FileManager.default.enumerator(atPath: daemon.state)
        while let relative = walker?.nextObject() as? String { paths.append(daemon.state + "/" + relative) }
        let ownKeychain = daemon.state + "/\(Self.userA)"
        #expect(paths.contains(ownKeychain + "/device.key"))
        #expect(paths.contains(ownKeychain + "/keychain-2.db"))
        #expect(paths.count >= 10, "the store holds both users' files: \(paths)")
        let attempt = try daemon.helper(as: Self.userA, ["try-open"] + paths)
        let lines = attempt.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == paths.count, "\(attempt.stderr)")
        for (line, path) in zip(lines, paths) {
            #expect(line == "errno=\(EACCES) \(path)", "user A's program opening \(path)")
        }
        #expect(daemon.stop() == 0)
    }

    @Test func theFoldersMustBelongToTheSystemUser() throws {
        // A state folder another user could write is refused at start, with what to do.
        let folder = try SystemDaemon.scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let state = folder + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        _ = chown(state, Self.userA, Self.userA)
        let (uid, gid) = try SystemDaemon.systemUser()
        let run = try ProgramRun.run(
            "/usr/bin/setpriv",
            SystemDaemon.asSystemUser(uid, gid) + [
                BuiltProducts.path(of: "keychaind"), "--system", "--state-directory", state, "--socket", folder + "/run/keychaind.sock",
            ], environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
        #expect(run.status != 0)
        #expect(run.stderr.contains("\(state) belongs to user \(Self.userA), not to keychaind's user \(uid)"), "\(run.stderr)")
    }

    @Test func withoutPtraceTheDaemonCannotIdentifyOtherUsersProgramsAndRefusesThem() throws {
        // Why keychaind-system.service grants CAP_SYS_PTRACE: without it, /proc/PID/exe of another user's process is
        // closed to keychaind, so it cannot tell which program connected and refuses it.
        let daemon = try SystemDaemon(ptrace: false)
        let run = try daemon.helper(as: Self.userA, ["add", "mail", "svc", "v"])
        #expect(run.stdout == "status=-34018\n", "\(run.stderr)")
        #expect(daemon.output.contains("refused connection"))
        #expect(daemon.stop() == 0)
    }
}

/// A `keychaind --system` run as the `keychain` system user, on a state folder and socket of its own.
final class SystemDaemon: @unchecked Sendable {
    /// The system user (the one the units and install script use).
    static let userName = "keychain"
    let folder: String
    let state: String
    let socket: String
    let uid: UInt32
    let daemon: KeychaindProcess
    /// Who answers keychaind's prompts.
    let person: ApprovingPerson

    init(ptrace: Bool = true, arguments: [String] = []) throws {
        let gid: UInt32
        (uid, gid) = try Self.systemUser()
        folder = try Self.scratchFolder()
        // keychaind creates its state folder and socket in folders of its user, as systemd's StateDirectory= and
        // RuntimeDirectory= give it.
        for sub in ["/lib", "/run"] {
            try FileManager.default.createDirectory(atPath: folder + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            _ = chown(folder + sub, uid, gid)
        }
        state = folder + "/lib/keychain"
        socket = folder + "/run/keychaind.sock"
        var prefix = ["/usr/bin/setpriv"] + Self.asSystemUser(uid, gid)
        if !ptrace { prefix = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups"] }
        // The person at the machine approves what keychaind asks (the admin tool reading a secret, a setting).
        person = try ApprovingPerson(in: folder + "/person")
        daemon = try KeychaindProcess(
            socketPath: socket, environment: ["PATH": "/usr/bin:/bin"].merging(person.environment) { $1 },
            arguments: ["--system", "--state-directory", state] + arguments, commandPrefix: prefix)
    }

    deinit {
        daemon.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var output: String { daemon.output }
    @discardableResult func stop() -> Int32 { daemon.stop() }

    /// Runs the test helper as `user` (a uid with no account), its calls going to this daemon.
    func helper(as user: UInt32, _ arguments: [String], environment extra: [String: String] = [:]) throws -> ProgramRun {
        try run(as: user, BuiltProducts.path(of: "keychain-test-helper"), arguments, environment: extra)
    }

    /// Runs the built `security` (the one beside keychaind: the admin tool) as `user`.
    func security(as user: UInt32, _ arguments: [String], environment extra: [String: String] = [:]) throws -> ProgramRun {
        try run(as: user, BuiltProducts.path(of: "security"), arguments, environment: extra)
    }

    private func run(as user: UInt32, _ program: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> ProgramRun {
        var environment = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "KEYCHAIN_DAEMON_SOCKET": socket]
        environment.merge(extra) { $1 }
        return try ProgramRun.run(
            "/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", program] + arguments,
            environment: environment, timeout: 120)
    }

    /// `setpriv` arguments that run a program as the system user with CAP_SYS_PTRACE, as the service unit does
    /// (`User=keychain`, `AmbientCapabilities=CAP_SYS_PTRACE`).
    static func asSystemUser(_ uid: UInt32, _ gid: UInt32) -> [String] {
        ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--inh-caps=+sys_ptrace", "--ambient-caps=+sys_ptrace"]
    }

    /// A fresh folder every user may traverse (the daemon's and clients' programs are found through it).
    static func scratchFolder() throws -> String {
        let folder = "/tmp/ksys-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return folder
    }

    /// The `keychain` system user's uid and gid, created (as `Support/install.sh` does without systemd) when missing.
    static func systemUser() throws -> (uid: UInt32, gid: UInt32) {
        if let entry = getpwnam(userName) { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        let made = try ProgramRun.run(
            "/usr/sbin/useradd",
            [
                "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                "--shell", "/usr/sbin/nologin", "--comment", "keychaind", userName,
            ],
            environment: ["PATH": "/usr/sbin:/usr/bin:/bin"])
        // Another test may have created it meanwhile.
        guard let entry = getpwnam(userName) else {
            throw TestProcessError("Cannot create the \(userName) system user: \(made.stderr)")
        }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }
}
