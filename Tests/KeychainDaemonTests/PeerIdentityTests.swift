import Foundation
import KeychainTestSupport
import Testing
@testable import KeychainCore
@testable import KeychainDaemon
import Crypto

/// PeerInspector reads what the kernel publishes under /proc/PID; these tests give it a /proc of their own.
@Suite struct PeerIdentityTests {
    final class FakeProc {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)").path
        deinit { try? FileManager.default.removeItem(atPath: root) }

        /// A process folder for `pid` running `exe`, with `files` in it. Its namespaces are this test's own (the
        /// host's), unless `ownNamespaces`: then they are files of its own, which no other process shares.
        func process(_ pid: Int32, exe: String, files: [String: String] = [:], ownNamespaces: Bool = false) throws {
            let base = "\(root)/\(pid)"
            try FileManager.default.createDirectory(atPath: base + "/root", withIntermediateDirectories: true)
            if ownNamespaces {
                try FileManager.default.createDirectory(atPath: base + "/ns", withIntermediateDirectories: true)
                for kind in ["user", "mnt", "pid"] { try Data().write(to: URL(fileURLWithPath: "\(base)/ns/\(kind)")) }
            } else {
                try FileManager.default.createSymbolicLink(atPath: base + "/ns", withDestinationPath: "/proc/self/ns")
            }
            try FileManager.default.createDirectory(atPath: base + "/attr", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: base + "/exe", withDestinationPath: exe)
            // What the kernel shows for an ordinary process: no loader variables, no tracer, code only from its program.
            let ordinary = [
                "environ": "HOME=/home/u\u{0}PATH=/usr/bin\u{0}LD_PRELOAD=\u{0}", "status": "Name:\tprog\nTracerPid:\t0\nUid:\t1000\n",
                "maps": "55d0c0000000-55d0c0001000 r-xp 00001000 fe:00 4242                       \(exe)\n",
            ]
            for (name, text) in ordinary.merging(files, uniquingKeysWith: { $1 }) { try Data(text.utf8).write(to: URL(fileURLWithPath: base + "/" + name)) }
        }
    }

    func program() throws -> (path: String, sha256: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("prog-\(UUID().uuidString)").path
        let bytes = Data("#!/bin/sh\necho hi\n".utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        return (path, FileDigest.hex(SHA256Digest.of(bytes)))
    }

    @Test func aHostProgramIsItsExecutablePathAndHash() throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        try proc.process(100, exe: prog.path)
        let id = try PeerInspector(proc: proc.root).identity(pid: 100, uid: 1000)
        #expect(id.program == .executable(prog.path))
        #expect(id.executableSHA256 == prog.sha256)
        #expect(id.privateGroup == prog.path)
        let registration = AppRegistration(program: .executable(path: prog.path, sha256: prog.sha256), applicationIdentifier: "T.app", accessGroups: ["T.shared"])
        #expect(registration.matches(id))
        #expect(registration.groups == ["T.shared", "T.app"])
        var changed = registration
        changed.program = .executable(path: prog.path, sha256: String(repeating: "0", count: 64))
        #expect(!changed.matches(id), "a different hash is a different program")
    }

    /// A `.flatpak-info` is believed only from a sandbox keychaind can verify: in the host's namespaces it proves
    /// nothing, and in namespaces of the process's own, on a writable file system, it is a forgery.
    @Test func aFlatpakInfoKeychaindCannotVerifyMakesNoFlatpak() throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        let info = "[Application]\nname=org.example.App\nruntime=runtime/x\n\n[Instance]\ninstance-id=123\n"
        try proc.process(200, exe: prog.path, files: ["root/.flatpak-info": info])
        try proc.process(201, exe: prog.path, files: ["root/.flatpak-info": info], ownNamespaces: true)
        let inspector = PeerInspector(proc: proc.root)
        let host = try inspector.identity(pid: 200, uid: 1000)
        #expect(host.program == .executable(prog.path))
        #expect(host.untrusted == nil)
        let forged = try inspector.identity(pid: 201, uid: 1000)
        #expect(forged.program == .executable(prog.path))
        #expect(forged.untrusted?.contains("writable file system") == true, "\(forged.untrusted ?? "trusted")")
        #expect(forged.privateGroup == "untrusted:" + prog.path)
        #expect(!AppRegistration(program: .flatpak("org.example.App"), applicationIdentifier: nil, accessGroups: ["g"]).matches(forged))
    }

    /// In namespaces of its own, without a sandbox keychaind can verify, a process is untrusted: its path may
    /// name anything that was mounted there.
    @Test func aProcessInNamespacesOfItsOwnIsUntrusted() throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        try proc.process(210, exe: prog.path, ownNamespaces: true)
        let id = try PeerInspector(proc: proc.root).identity(pid: 210, uid: 1000)
        #expect(id.untrusted?.contains("namespace of its own") == true)
        #expect(!AppRegistration(program: .executable(path: prog.path, sha256: id.executableSHA256), applicationIdentifier: nil, accessGroups: ["g"]).matches(id))
    }

    @Test func aSnapIsItsNameFromAppArmorNeverFromTheCgroup() throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        try proc.process(300, exe: prog.path, files: ["attr/current": "snap.firefox.firefox (enforce)\n"])
        try proc.process(301, exe: prog.path, files: ["attr/current": "unconfined\n", "cgroup": "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.slack.slack-1234.scope\n"])
        try proc.process(302, exe: prog.path, files: ["attr/current": "unconfined\n", "cgroup": "0::/user.slice/session-2.scope\n"])
        let inspector = PeerInspector(proc: proc.root)
        #expect(try inspector.identity(pid: 300, uid: 1).program == .snap("firefox"))
        #expect(try inspector.identity(pid: 301, uid: 1).program == .executable(prog.path), "any program can make a snap.NAME scope")
        #expect(try inspector.identity(pid: 302, uid: 1).program == .executable(prog.path))
        #expect(try inspector.identity(pid: 300, uid: 1).privateGroup == "snap.firefox")
    }

    @Test func aProcessThatIsGoneIsRefused() throws {
        let proc = FakeProc()
        expectKeychainError(.missingEntitlement) { try PeerInspector(proc: proc.root).identity(pid: 999, uid: 1) }
    }

    /// A process that may run code its executable did not ask for, or whose executable someone else can change, is
    /// no program keychaind can vouch for: it is identified as untrusted, matches no registration, and gets a private
    /// group apart from the program's own.
    @Test(arguments: [
        ("environ", "A=1\u{0}LD_PRELOAD=/tmp/evil.so\u{0}", "started with LD_PRELOAD set"),
        ("environ", "LD_LIBRARY_PATH=/tmp\u{0}", "started with LD_LIBRARY_PATH set"),
        ("environ", "LD_AUDIT=/tmp/audit.so\u{0}", "started with LD_AUDIT set"),
        ("status", "Name:\tprog\nTracerPid:\t4242\n", "being traced by process 4242"),
    ])
    func anInjectedOrTracedProcessIsUntrusted(file: String, contents: String, reason: String) throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        try proc.process(400, exe: prog.path, files: [file: contents])
        let id = try PeerInspector(proc: proc.root).identity(pid: 400, uid: 1000)
        #expect(id.untrusted == reason)
        #expect(id.privateGroup == "untrusted:" + prog.path)
        let registration = AppRegistration(program: .executable(path: prog.path, sha256: prog.sha256), applicationIdentifier: nil, accessGroups: ["T.shared"])
        #expect(!registration.matches(id), "an untrusted process is no registered program")
        try proc.process(401, exe: prog.path)
        #expect(registration.matches(try PeerInspector(proc: proc.root).identity(pid: 401, uid: 1000)), "the same program without it is")
    }

    @Test func anExecutableOthersCanChangeOrThatWasDeletedIsUntrusted() throws {
        let proc = FakeProc(), prog = try program()
        defer { try? FileManager.default.removeItem(atPath: prog.path) }
        try proc.process(500, exe: prog.path)
        _ = chmod(prog.path, 0o777)
        #expect(try PeerInspector(proc: proc.root).identity(pid: 500, uid: 1000).untrusted?.contains("writable by others") == true)
        _ = chmod(prog.path, 0o755)
        if getuid() == 0, chown(prog.path, 4321, 4321) == 0 {
            #expect(try PeerInspector(proc: proc.root).identity(pid: 500, uid: 1000).untrusted?.contains("belongs to user 4321") == true)
            #expect(try PeerInspector(proc: proc.root).identity(pid: 500, uid: 4321).untrusted == nil, "its owner's own process is fine")
        }
        // The kernel names an executable deleted since the process started "PATH (deleted)"; stat still reaches it.
        let deleted = prog.path + " (deleted)"
        try FileManager.default.copyItem(atPath: prog.path, toPath: deleted)
        defer { try? FileManager.default.removeItem(atPath: deleted) }
        try proc.process(501, exe: deleted)
        let id = try PeerInspector(proc: proc.root).identity(pid: 501, uid: 1000)
        #expect(id.untrusted?.contains("was deleted") == true)
        #expect(id.privateGroup == "untrusted:" + prog.path)
    }

    /// keychaind opens a client's `/proc/PID/status` once per connection and reads it again at every receive: a
    /// tracer that attaches later shows in the file kept open, and once the process is gone the file reads nothing.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"), "needs strace to trace a process"))
    func aStatusFileKeptOpenShowsATracerThatAttachesLater() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["600"]
        try child.run()
        let inspector = PeerInspector()
        let fd = inspector.openStatus(of: child.processIdentifier)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(inspector.tracer(status: fd) == 0)

        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        tracer.arguments = ["-qq", "-o", "/dev/null", "-p", "\(child.processIdentifier)"]
        try tracer.run()
        var seen = inspector.tracer(status: fd)
        for _ in 0..<2_000 where seen == 0 {  // until strace has attached
            usleep(5_000)
            seen = inspector.tracer(status: fd)
        }
        #expect(seen == tracer.processIdentifier)
        // strace leaves once the process it traces is gone. SIGKILL: a child of a test thread starts with that thread's
        // signal mask, which may block SIGTERM.
        kill(child.processIdentifier, SIGKILL)
        tracer.waitUntilExit()
        child.waitUntilExit()
        #expect(inspector.tracer(status: fd) == nil, "the process is gone")
    }

    @Test func theRegistryIsSealedAndRoundTrips() throws {
        let key = SymmetricKey(size: .bits256)
        var registry = AppRegistry()
        registry.register(AppRegistration(program: .executable(path: "/usr/bin/a", sha256: "ab"), applicationIdentifier: "T.a", accessGroups: ["T.s"]))
        registry.register(AppRegistration(program: .snap("s"), applicationIdentifier: nil, accessGroups: ["T.s"]))
        registry.register(AppRegistration(program: .executable(path: "/usr/bin/a", sha256: "cd"), applicationIdentifier: nil, accessGroups: ["T.b"]))
        #expect(registry.entries.count == 2, "registering a path again replaces it")
        let bytes = try registry.encode(key: key, random: SystemRandom())
        #expect(try AppRegistry.decode(Data(bytes), key: key) == registry)
        expectKeychainError(.corruptData) { try AppRegistry.decode(Data(bytes), key: SymmetricKey(size: .bits256)) }
        var tampered = bytes
        tampered[tampered.count - 1] ^= 1
        expectKeychainError(.corruptData) { try AppRegistry.decode(Data(tampered), key: key) }
        #expect(!String(decoding: bytes, as: UTF8.self).contains("/usr/bin/a"), "the registry is encrypted")
        #expect(registry.remove(named: "/usr/bin/a") == 1)
        #expect(registry.remove(named: "nothing") == 0)
    }
}

enum SHA256Digest {
    static func of(_ data: Data) -> [UInt8] { Array(SHA256.hash(data: data)) }
}
