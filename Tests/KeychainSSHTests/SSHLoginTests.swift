import Foundation
import KeychainCore
import KeychainSSH
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real OpenSSH server for one test: Debian's `sshd`, with a throwaway configuration, host key and
/// `authorized_keys`, run per connection (`sshd -i` as `ssh`'s ProxyCommand), so no port is bound. It runs as root,
/// as sshd must; the login is as the test's user.
struct SSHServer {
    static let available = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") && FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh")

    let folder: String
    var configuration: String { folder + "/sshd_config" }
    var authorizedKeys: String { folder + "/authorized_keys" }
    var hostKey: String { folder + "/host_ed25519" }

    init(in folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // sshd's privilege separation needs its empty folder.
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try OpenSSHKeyFileTests.keygen(["-q", "-N", "", "-t", "ed25519", "-f", hostKey])
        try Data().write(to: URL(fileURLWithPath: authorizedKeys))
        try """
        HostKey \(hostKey)
        AuthorizedKeysFile \(authorizedKeys)
        StrictModes no
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PermitRootLogin prohibit-password
        UsePAM no
        PidFile none
        LogLevel VERBOSE

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    /// Lets the key of `line` (an `authorized_keys` line) log in.
    func authorize(_ line: String) throws {
        let old = (try? String(contentsOfFile: authorizedKeys, encoding: .utf8)) ?? ""
        try (old + line + "\n").write(toFile: authorizedKeys, atomically: true, encoding: .utf8)
    }

    /// `ssh` logging in with only the keys of the agent at `agent`, running `echo logged-in`.
    func login(agent: String) throws -> ProgramRun {
        let user = String(cString: getpwuid(getuid()).pointee.pw_name)
        return try ProgramRun.run(
            "/usr/bin/ssh",
            [
                "-F", "/dev/null", "-o", "IdentityAgent=\(agent)", "-o", "ProxyCommand=/usr/sbin/sshd -i -f \(configuration) -E \(folder)/sshd.log",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=\(folder)/known_hosts", "-o", "BatchMode=yes",
                "-o", "PreferredAuthentications=publickey", "-o", "IdentityFile=\(folder)/none", "\(user)@test-host", "echo", "logged-in",
            ],
            environment: ["HOME": folder, "PATH": "/usr/bin:/bin"], timeout: 60)
    }

    /// The host key's fingerprint, as prompts name it.
    func hostKeyFingerprint() throws -> String {
        let line = try String(contentsOfFile: hostKey + ".pub", encoding: .utf8)
        guard let field = line.split(separator: " ").dropFirst().first, let blob = Data(base64Encoded: String(field)) else {
            throw TestProcessError("unreadable host key")
        }
        return try SSHPublicKey(blob: Array(blob)).fingerprint
    }
}

/// Logging in to a real sshd with keys keychaind's agent serves.
@Suite(.enabled(if: SSHServer.available, "needs root, sshd (openssh-server) and ssh"))
struct SSHLoginTests {
    struct Rig {
        let folder: String
        let daemon: KeychaindProcess
        let agent: String
        let server: SSHServer
        let environment: [String: String]
        /// The person at the machine: approves the security tool's writes to the group keychain.ssh (as keychaind
        /// asks for any write of the admin tool to a program's group), and answers the agent's prompts.
        let person: PinentryScript

        init(tpm: SoftwareTPM? = nil) throws {
            person = try PinentryScript()
            folder = NSTemporaryDirectory() + "ssh-login-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
            chmod(folder, 0o700)
            var base = ["KEYCHAIN_HOME": folder + "/home", "HOME": folder, "PATH": "/usr/bin:/bin", "KEYCHAIN_PINENTRY": person.program]
            // The TPM keychaind makes token keys in; without one named, none (a machine's /dev/tpmrm0 is not used).
            base["KEYCHAIN_TPM_TCTI"] = tpm?.tcti ?? "none"
            daemon = try KeychaindProcess(socketPath: folder + "/d.sock", environment: base, arguments: ["--ssh-agent"])
            guard daemon.waitForOutput(containing: "SSH agent listening", timeout: .seconds(30)) else {
                throw TestProcessError("The SSH agent did not start within 30 s:\n\(daemon.output)")
            }
            agent = folder + "/ssh-agent.sock"
            server = try SSHServer(in: folder + "/sshd")
            environment = base.merging(["KEYCHAIN_DAEMON_SOCKET": folder + "/d.sock"]) { $1 }
        }

        /// Runs `security`; with `approving`, the person approves its first write to keychain.ssh ("always").
        func security(_ arguments: [String], input: Data? = nil, approving: Bool = false) throws -> ProgramRun {
            if approving { try person.queue("confirm") }
            return try ProgramRun.run(try BuiltProducts.path(of: "security"), arguments, environment: environment, input: input, timeout: 120)
        }

        func sshAdd(_ arguments: [String]) throws -> ProgramRun {
            try ProgramRun.run("/usr/bin/ssh-add", arguments, environment: ["SSH_AUTH_SOCK": agent, "PATH": "/usr/bin:/bin", "HOME": folder])
        }

        func stop() {
            _ = daemon.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    @Test func anImportedEd25519KeyLogsIn() throws {
        let rig = try Rig()
        defer { rig.stop() }
        // A passphrase-protected key, imported once: the passphrase is asked (here on standard input) and not again.
        let file = rig.folder + "/id_ed25519"
        try OpenSSHKeyFileTests.keygen(["-q", "-C", "laptop key", "-N", "correct horse", "-t", "ed25519", "-f", file])
        let added = try rig.security(["ssh", "add", file], input: Data("correct horse\n".utf8), approving: true)
        #expect(added.status == 0, "\(added.stderr)")
        let publicLine = try String(contentsOfFile: file + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        // Refused before the key is authorized; logged in after.
        #expect(try rig.server.login(agent: rig.agent).status != 0)
        try rig.server.authorize(publicLine)
        let login = try rig.server.login(agent: rig.agent)
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout == "logged-in\n")
        #expect(try rig.sshAdd(["-L"]).stdout == publicLine + "\n")
    }

    @Test func ssh_addListsOnlySSHKeysAndRemovesNothingElse() throws {
        let rig = try Rig()
        defer { rig.stop() }
        // Other keys of the keychain: a password and a P-256 key that is not tagged for SSH.
        #expect(try rig.security(["add-generic-password", "-a", "me", "-s", "mail", "-w", "secret"]).status == 0)
        let made = try rig.security(["ssh", "create", "-C", "made here"], approving: true)
        #expect(made.status == 0, "\(made.stderr)")
        let file = rig.folder + "/id"
        try OpenSSHKeyFileTests.keygen(["-q", "-C", "imported", "-N", "", "-t", "ed25519", "-f", file])
        #expect(try rig.sshAdd([file]).status == 0)
        let listed = try rig.sshAdd(["-l"])
        #expect(listed.stdout.split(separator: "\n").map { $0.split(separator: " ").dropFirst(2).dropLast().joined(separator: " ") } == ["imported", "made here"])
        #expect(try rig.sshAdd(["-D"]).status == 0)
        // The keychain's key made for SSH stays (ssh-add -D never deletes a key that cannot be imported again)...
        #expect(try rig.sshAdd(["-L"]).stdout == made.stdout)
        // ...and so does everything else.
        #expect(try rig.security(["find-generic-password", "-a", "me", "-s", "mail", "-w"]).stdout == "secret\n")
    }

    @Test(.enabled(if: SoftwareTPM.available, "needs swtpm (Debian packages swtpm, swtpm-tools)"))
    func aKeyInsideTheTPMLogsIn() throws {
        let tpm = try SoftwareTPM()
        let rig = try Rig(tpm: tpm)
        defer { rig.stop() }
        let made = try rig.security(["ssh", "create", "-C", "in the tpm"], approving: true)
        #expect(made.status == 0, "\(made.stderr)")
        let line = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("ecdsa-sha2-nistp256 "))
        // The key item says the TPM holds it (kSecAttrCreator 'tpm2').
        let listed = try rig.security(["ssh", "list"])
        #expect(listed.stdout == line + "\t(in the TPM)\n", "\(listed.stderr)")
        try rig.server.authorize(line)
        let login = try rig.server.login(agent: rig.agent)
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout == "logged-in\n")
        // The signature was the TPM's: without it, the key signs nothing.
        tpm.stop()
        #expect(try rig.server.login(agent: rig.agent).status != 0)
    }

    @Test func aKeyAskingForPresenceLogsInOnlyWhenThePersonApproves() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let pinentry = rig.person
        let made = try rig.security(["ssh", "create", "--presence", "-C", "guarded"], approving: true)
        #expect(made.status == 0, "\(made.stderr)")
        try rig.server.authorize(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

        try pinentry.queue("notok")
        #expect(try rig.server.login(agent: rig.agent).status != 0)
        try pinentry.queue("confirm")
        let login = try rig.server.login(agent: rig.agent)
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout == "logged-in\n")
        // The prompt named the program that asked and the host its session was bound to.
        #expect(pinentry.log.contains("/usr/bin/ssh (process"))
        #expect(pinentry.log.contains(try rig.server.hostKeyFingerprint()))
        #expect(pinentry.log.contains("guarded"))
    }
}
