import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks through the file system and the socket path, by another user of the machine (run as root, which the
/// tests use to play that user with chown and setpriv) or by a killed daemon.
@Suite struct FileAttackTests {
    static let asRoot = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Expects keychaind not to start, saying `reason` (what the launcher reports of its standard error).
    static func expectStartRefused(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation, _ start: () throws -> DaemonProcess) {
        do {
            let daemon = try start()
            Issue.record("keychaind started: \(daemon.socketPath)", sourceLocation: sourceLocation)
            daemon.stop()
        } catch {
            #expect("\(error)".contains(reason), "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// Another user who creates the victim's keychain folder first (open to all, or simply theirs) would read or
    /// replace what goes in it: the keychain refuses such a folder, in-process and in keychaind, and says why.
    @Test(.enabled(if: asRoot, "plays another user with chown, which needs root"))
    func aKeychainFolderAnotherUserMadeIsRefused() throws {
        let f = try DaemonFixture()
        let helper = try f.program("victim")
        for (owner, mode) in [(uid_t(65534), mode_t(0o700)), (uid_t(65534), 0o777), (getuid(), 0o777), (getuid(), 0o770)] {
            try? FileManager.default.removeItem(atPath: f.home)
            try FileManager.default.createDirectory(atPath: f.home, withIntermediateDirectories: false)
            #expect(chown(f.home, owner, owner) == 0 && chmod(f.home, mode) == 0)
            var env = baseEnvironment(home: f.home)
            env["KEYCHAIN_DAEMON_SOCKET"] = "off"
            let run = try runProgram(helper, ["add", "x", "svc", "secret"], environment: env)
            #expect(run.stdout == "status=-36\n", "owner \(owner), mode \(String(mode, radix: 8)): \(run.stdout)\(run.stderr)")
            #expect((try FileManager.default.contentsOfDirectory(atPath: f.home)).isEmpty, "nothing was written in it")
            Self.expectStartRefused(owner == getuid() ? "can be written by others" : "belongs to user \(owner)") { try DaemonProcess(home: f.home) }
        }
        // A folder of one's own that others may only read is closed to them and used.
        try FileManager.default.removeItem(atPath: f.home)
        try FileManager.default.createDirectory(atPath: f.home, withIntermediateDirectories: false)
        _ = chmod(f.home, 0o755)
        var env = baseEnvironment(home: f.home)
        env["KEYCHAIN_DAEMON_SOCKET"] = "off"
        #expect(try runProgram(helper, ["add", "x", "svc", "secret"], environment: env).stdout == "status=0\n")
        var info = stat()
        #expect(stat(f.home, &info) == 0 && info.st_mode & 0o777 == 0o700)
    }

    /// `--socket` may name a folder other programs use (beside a PostgreSQL's data, say): keychaind leaves its mode as
    /// it is when others may only read it, and refuses one others may write to, saying why.
    @Test func theSocketFolderKeepsItsMode() throws {
        let f = try DaemonFixture()
        let shared = f.folder + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        #expect(chmod(shared, 0o755) == 0)
        let daemon = try DaemonProcess(home: f.home, socketPath: shared + "/d.sock")
        var info = stat()
        #expect(stat(shared, &info) == 0 && info.st_mode & 0o7777 == 0o755, "mode \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(stat(shared + "/d.sock", &info) == 0 && info.st_mode & 0o777 == 0o600)
        daemon.stop()
        #expect(chmod(shared, 0o777) == 0)
        Self.expectStartRefused("can be written by others") { try DaemonProcess(home: f.home, socketPath: shared + "/d.sock") }
        #expect(stat(shared, &info) == 0 && info.st_mode & 0o7777 == 0o777)
    }

    /// A keychain folder that is a symbolic link (planted in a shared folder, say) is never followed.
    @Test func aKeychainFolderThatIsALinkIsRefused() throws {
        let f = try DaemonFixture()
        let elsewhere = f.folder + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        _ = chmod(elsewhere, 0o700)
        try FileManager.default.createSymbolicLink(atPath: f.home, withDestinationPath: elsewhere)
        var env = baseEnvironment(home: f.home)
        env["KEYCHAIN_DAEMON_SOCKET"] = "off"
        let run = try runProgram(try f.program("victim"), ["add", "x", "svc", "secret"], environment: env)
        #expect(run.stdout == "status=-36\n", "\(run.stderr)")
        #expect((try FileManager.default.contentsOfDirectory(atPath: elsewhere)).isEmpty)
    }

    /// A link planted where keychaind writes its pid would make it overwrite the link's target: keychaind refuses to
    /// start, and the target is untouched.
    @Test func aPidFileLinkIsNeverWrittenThrough() throws {
        let f = try DaemonFixture()
        let runtime = f.folder + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
        _ = chmod(runtime, 0o700)
        let victim = f.folder + "/victim.txt"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: runtime + "/keychaind.pid", withDestinationPath: victim)
        Self.expectStartRefused("keychaind.pid is a symbolic link") { try DaemonProcess(home: f.home, socketPath: runtime + "/d.sock") }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        // A hard link is refused the same way.
        try FileManager.default.removeItem(atPath: runtime + "/keychaind.pid")
        try FileManager.default.linkItem(atPath: victim, toPath: runtime + "/keychaind.pid")
        Self.expectStartRefused("is not a file of your own with one name") { try DaemonProcess(home: f.home, socketPath: runtime + "/d.sock") }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        // Without the plant, the pid is written beside the socket.
        try FileManager.default.removeItem(atPath: runtime + "/keychaind.pid")
        let daemon = try DaemonProcess(home: f.home, socketPath: runtime + "/d.sock")
        #expect(try String(contentsOfFile: runtime + "/keychaind.pid", encoding: .utf8) == "\(daemon.process.processIdentifier)\n")
        #expect(daemon.stop() == 0)
    }

    /// Another user listening at the socket path a client trusts would collect passcodes and secrets: the client checks
    /// who serves the socket (SO_PEERCRED) and sends it nothing.
    @Test(.enabled(if: asRoot, "runs the fake daemon as another user with setpriv, which needs root"))
    func aSocketServedByAnotherUserGetsNothing() throws {
        let f = try DaemonFixture()
        _ = chmod(f.folder, 0o777)
        let socket = f.folder + "/fake.sock", received = f.folder + "/received"
        // The fake greets like keychaind, then records how many bytes it was sent.
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); open(sys.argv[1] + ".ready", "w").close()
            c, _ = s.accept(); c.settimeout(3); total = 0
            try:
                c.sendall(bytes.fromhex("0000000703020000000000"))
                while True:
                    chunk = c.recv(65536)
                    if not chunk: break
                    total += len(chunk)
            except OSError: pass
            open(sys.argv[2], "w").write(str(total))
            """
        let fake = Process()
        fake.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        fake.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, socket, received]
        try fake.run()
        defer { if fake.isRunning { kill(fake.processIdentifier, SIGKILL) }; fake.waitUntilExit() }
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket + ".ready") { usleep(10_000) }
        var env = baseEnvironment(home: f.home)
        env["KEYCHAIN_DAEMON_SOCKET"] = socket
        let run = try runProgram(try f.program("victim"), ["add", "x", "svc", "secret"], environment: env)
        #expect(run.stdout == "status=-25291\n", "\(run.stdout)\(run.stderr)")
        fake.waitUntilExit()
        #expect(try String(contentsOfFile: received, encoding: .utf8) == "0", "the fake daemon was sent nothing")
    }

    /// Killing keychaind must not turn its decisions off: a client of a keychain that keychaind has served fails
    /// with errSecNotAvailable while it is stopped, instead of opening the store itself.
    @Test func aKilledDaemonFailsClosed() throws {
        let f = try DaemonFixture()
        let vault = try f.program("vault")
        try registerProgram(f.engine, path: vault, groups: ["TEAM.vault"])
        let daemon = try DaemonProcess(home: f.home)
        #expect(try runProgram(vault, ["add", "crown", "svc", "jewels"], environment: f.environment(daemon)).stdout == "status=0\n")
        daemon.kill()
        // Neither KEYCHAIN_DAEMON_SOCKET nor the default socket names keychaind: only the keychain's folder does.
        let stranger = try f.program("stranger")
        let env = baseEnvironment(home: f.home)
        let run = try runProgram(stranger, ["find", "crown", "svc", "TEAM.vault"], environment: env)
        #expect(run.stdout == "status=-25291\n", "\(run.stdout)\(run.stderr)")
        // Started again, keychaind serves the same clients, by its folder alone.
        let again = try DaemonProcess(home: f.home, socketPath: daemon.socketPath)
        #expect(try runProgram(vault, ["find", "crown", "svc"], environment: env).stdout == "status=0\ndata=jewels\nagrp=TEAM.vault\n")
        #expect(try runProgram(stranger, ["find", "crown", "svc", "TEAM.vault"], environment: env).stdout == "status=-34018\n")
        #expect(again.stop() == 0)
    }
}
