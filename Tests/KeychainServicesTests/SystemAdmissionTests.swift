import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let canTrace =
    getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    && FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")

/// With the system keychaind installed, a user at its connection limit is refused with a message naming the system
/// socket, and the client tries nothing else: no other socket, no file of the user's (issue 30). Other users are
/// still served.
@Suite(.serialized, .enabled(if: canTrace, "runs keychaind as the keychain system user and clients as other uids under strace, which needs root"))
struct SystemAdmissionTests {
    static let userA: UInt32 = 47_011
    static let userB: UInt32 = 47_012

    @Test func aUserAtTheLimitIsRefusedByTheSystemKeychaindAndNothingElseIsTried() throws {
        let daemon = try SystemDaemon(arguments: ["--max-connections-per-user", "1"])
        defer { daemon.stop() }
        // User A's own folders: a keychain of its own and a per-user keychaind's socket it must not fall back to.
        let home = daemon.folder + "/home-a", runtime = daemon.folder + "/run-a"
        for path in [home + "/.local/share/keychain", runtime + "/keychain"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        for path in [home, home + "/.local", home + "/.local/share", home + "/.local/share/keychain", runtime, runtime + "/keychain"] {
            _ = chown(path, Self.userA, Self.userA)
        }
        let environment = ["PATH": "/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": runtime, "KEYCHAIN_SYSTEM_SOCKET": daemon.socket]

        // A holds its one connection.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        holder.arguments = [
            "--reuid=\(Self.userA)", "--regid=\(Self.userA)", "--clear-groups",
            try BuiltProducts.path(of: "keychain-test-helper"), "add-and-hold", "held", "svc", "v",
        ]
        holder.environment = environment
        let output = Pipe()
        holder.standardOutput = output
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        // SIGKILL: children of the test runner may have SIGTERM blocked.
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let first = output.fileHandleForReading.availableData
        #expect(String(decoding: first, as: UTF8.self).hasPrefix("status=0"))

        // A's next client, traced: refused, naming the system socket; nothing else connected to or opened.
        let trace = daemon.folder + "/trace"
        let refused = try ProgramRun.run(
            "/usr/bin/strace",
            [
                "-f", "-qq", "-e", "trace=connect,open,openat", "-o", trace,
                "/usr/bin/setpriv", "--reuid=\(Self.userA)", "--regid=\(Self.userA)", "--clear-groups",
                try BuiltProducts.path(of: "security"), "find-generic-password", "-a", "held", "-s", "svc",
            ],
            environment: environment, timeout: 120)
        #expect(refused.status != 0)
        let firstLine = refused.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.contains("keychaind at \(daemon.socket) refused the connection: user \(Self.userA) already has 1 connections to keychaind"), "\(refused.stderr)")
        let calls = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        // The C library's own sockets (nscd for user names, syslog) are not keychaind's.
        let connects = calls.split(separator: "\n").filter { $0.contains("connect(") && $0.contains("AF_UNIX") }
            .filter { !$0.contains("/nscd/") && !$0.contains("\"/dev/log\"") }
        #expect(!connects.isEmpty)
        for call in connects { #expect(call.contains("sun_path=\"\(daemon.socket)\""), "connected elsewhere: \(call)") }
        #expect(!calls.contains(home), "opened a file of the user's: \(calls.split(separator: "\n").filter { $0.contains(home) })")
        #expect(!calls.contains(runtime), "looked at the per-user socket: \(calls.split(separator: "\n").filter { $0.contains(runtime) })")

        // Another user is still served.
        #expect(try daemon.helper(as: Self.userB, ["add", "mail", "svc", "b"], environment: ["KEYCHAIN_SYSTEM_SOCKET": daemon.socket, "KEYCHAIN_DAEMON_SOCKET": ""]).stdout == "status=0\n")
    }
}
