import Foundation
import Testing
import KeychainCore
import KeychainClient
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel lets this test do with namespaces.
enum NamespaceSupport {
    /// Whether `unshare -Urm` works here (user namespaces allowed, as on Debian 12).
    static let canUnshare: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            let run = try? ProgramRun.run("/usr/bin/unshare", ["-Urm", "/bin/true"], environment: [:])
        else { return false }
        return run.status == 0
    }()

    /// A cgroup (v1 `pids` hierarchy or v2) this test may make a group in, as root.
    static let cgroupParent: String? = {
        guard getuid() == 0 else { return nil }
        for parent in ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            let probe = parent + "/keychain-probe-\(getpid())"
            if mkdir(probe, 0o755) == 0 {
                rmdir(probe)
                return parent
            }
        }
        return nil
    }()
}

/// The attacks of a program that makes namespaces of its own (`unshare -Urm`, which needs no privilege): there it
/// can mount anything at any path, so what its path or its files say proves nothing. Each runs a real keychaind and
/// real processes, and asserts what keychaind serves them and which group it reports.
@Suite(.enabled(if: NamespaceSupport.canUnshare, "needs user namespaces (`unshare -Urm`), which this kernel or container forbids"))
struct NamespaceAttackTests {
    /// Runs `script` with `sh` inside `unshare -Urm` (a user and mount namespace of its own, this user mapped to
    /// root there); `$1` is the program to attack with, `$2` the security tool.
    func inOwnNamespaces(_ script: String, program: String, environment: [String: String]) throws -> ProcessResult {
        try ProgramRun.run(
            "/usr/bin/unshare", ["-Urm", "/bin/sh", "-c", script, "attack", program, try BuiltProducts.path(of: "security")],
            environment: environment, timeout: 120)
    }

