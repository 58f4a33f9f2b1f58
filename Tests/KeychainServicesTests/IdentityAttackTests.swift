import Foundation
import KeychainClient
import KeychainCore
import KeychainProtocol
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on how keychaind tells who is asking, run as an attacker running as the same user would, against a real
/// keychaind: a registered program ("vault") keeps a secret in its group, and the attacker, an unregistered program,
/// tries to be served as the vault program.
@Suite(.serialized) struct IdentityAttackTests {
    final class Vault: @unchecked Sendable {
        let fixture: DaemonFixture
        let program: String
        let daemon: DaemonProcess
        let environment: [String: String]

        init() throws {
            fixture = try DaemonFixture()
            program = try fixture.program("vault")
            try registerProgram(fixture.engine, path: program, groups: ["TEAM.vault"])
            daemon = try DaemonProcess(home: fixture.home)
            environment = try fixture.environment(daemon)
            let stored = try runProgram(program, ["add", "crown", "svc", "jewels"], environment: environment)
            guard stored.stdout == "status=0\n" else { throw TestProcessError("the vault could not store its secret: \(stored.stdout)\(stored.stderr)") }
        }

        /// What the vault program gets for its own secret with `extra` in its environment (and `prefix` before it).
        func find(extra: [String: String] = [:], prefix: [String] = []) throws -> ProgramRun {
            var env = environment
            for (key, value) in extra { env[key] = value }
            let command = prefix + [program, "find", "crown", "svc", "TEAM.vault"]
            return try runProgram(command[0], Array(command.dropFirst()), environment: env)
        }

        /// The request an attacker sends: the vault's secret, asked for in the vault's group.
        var request: [UInt8] {
            var query = ItemQuery(itemClass: .genericPassword)
            query.attributes = ["acct": .string("crown"), "svce": .string("svc")]
            query.returns.data = true
            return Frame(id: 1, body: .request(.find(query, claim: ["TEAM.vault"]))).encoded
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Attacks/borrow_identity.py").path
    }

    /// The attacker connects, then the process that connected execs the vault program while a child keeps the
    /// socket, with keychaind paused at random points so that it may look at the process only after the exec; 1,000
    /// runs of each variant. Before the per-request identity, this was served as the vault 8 times in 10, and every
    /// time keychaind was paused.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the attacker is a Python script"),
        arguments: ["fork-keep", "send-then-exec", "greet-send-exec"])
    func aConnectionCarriedAcrossExecBorrowsNoIdentity(variant: String) throws {
        let vault = try Vault()
        #expect(try vault.find().stdout == "status=0\ndata=jewels\nagrp=TEAM.vault\n", "the vault itself is served")
        let output = try Self.spawnAndWait(
            [
                "/usr/bin/python3",
                Self.script, vault.daemon.socketPath, vault.program, Self.hex(vault.request), Self.hex(Array("jewels".utf8)),
                "1000", variant, "\(vault.daemon.process.processIdentifier)", "\(variant.utf8.count)",
            ], folder: vault.fixture.folder)
        kill(vault.daemon.process.processIdentifier, SIGCONT)
        let counts = Dictionary(
            uniqueKeysWithValues: output.split(whereSeparator: \.isWhitespace).compactMap { pair -> (String, Int)? in
                let parts = pair.split(separator: "=")
                guard parts.count == 2, let value = Int(parts[1]) else { return nil }
                return (String(parts[0]), value)
            })
        #expect(counts["borrowed"] == 0, "\(output)")
        #expect((counts["answered"] ?? 0) + (counts["refused"] ?? 0) + (counts["lost"] ?? 0) == 1000, "every run finished: \(output)")
        #expect(try vault.find().stdout == "status=0\ndata=jewels\nagrp=TEAM.vault\n", "keychaind still serves the vault")
    }

