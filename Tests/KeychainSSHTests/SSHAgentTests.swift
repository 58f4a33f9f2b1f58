import Foundation
import KeychainCore
import KeychainSSH
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// keychaind's SSH agent, driven by OpenSSH's own clients: `ssh-add` adds, lists and removes keys, and
/// `ssh-keygen -Y sign` signs through the agent (its signature checked by `ssh-keygen -Y check-novalidate`).
@Suite(.enabled(if: OpenSSHTools.available && FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-add"), "needs ssh-add and ssh-keygen (openssh-client)"))
struct SSHAgentTests {
    /// A keychaind with `--ssh-agent` on a new keychain, and its agent socket once it accepts connections.
    static func agent() throws -> (daemon: KeychaindProcess, folder: String, agentSocket: String) {
        let folder = NSTemporaryDirectory() + "ssh-agent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
        chmod(folder, 0o700)
        let environment = ["KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin"]
        let daemon = try KeychaindProcess(socketPath: folder + "/d.sock", environment: environment, arguments: ["--ssh-agent"])
        // The agent's listener starts beside the socket server: it logs once it listens.
        guard daemon.waitForOutput(containing: "SSH agent listening", timeout: .seconds(30)) else {
            throw TestProcessError("The SSH agent did not start within 30 s:\n\(daemon.output)")
        }
        return (daemon, folder, folder + "/ssh-agent.sock")
    }

    static func run(_ program: String, _ arguments: [String], _ agentSocket: String, input: Data? = nil) throws -> ProgramRun {
        try ProgramRun.run(program, arguments, environment: ["SSH_AUTH_SOCK": agentSocket, "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], input: input, timeout: 60)
    }

    @Test func ssh_addAndSigningGoThroughTheKeychain() throws {
        let (daemon, folder, socket) = try Self.agent()
        defer {
            _ = daemon.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
        // Empty: ssh-add -l says so with status 1.
        #expect(try Self.run("/usr/bin/ssh-add", ["-l"], socket).status == 1)
        var publicLines: [String] = []
        for type in [["-t", "ed25519"], ["-t", "ecdsa", "-b", "256"], ["-t", "rsa", "-b", "3072"]] {
            let file = folder + "/id_\(type[1])"
            try OpenSSHKeyFileTests.keygen(["-q", "-C", "key \(type[1])", "-N", "", "-f", file] + type)
            let added = try Self.run("/usr/bin/ssh-add", [file], socket)
            #expect(added.status == 0, "\(added.stderr)")
            publicLines.append(try String(contentsOfFile: file + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // ssh-add -L prints exactly the three public keys, in the order they were added.
        let listed = try Self.run("/usr/bin/ssh-add", ["-L"], socket)
        #expect(listed.status == 0)
        #expect(listed.stdout.split(separator: "\n").map(String.init) == publicLines)

        // Each key signs through the agent: ssh-keygen -Y sign with only the public key file.
        for type in ["ed25519", "ecdsa", "rsa"] {
            let message = folder + "/message-\(type)"
            try Data("signed through the agent\n".utf8).write(to: URL(fileURLWithPath: message))
            let signed = try Self.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", folder + "/id_\(type).pub", "-n", "file", message], socket)
            #expect(signed.status == 0, "\(type): \(signed.stderr)")
            let checked = try Self.run(
                "/usr/bin/ssh-keygen", ["-Y", "check-novalidate", "-n", "file", "-s", message + ".sig"], socket, input: Data("signed through the agent\n".utf8))
            #expect(checked.status == 0, "\(type): \(checked.stderr)")
        }

        // The keys are in the keychain: a restarted keychaind's agent still lists them.
        _ = daemon.stop()
        let restarted = try KeychaindProcess(
            socketPath: folder + "/d.sock", environment: ["KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin"],
            arguments: ["--ssh-agent"])
        defer { _ = restarted.stop() }
        #expect(restarted.waitForOutput(containing: "SSH agent listening", timeout: .seconds(30)), "\(restarted.output)")
        let again = try Self.run("/usr/bin/ssh-add", ["-L"], socket)
        #expect(again.stdout.split(separator: "\n").map(String.init) == publicLines)

        // ssh-add -d removes one; ssh-add -D the rest.
        #expect(try Self.run("/usr/bin/ssh-add", ["-d", folder + "/id_ecdsa.pub"], socket).status == 0)
        #expect(try Self.run("/usr/bin/ssh-add", ["-L"], socket).stdout.split(separator: "\n").count == 2)
        #expect(try Self.run("/usr/bin/ssh-add", ["-D"], socket).status == 0)
        #expect(try Self.run("/usr/bin/ssh-add", ["-l"], socket).status == 1)
    }

    @Test func lifetimesAreKeptAndLockingWithoutAPasscodeIsRefused() throws {
        let (daemon, folder, socket) = try Self.agent()
        defer {
            _ = daemon.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
        let file = folder + "/id"
        try OpenSSHKeyFileTests.keygen(["-q", "-N", "", "-C", "for an hour", "-f", file, "-t", "ed25519"])
        // -t: kept with its lifetime (forgetting it is SSHAgentHandlerTests', with a clock).
        let added = try Self.run("/usr/bin/ssh-add", ["-t", "3600", file], socket)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try Self.run("/usr/bin/ssh-add", ["-l"], socket).stdout.contains("for an hour"))
        // The keychain has no passcode, so there is nothing to lock the agent with.
        #expect(try Self.run("/usr/bin/ssh-add", ["-x"], socket, input: Data("pw\npw\n".utf8)).status != 0)
        #expect(try Self.run("/usr/bin/ssh-add", ["-l"], socket).status == 0)
    }

    /// The attack: another user on the machine, with the socket left open to everyone (a folder and socket made
    /// world-accessible by mistake). The kernel's peer credentials still keep them out.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root to run ssh-add as another user (setpriv)"))
    func anotherUserIsRefusedEvenWhenTheSocketIsOpenToEveryone() throws {
        let (daemon, folder, socket) = try Self.agent()
        defer {
            _ = daemon.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
        let file = folder + "/id"
        try OpenSSHKeyFileTests.keygen(["-q", "-N", "", "-C", "mine", "-f", file, "-t", "ed25519"])
        #expect(try Self.run("/usr/bin/ssh-add", [file], socket).status == 0)
        chmod(folder, 0o755)
        chmod(socket, 0o666)
        let stranger = try Self.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/ssh-add", "-L"], socket)
        #expect(stranger.status != 0)
        #expect(!stranger.stdout.contains("ssh-ed25519"))
        let removal = try Self.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/ssh-add", "-D"], socket)
        #expect(removal.status != 0)
        // The owner still has the key.
        #expect(try Self.run("/usr/bin/ssh-add", ["-L"], socket).stdout.contains("mine"))
    }

    /// systemd's socket activation, with systemd played by a script that does what it does: binds keychaind.socket's
    /// and keychaind-ssh-agent.socket's sockets, names them in `LISTEN_FDNAMES` and executes keychaind (no
    /// `--ssh-agent`): keychaind serves the agent on the socket named `ssh-agent`, and leaves the socket file to
    /// systemd when it stops.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3 to stand in for systemd"))
    func socketActivationServesTheAgentOnThePassedSocket() throws {
        let folder = NSTemporaryDirectory() + "ssh-activation-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
        chmod(folder, 0o700)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/systemd.py"
        try """
        import os, socket, sys
        paths, command = sys.argv[1:3], sys.argv[3:]
        high = []
        for path in paths:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            os.chmod(path, 0o600)
            s.listen(16)
            high.append(os.dup2(s.detach(), 100 + len(high)))
        for index, fd in enumerate(high):
            os.dup2(fd, 3 + index)
            os.set_inheritable(3 + index, True)
            os.close(fd)
        env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="2", LISTEN_FDNAMES="keychaind:ssh-agent")
        os.execve(command[0], command, env)

        """.write(toFile: script, atomically: true, encoding: .utf8)
        let socket = folder + "/d.sock", agent = folder + "/ssh-agent.sock"
        let daemon = try KeychaindProcess(
            socketPath: socket, environment: ["KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin"],
            commandPrefix: ["/usr/bin/python3", script, socket, agent])
        #expect(daemon.waitForOutput(containing: "SSH agent listening", timeout: .seconds(30)), "\(daemon.output)")
        let file = folder + "/id"
        try OpenSSHKeyFileTests.keygen(["-q", "-N", "", "-C", "activated", "-f", file, "-t", "ed25519"])
        #expect(try Self.run("/usr/bin/ssh-add", [file], agent).status == 0)
        #expect(try Self.run("/usr/bin/ssh-add", ["-l"], agent).stdout.contains("activated"))
        // keychaind's own socket is the other one.
        let security = try BuiltProducts.path(of: "security")
        let listed = try ProgramRun.run(
            security, ["ssh", "list"],
            environment: ["KEYCHAIN_DAEMON_SOCKET": socket, "KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin"])
        #expect(listed.stdout.contains("activated"), "\(listed.stderr)")
        #expect(daemon.stop() == 0)
        // The socket file is systemd's (RemoveOnStop): keychaind leaves it.
        var info = stat()
        #expect(lstat(agent, &info) == 0)
    }

    @Test func securityPrintsWhereTheAgentListens() throws {
        let (daemon, folder, socket) = try Self.agent()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let environment = ["KEYCHAIN_DAEMON_SOCKET": folder + "/d.sock", "KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin"]
        let security = try BuiltProducts.path(of: "security")
        let printed = try ProgramRun.run(security, ["ssh-agent", "--env"], environment: environment)
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout == "SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;\n")
        // keychaind stopped: the line is printed, and the status says nothing listens.
        _ = daemon.stop()
        let stopped = try ProgramRun.run(security, ["ssh-agent"], environment: environment)
        #expect(stopped.status == 1)
        #expect(stopped.stderr.contains("no SSH agent is listening"))
    }
}