    /// The access groups `security daemon status` printed (`access groups: G1,G2`).
    func reportedGroups(_ output: String) -> [String] {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("access groups:") }) else { return [] }
        return line.dropFirst("access groups:".count).trimmingCharacters(in: .whitespaces).split(separator: ",").map(String.init)
    }

    @Test func anLdSoPreloadOnAnOverlayOverEtcGetsNoRegisteredIdentity() throws {
        let f = try DaemonFixture()
        let (app, daemon, env) = try f.servedVictim()
        for name in ["upper", "work"] { try FileManager.default.createDirectory(atPath: "\(f.folder)/\(name)", withIntermediateDirectories: true) }
        let setUp =
            "mount -t overlay overlay -o lowerdir=/etc,upperdir=\(f.folder)/upper,workdir=\(f.folder)/work /etc "
            + "&& echo /nonexistent/inject.so > /etc/ld.so.preload"
        let run = try inOwnNamespaces(setUp + " && \"$1\" find x svc && \"$2\" daemon status", program: app, environment: env)
        #expect(run.stdout.hasPrefix("status=-25300\n"), "the registered program's item stays out of reach: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-v"))
        #expect(reportedGroups(run.stdout) == ["untrusted:" + (try BuiltProducts.path(of: "security"))], "\(run.stdout)")
        #expect(daemon.daemon.waitForOutput(containing: "untrusted client", timeout: .seconds(30)))
        #expect(daemon.stop() == 0)
    }

    @Test func anotherBinaryBindMountedAtAProgramsPathGetsNotItsPrivateGroup() throws {
        let f = try DaemonFixture()
        let victim = try f.program("victim"), other = try f.program("other")
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        #expect(try runProgram(victim, ["add", "x", "svc", "secret-v"], environment: env).stdout == "status=0\n")
        // The other program at the victim's path, then the security tool there (to show the group keychaind gives it).
        let run = try inOwnNamespaces(
            "mount --bind \"\(other)\" \"$1\" && \"$1\" find x svc; mount --bind \"$2\" \"$1\" && \"$1\" daemon status",
            program: victim, environment: env)
        #expect(run.stdout.hasPrefix("status=-25300\n"), "\(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-v"))
        #expect(reportedGroups(run.stdout) == ["untrusted:" + victim], "\(run.stdout)")
        #expect(daemon.stop() == 0)
        #expect(try f.items(in: victim) == ["x": "secret-v"])
    }

    @Test func aChrootWithAHomeMadeFlatpakInfoIsNoFlatpakApp() throws {
        let f = try DaemonFixture()
        let program = try f.program("pretender")
        try f.registeredItem(of: .flatpak("org.example.Victim"), group: "TEAM.flat", secret: "secret-f")
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        let root = f.folder + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // A root of its own on a tmpfs, showing the host's folders (links as links), with a `.flatpak-info` on top.
        let binds =
            "for d in /*; do n=${d#/}; if [ -L \"$d\" ]; then ln -s \"$(readlink \"$d\")\" \"\(root)/$n\"; "
            + "elif [ -d \"$d\" ]; then mkdir \"\(root)/$n\" && mount --rbind \"$d\" \"\(root)/$n\"; fi; done"
        let script =
            "mount -t tmpfs fake \(root) && \(binds); printf '[Application]\\nname=org.example.Victim\\n\\n[Instance]\\ninstance-id=1\\n' > \(root)/.flatpak-info "
            + "&& chroot \(root) \"$1\" find x svc TEAM.flat; chroot \(root) \"$2\" daemon status"
        let run = try inOwnNamespaces(script, program: program, environment: env)
        #expect(run.stdout.hasPrefix("status=-34018\n"), "TEAM.flat is not the pretender's: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-f"))
        let groups = reportedGroups(run.stdout)
        #expect(groups.count == 1 && groups.first?.hasPrefix("untrusted:") == true && groups.first?.hasSuffix("/security") == true, "\(run.stdout)")
        #expect(daemon.stop() == 0)
    }

    @Test(.enabled(if: NamespaceSupport.cgroupParent != nil, "needs root and a cgroup hierarchy it may make groups in"))
    func aSnapNamedCgroupIsNoSnap() throws {
        let parent = try #require(NamespaceSupport.cgroupParent)
        let f = try DaemonFixture()
        let program = try f.program("pretender")
        try f.registeredItem(of: .snap("victim"), group: "TEAM.snap", secret: "secret-s")
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        // What `systemd-run --user --scope --unit snap.victim.x` makes, made by hand.
        let group = "\(parent)/snap.victim.app-\(getpid())"
        #expect(mkdir(group, 0o755) == 0)
        defer { rmdir(group) }
        let run = try ProgramRun.run(
            "/bin/sh",
            [
                "-c", "echo $$ > \(group)/cgroup.procs && grep snap.victim /proc/self/cgroup >&2 && \"$1\" find x svc TEAM.snap && exec \"$2\" daemon status",
                "attack", program, try BuiltProducts.path(of: "security"),
            ], environment: env)
        #expect(run.stderr.contains("snap.victim"), "the process is in the snap-named cgroup: \(run.stderr)")
        #expect(run.stdout.hasPrefix("status=-34018\n"), "\(run.stdout)\(run.stderr)")
        #expect(!reportedGroups(run.stdout).contains("snap.victim"), "\(run.stdout)")
        #expect(run.stdout.contains("caller: /"), "identified by its executable's path, not as a snap: \(run.stdout)")
        #expect(daemon.stop() == 0)
    }
}

/// What a real Flatpak sandbox needs here: bwrap, and the user's runtime folder (where flatpak keeps
/// `.flatpak/INSTANCE/bwrapinfo.json`) writable by this test.
enum FlatpakSupport {
    static let runtimeFolder = "/run/user/\(getuid())"

    static let canSandbox: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap"), access(runtimeFolder, W_OK) == 0 || getuid() == 0,
            let run = try? ProgramRun.run("/usr/bin/bwrap", ["--unshare-pid", "--ro-bind", "/", "/", "/bin/true"], environment: [:])
        else { return false }
        return run.status == 0
    }()
}

