import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// With no keychaind running and no systemd, the first keychain call starts one, and an unlock lasts for every later
/// command of every program until the keychain locks (issue 30).
@Suite struct AutostartToolTests {
    /// A run that lets the tool start its keychaind (no `KEYCHAIN_DAEMON_SOCKET`).
    static let onDemand = ["KEYCHAIN_DAEMON_SOCKET": ""]

    @Test func theFirstCommandStartsKeychaindAndAnUnlockLastsForLaterCommands() throws {
        try withKeychain { kc in
            let daemon = AutostartedDaemon(home: kc.home)
            defer { daemon.stop() }
            #expect(!daemon.isRunning)
            var r = try kc.launch(
                kc.tool, ["add-generic-password", "-a", "a", "-s", "s", "--password-stdin"],
                environment: Self.onDemand, input: Data("the secret\n".utf8))
            #expect(r.status == 0, "\(r.stderr)")
            #expect(daemon.isRunning, "no keychaind was started: \(daemon.log)")
            let pid = try #require(daemon.pid)

            // Each item shows its access group: the tool's own, by its full path.
            r = try kc.run(["dump-keychain"], environment: Self.onDemand)
            let tool = URL(fileURLWithPath: kc.tool).resolvingSymlinksInPath().path
            #expect(r.stdout.contains("access group: \"\(tool)\"\n"), "\(r.stdout)")

            r = try kc.launch(
                kc.tool, ["set-keychain-password", "--new-password-stdin"], environment: Self.onDemand,
                input: Data("pass phrase\n".utf8))
            #expect(r.status == 0, "\(r.stderr)")
            r = try kc.launch(
                kc.tool, ["unlock-keychain", "--password-stdin"], environment: Self.onDemand,
                input: Data("pass phrase\n".utf8))
            #expect(r.status == 0, "\(r.stderr)")
            // A new process, no terminal, nothing on standard input: nothing to ask with, and nothing is asked.
            r = try kc.run(["find-generic-password", "-a", "a", "-s", "s", "-w"], environment: Self.onDemand, detached: true)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == "the secret\n")

            r = try kc.run(["daemon", "status"], environment: Self.onDemand)
            #expect(r.status == 0, "\(r.stderr)")
            let lines = r.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "keychaind: running (pid \(pid))")
            #expect(lines.contains("socket: \(daemon.socket)"))
            #expect(lines.contains("mode: per-user (started on demand)"))
            #expect(lines.contains("lock state: unlocked"))
            #expect(lines.contains { $0.hasPrefix("uptime: ") })
            // The same keychaind served every command.
            #expect(daemon.pid == pid)
        }
    }

    @Test func createKeychainLeavesTheNewKeychainUnlockedForLaterCommands() throws {
        try withKeychain { kc in
            let daemon = AutostartedDaemon(home: kc.home)
            defer { daemon.stop() }
            var r = try kc.run(["create-keychain", "-p", "pw", "other"], environment: Self.onDemand)
            #expect(r.status == 0, "\(r.stderr)")
            r = try kc.launch(
                kc.tool, ["add-generic-password", "-a", "a", "-s", "s", "--password-stdin", "other"],
                environment: Self.onDemand, input: Data("in other\n".utf8))
            #expect(r.status == 0, "\(r.stderr)")
            r = try kc.run(["find-generic-password", "-a", "a", "-s", "s", "-w", "other"], environment: Self.onDemand, detached: true)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == "in other\n")
        }
    }

    @Test func statusSaysWhenNoKeychaindIsUsedOrRunning() throws {
        try withKeychain { kc in
            var r = try kc.run(["daemon", "status"])
            #expect(r.status == 1)
            #expect(r.stdout.hasPrefix("keychaind: not used (KEYCHAIN_DAEMON_SOCKET=off"))
            r = try kc.run(["daemon", "status"], environment: Self.onDemand)
            #expect(r.status == 1)
            #expect(r.stdout == "keychaind: not running (socket \(kc.home)/run/keychaind.sock; the next keychain call starts it)\n")
            // Asking about keychaind starts none.
            #expect(!AutostartedDaemon(home: kc.home).isRunning)
        }
    }

    @Test func aKeychaindStartedOnDemandExitsWhenIdleAndUnlocked() throws {
        try withKeychain { kc in
            let keychaind = URL(fileURLWithPath: kc.tool).deletingLastPathComponent().appendingPathComponent("keychaind").path
            let socket = kc.root + "/idle.sock"
            // Nothing unlocked with a passcode and no connection: it exits by itself, and takes its socket with it.
            let r = try kc.launch(keychaind, ["--socket", socket, "--exit-when-idle", "1"], timeout: 60)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("exiting: idle with nothing unlocked"))
            #expect(!FileManager.default.fileExists(atPath: socket))
        }
    }
}