    /// Runs `command` with its output in a file and waits for it with `waitpid`. (Foundation's Process is not used:
    /// the attack stops and continues keychaind, another child of this process, and the child-state signals that
    /// brings were seen to leave Process waiting on a script that had exited.)
    static func spawnAndWait(_ command: [String], folder: String) throws -> String {
        let outputPath = folder + "/attack-\(UUID().uuidString.prefix(6)).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, outputPath + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, &argv, environ)
        guard spawned == 0 else { throw TestProcessError("cannot start \(command[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: outputPath + ".err", encoding: .utf8)) ?? ""
        guard output.contains("borrowed=") else { throw TestProcessError("the attack script failed: \(output)\(errors)") }
        return output
    }

    /// A registered program started with the dynamic loader told to load other code gets no registered identity: the
    /// code it was made to load would otherwise act as the program. It is served as an untrusted program, with a
    /// private group apart from the program's own.
    @Test(arguments: [("LD_PRELOAD", "inject.so"), ("LD_LIBRARY_PATH", "lib"), ("LD_AUDIT", "audit.so")])
    func aProgramStartedWithLoaderVariablesGetsNoRegisteredIdentity(variable: String, file: String) throws {
        let vault = try Vault()
        // A library the loader really loads (a copy of the C library's libm) for LD_PRELOAD and LD_AUDIT; a folder for
        // LD_LIBRARY_PATH.
        let target = vault.fixture.folder + "/" + file
        if file.hasSuffix(".so"),
            let libm = [
                "/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6",
            ].first(where: FileManager.default.fileExists)
        {
            try FileManager.default.copyItem(atPath: libm, toPath: target)
        } else {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        }
        let run = try vault.find(extra: [variable: target])
        #expect(run.stdout == "status=-34018\n", "its claim to the vault's group is refused: \(run.stdout)\(run.stderr)")
        #expect(vault.daemon.logs("started with \(variable) set"))
        var env = vault.environment
        env[variable] = target
        let own = try runProgram(vault.program, ["find", "crown", "svc"], environment: env)
        #expect(own.stdout == "status=-25300\n", "its own items are not the vault's: \(own.stdout)")
        #expect(try vault.find().stdout == "status=0\ndata=jewels\nagrp=TEAM.vault\n")
    }

    /// A registered program under a tracer (here strace, which could change what it sends) gets no registered
    /// identity.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"), "needs strace to trace a client"))
    func aTracedProgramGetsNoRegisteredIdentity() throws {
        let vault = try Vault()
        let run = try vault.find(prefix: ["/usr/bin/strace", "-f", "-qq", "-o", "/dev/null"])
        #expect(run.stdout == "status=-34018\n", "\(run.stdout)\(run.stderr)")
        #expect(vault.daemon.logs("being traced by process"))
    }

    /// 256 connections each holding the start of a maximal frame (16 MiB announced, up to 2 MiB sent) keep keychaind
    /// under 256 MiB of memory while the vault is served: frames in flight share a 64 MiB budget, and a connection
    /// whose frame does not fit is closed.
    @Test func partialMaximalFramesDoNotExhaustTheDaemon() throws {
        let vault = try Vault()
        var holders: [Int32] = []
        defer { for fd in holders { close(fd) } }
        let announced = UInt32(Frame.maximumLength)
        let header: [UInt8] = [
            UInt8(announced >> 24), UInt8(announced >> 16 & 0xFF), UInt8(announced >> 8 & 0xFF), UInt8(announced & 0xFF),
            Frame.version, 1, 0, 0, 0, 1,
        ]
        let body = [UInt8](repeating: 0x41, count: 64 << 10)
        for _ in 0..<256 {
            let fd = try DaemonSocket.connect(vault.daemon.socketPath)
            holders.append(fd)
            var greeting = [UInt8](repeating: 0, count: 64)
            _ = greeting.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            _ = header.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            for _ in 0..<32 {
                let n = body.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if n <= 0 { break }
            }
        }
        #expect(try vault.find().stdout == "status=0\ndata=jewels\nagrp=TEAM.vault\n", "a normal client is served meanwhile")
        let status = try String(contentsOfFile: "/proc/\(vault.daemon.process.processIdentifier)/status", encoding: .utf8)
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap { line in
            line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { Int($0) }
        }
        #expect(peak != nil)
        #expect((peak ?? .max) < 256 << 10, "keychaind's peak resident memory: \(peak ?? -1) KiB")
        #expect(vault.daemon.logs("frames in flight over the limit"))
    }
}