/// A sandbox made the way flatpak makes one (bwrap in a PID namespace of its own, `.flatpak-info` bound read-only at
/// its root, the instance's `bwrapinfo.json` written from bwrap's `--info-fd`) is served as its app: the
/// verification believes a real sandbox, not only refuses forged ones.
@Suite(.enabled(if: FlatpakSupport.canSandbox, "needs bubblewrap (`bwrap`), PID namespaces, and a writable /run/user/UID"))
struct FlatpakSandboxTests {
    /// Runs `arguments` in a bwrap sandbox of Flatpak instance `instance` of `app`; `sharePIDs` leaves out
    /// `--unshare-pid` (what no Flatpak sandbox does).
    func inSandbox(
        app: String, instance: String, sharePIDs: Bool = false, _ arguments: [String], folder: String,
        environment: [String: String]
    ) throws -> ProcessResult {
        let records = "\(FlatpakSupport.runtimeFolder)/.flatpak/\(instance)"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let info = folder + "/flatpak-info-\(instance)"
        try "[Application]\nname=\(app)\n\n[Instance]\ninstance-id=\(instance)\n".write(toFile: info, atomically: true, encoding: .utf8)
        // A root of its own showing the host's folders read-only (links as links; /tmp writable, for the socket),
        // a /proc and /dev of its own, and the `.flatpak-info` on top.
        var bwrap = sharePIDs ? [] : ["--unshare-pid"]
        for name in try FileManager.default.contentsOfDirectory(atPath: "/").sorted() where !["proc", "dev", "tmp"].contains(name) {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/" + name) {
                bwrap += ["--symlink", target, "/" + name]
            } else {
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: "/" + name, isDirectory: &isFolder), isFolder.boolValue {
                    bwrap += ["--ro-bind", "/" + name, "/" + name]
                }
            }
        }
        bwrap += ["--bind", "/tmp", "/tmp", "--proc", "/proc", "--dev", "/dev", "--ro-bind-data", "5", "/.flatpak-info", "--info-fd", "6", "--"]
        let command = (["/usr/bin/bwrap"] + bwrap + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try ProgramRun.run("/bin/sh", ["-c", "exec \(command) 5<'\(info)' 6>'\(records)/bwrapinfo.json'"], environment: environment, timeout: 120)
    }

    @Test func aRealSandboxIsServedAsItsAppAndOneSharingTheHostsPIDsIsNot() throws {
        let f = try DaemonFixture()
        let program = try f.program("flatpak-app")
        let instance = "\(UInt32.random(in: 1_000_000 ... 999_999_999))"
        defer { try? FileManager.default.removeItem(atPath: "\(FlatpakSupport.runtimeFolder)/.flatpak/\(instance)") }
        try f.registeredItem(of: .flatpak("org.example.Real"), group: "TEAM.flat", secret: "secret-f")
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)

        let served = try inSandbox(app: "org.example.Real", instance: instance, [program, "find", "x", "svc"], folder: f.folder, environment: env)
        #expect(served.stdout == "status=0\ndata=secret-f\nagrp=TEAM.flat\n", "\(served.stdout)\(served.stderr)\(daemon.output)")
        let status = try inSandbox(
            app: "org.example.Real", instance: instance, [try BuiltProducts.path(of: "security"), "daemon", "status"],
            folder: f.folder, environment: env)
        #expect(status.stdout.contains("caller: flatpak org.example.Real"), "\(status.stdout)")

        // The same files in the host's PID namespace: not a Flatpak sandbox.
        let shared = try inSandbox(
            app: "org.example.Real", instance: instance, sharePIDs: true, [program, "find", "x", "svc", "TEAM.flat"],
            folder: f.folder, environment: env)
        #expect(shared.stdout.hasPrefix("status=-34018\n"), "\(shared.stdout)\(shared.stderr)")
        #expect(daemon.output.contains("shares the host's PID namespace"), "\(daemon.output)")
        #expect(daemon.stop() == 0)
    }
}
