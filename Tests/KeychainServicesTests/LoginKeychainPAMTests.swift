import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built PAM module (the package's `pam_keychain` product).
private let pamModule = BuiltProducts.directory + "/libpam_keychain.so"

/// Whether these tests can run: they add a real user (useradd, chpasswd), write a PAM service into /etc/pam.d, log
/// in with pamtester and run keychaind and `security` as other users with setpriv — root, pamtester and Linux-PAM's
/// pam_unix are needed, and the module must have been built (`swift build` builds it with libpam0g-dev).
private let canLogIn =
    getuid() == 0
    && ["/usr/bin/pamtester", "/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/chpasswd", "/usr/bin/setpriv"]
        .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    && FileManager.default.fileExists(atPath: "/lib/x86_64-linux-gnu/security/pam_unix.so")
    && FileManager.default.fileExists(atPath: pamModule)

/// A real user with a real password (in /etc/shadow), removed at deinit.
private final class LoginUser: @unchecked Sendable {
    let name = "kcpam" + UUID().uuidString.prefix(8).lowercased()
    let uid: UInt32
    let gid: UInt32
    let home: String

    init(password: String, in folder: String) throws {
        home = folder + "/home"
        let environment = ["PATH": "/usr/sbin:/usr/bin:/bin"]
        let made = try ProgramRun.run(
            "/usr/sbin/useradd", ["--no-create-home", "--home-dir", home, "--shell", "/bin/sh", "--user-group", name],
            environment: environment)
        guard made.status == 0, let entry = getpwnam(name) else { throw TestProcessError("useradd failed: \(made.stderr)") }
        (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = chown(home, uid, gid)
        try setPassword(password)
    }

    func setPassword(_ password: String) throws {
        let set = try ProgramRun.run(
            "/usr/sbin/chpasswd", [], environment: ["PATH": "/usr/sbin:/usr/bin:/bin"],
            input: Data("\(name):\(password)\n".utf8))
        guard set.status == 0 else { throw TestProcessError("chpasswd failed: \(set.stderr)") }
    }

    deinit {
        _ = try? ProgramRun.run("/usr/sbin/userdel", [name], environment: ["PATH": "/usr/sbin:/usr/bin:/bin"])
    }
}

/// A PAM service in /etc/pam.d for one test: pam_unix, then the built module (with `arguments`), in the auth,
/// session and password stacks; removed at deinit. `required` (not Debian's `requisite` jump) lets the module run
/// after a wrong password too, so the tests see what it does with one.
private final class PAMService: @unchecked Sendable {
    let name = "keychain-test-" + UUID().uuidString.prefix(8).lowercased()
    var path: String { "/etc/pam.d/" + name }

    init(arguments: String) throws {
        let text = """
            auth     required  pam_unix.so
            auth     optional  \(pamModule) \(arguments)
            account  required  pam_permit.so
            session  optional  \(pamModule) \(arguments)
            session  required  pam_permit.so
            password required  pam_unix.so yescrypt
            password optional  \(pamModule) \(arguments)

            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// pam_keychain.so end to end: a real user logs in with pamtester through a PAM service using pam_unix and the
/// built module, whose helper (the built `security`, run as that user) talks to a real `keychaind --system`.
@Suite(.serialized, .enabled(if: canLogIn, "adds a user, writes /etc/pam.d and logs in with pamtester: needs root, pamtester (Debian's pamtester), pam_unix and the built libpam_keychain.so"))
struct LoginKeychainPAMTests {
    /// The daemon, a user whose keychain has `passcode` and is locked, and a PAM service whose helper is a wrapper
    /// recording how it was started (into `record`) before it runs the built `security`.
    private final class Rig: @unchecked Sendable {
        let daemon: SystemDaemon
        let user: LoginUser
        let service: PAMService
        let record: String
        /// While this file exists, the helper's next start exits as when no keychaind listens yet.
        let notYet: String
        let security: String
        let wrapper: String

        init(password: String, passcode: String, arguments: String = "") throws {
            daemon = try SystemDaemon()
            user = try LoginUser(password: password, in: daemon.folder)
            security = try BuiltProducts.path(of: "security")
            // The wrapper is root's, 0755, as the module requires of its helper; it writes into a folder of the user.
            let records = daemon.folder + "/records"
            try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            _ = chown(records, user.uid, user.gid)
            record = records + "/started"
            notYet = records + "/not-yet"
            wrapper = daemon.folder + "/helper"
            try writeExecutable(
                Data(
                    """
                    #!/bin/sh
                    { echo "cmdline: $(tr '\\0' ' ' < /proc/$$/cmdline)"; tr '\\0' '\\n' < /proc/$$/environ | sed 's/^/env: /'
                      grep -E '^(Uid|Gid|Groups|CapEff|CapPrm):' /proc/$$/status; echo "stdin: $(readlink /proc/$$/fd/0)"; } >> '\(record)'
                    # A test plays "keychaind is not listening yet" once: the status the helper then exits with.
                    if [ -e '\(records)/not-yet' ]; then rm -f '\(records)/not-yet'; cat > /dev/null; exit 30; fi
                    exec '\(security)' "$@"

                    """.utf8), to: wrapper)
            service = try PAMService(arguments: "helper=\(wrapper) socket=\(daemon.socket) \(arguments)")
            if !passcode.isEmpty {
                let set = try run(["set-keychain-password", "--new-password-stdin"], input: passcode + "\n")
                guard set.status == 0 else { throw TestProcessError("set-keychain-password failed: \(set.stderr)") }
                try lock()
            }
        }

        /// Runs the built `security` as the user, on the daemon's socket.
        func run(_ arguments: [String], input: String? = nil) throws -> ProgramRun {
            try ProgramRun.run(
                "/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", security] + arguments,
                environment: ["PATH": "/usr/bin:/bin", "HOME": user.home, "KEYCHAIN_DAEMON_SOCKET": daemon.socket],
                input: input.map { Data($0.utf8) }, timeout: 120)
        }

        /// The lock state as `security daemon status` prints it for the user.
        func lockState() throws -> String {
            let status = try run(["daemon", "status"])
            return status.stdout.components(separatedBy: "\n").first { $0.hasPrefix("lock state: ") }.map { String($0.dropFirst(12)) } ?? "?\(status.stderr)"
        }

        func lock() throws {
            let locked = try run(["lock-keychain"])
            guard locked.status == 0 else { throw TestProcessError("lock-keychain failed: \(locked.stderr)") }
        }

        /// pamtester for this service and user: `operations`, with `input` answering its prompts.
        func pamtester(_ operations: [String], input: String) throws -> ProgramRun {
            try ProgramRun.run(
                "/usr/bin/pamtester", ["-v", service.name, user.name] + operations,
                environment: ["PATH": "/usr/sbin:/usr/bin:/bin"], input: Data(input.utf8), timeout: 120)
        }

        var started: String { (try? String(contentsOfFile: record, encoding: .utf8)) ?? "" }
    }

    @Test func aLoginUnlocksTheLoginKeychainAndTheHelperGetsThePasswordOnlyOnStandardInput() throws {
        let password = "login-Secret-4711"
        let rig = try Rig(password: password, passcode: password)
        #expect(try rig.lockState() == "locked")
        let login = try rig.pamtester(["authenticate", "open_session"], input: password + "\n")
        #expect(login.status == 0, "\(login.stdout)\(login.stderr)")
        #expect(try rig.lockState() == "unlocked")
        // keychaind listens already, so the helper ran once, at authentication (the session found it tried).
        let started = rig.started
        #expect(started.components(separatedBy: "\n").filter { $0.hasPrefix("cmdline: ") } == ["cmdline: /bin/sh \(rig.wrapper) login-keychain-pam unlock "])
        #expect(!started.contains(password), "the password is in neither argv nor the environment")
        let environment = Set(started.components(separatedBy: "\n").filter { $0.hasPrefix("env: ") }.map { String($0.dropFirst(5)) })
        #expect(
            environment == [
                "HOME=\(rig.user.home)", "USER=\(rig.user.name)", "LOGNAME=\(rig.user.name)", "PATH=/usr/local/bin:/usr/bin:/bin",
                "XDG_RUNTIME_DIR=/run/user/\(rig.user.uid)", "KEYCHAIN_DAEMON_SOCKET=\(rig.daemon.socket)",
            ])
        // As the user — every uid and gid, the user's own groups — with no capability left; standard input is
        // the socket the module writes the password to.
        #expect(started.contains("Uid:\t\(rig.user.uid)\t\(rig.user.uid)\t\(rig.user.uid)\t\(rig.user.uid)\n"))
        #expect(started.contains("Gid:\t\(rig.user.gid)\t\(rig.user.gid)\t\(rig.user.gid)\t\(rig.user.gid)\n"))
        #expect(started.contains("Groups:\t\(rig.user.gid) \n") || started.contains("Groups:\t\(rig.user.gid)\n"))
        #expect(started.contains("CapEff:\t0000000000000000\n"))
        #expect(started.contains("CapPrm:\t0000000000000000\n"))
        #expect(started.contains("stdin: socket:["), "the password came on a socket: \(started)")
        #expect(!rig.daemon.output.contains(password))
    }

    @Test func whenNoKeychaindListensAtAuthenticationTheSessionUnlocks() throws {
        let password = "login-Secret-4716"
        let rig = try Rig(password: password, passcode: password)
        #expect(FileManager.default.createFile(atPath: rig.notYet, contents: nil))
        let login = try rig.pamtester(["authenticate", "open_session"], input: password + "\n")
        #expect(login.status == 0, "\(login.stdout)\(login.stderr)")
        // Started twice: at authentication (no keychaind yet: the password is kept), then by the session.
        #expect(rig.started.components(separatedBy: "\n").filter { $0.hasPrefix("cmdline: ") }.count == 2)
        #expect(try rig.lockState() == "unlocked")
        // Authentication alone (a screen locker) with no keychaind: nothing is unlocked, nothing fails.
        try rig.lock()
        #expect(FileManager.default.createFile(atPath: rig.notYet, contents: nil))
        #expect(try rig.pamtester(["authenticate"], input: password + "\n").status == 0)
        #expect(try rig.lockState() == "locked")
    }

    @Test func aWrongPasswordUnlocksNothingAndALoginWhosePasswordIsNotThePasscodeStillSucceeds() throws {
        let password = "login-Secret-4712"
        let rig = try Rig(password: password, passcode: "another-passcode")
        // A wrong login password: pam_unix refuses the login; the module, run after it, unlocks nothing.
        let wrong = try rig.pamtester(["authenticate"], input: "not-the-password\n")
        #expect(wrong.status != 0)
        #expect(try rig.lockState() == "locked")
        // The right login password that is not the keychain's passcode: the login succeeds, the keychain stays locked.
        let login = try rig.pamtester(["authenticate", "open_session"], input: password + "\n")
        #expect(login.status == 0, "\(login.stdout)\(login.stderr)")
        #expect(try rig.lockState() == "locked")
        #expect(rig.started.components(separatedBy: "\n").filter { $0.hasPrefix("cmdline: ") }.count == 2)
        // The passcode still unlocks it.
        #expect(try rig.run(["unlock-keychain", "--password-stdin"], input: "another-passcode\n").status == 0)
        #expect(try rig.lockState() == "unlocked")
    }

    @Test func aPasswordChangeReWrapsTheKeychainSoOnlyTheNewPasswordUnlocksIt() throws {
        let old = "login-Secret-4713", new = "changed-Secret-9931"
        let rig = try Rig(password: old, passcode: old)
        // chauthtok with PAM_CHANGE_EXPIRED_AUTHTOK: pam_unix asks root for the current password too, as it asks a user.
        let change = try rig.pamtester(["chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)"], input: "\(old)\n\(new)\n\(new)\n")
        #expect(change.status == 0, "\(change.stdout)\(change.stderr)")
        #expect(rig.started.contains("login-keychain-pam change"))
        #expect(!rig.started.contains(old) && !rig.started.contains(new))
        try rig.lock()
        let withOld = try rig.run(["unlock-keychain", "--password-stdin"], input: old + "\n")
        #expect(withOld.status == 51, "errSecAuthFailed: \(withOld.stderr)")
        #expect(try rig.lockState() == "locked")
        let withNew = try rig.run(["unlock-keychain", "--password-stdin"], input: new + "\n")
        #expect(withNew.status == 0, "\(withNew.stderr)")
        #expect(try rig.lockState() == "unlocked")
        // And a login with the new password unlocks it.
        try rig.lock()
        let login = try rig.pamtester(["authenticate", "open_session"], input: new + "\n")
        #expect(login.status == 0, "\(login.stdout)\(login.stderr)")
        #expect(try rig.lockState() == "unlocked")
    }

    @Test func aPasswordChangeWhoseOldPasswordIsNotThePasscodeChangesNothing() throws {
        let old = "login-Secret-4714", new = "changed-Secret-9932"
        let rig = try Rig(password: old, passcode: "another-passcode")
        let change = try rig.pamtester(["chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)"], input: "\(old)\n\(new)\n\(new)\n")
        #expect(change.status == 0, "the login password changes regardless: \(change.stdout)\(change.stderr)")
        #expect(try rig.run(["unlock-keychain", "--password-stdin"], input: new + "\n").status == 51)
        #expect(try rig.run(["unlock-keychain", "--password-stdin"], input: "another-passcode\n").status == 0)
    }

    @Test func aKeychainWithoutPasscodeIsLeftSoUnlessSetIfNoneGivesItTheLoginPassword() throws {
        let password = "login-Secret-4715"
        let plain = try Rig(password: password, passcode: "")
        #expect(try plain.pamtester(["authenticate", "open_session"], input: password + "\n").status == 0)
        #expect(try plain.lockState() == "no passcode")

        let adopting = try Rig(password: password, passcode: "", arguments: "set_if_none")
        #expect(try adopting.pamtester(["authenticate", "open_session"], input: password + "\n").status == 0)
        #expect(try adopting.lockState() == "unlocked")
        try adopting.lock()
        #expect(try adopting.run(["unlock-keychain", "--password-stdin"], input: password + "\n").status == 0)
        #expect(try adopting.lockState() == "unlocked")
    }
}
