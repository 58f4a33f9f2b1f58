import Foundation
import KeychainTestSupport
import Testing

/// A program built on Keychain Services sees the same items whether it opened the keychain itself or reached it
/// through the keychaind it started on demand, including items it stored under its old in-process group (issue 30).
@Suite struct AutostartTests {
    func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("kc-auto-\(UUID().uuidString.prefix(8))").path
    }

    @Test func anItemAddedInProcessIsFoundThroughTheKeychaindStartedOnDemand() throws {
        let home = folder()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let daemon = AutostartedDaemon(home: home)
        defer { daemon.stop() }
        let inProcess = baseEnvironment(home: home)
        var onDemand = inProcess
        onDemand.removeValue(forKey: "KEYCHAIN_DAEMON_SOCKET")
        let helper = URL(fileURLWithPath: try BuiltProducts.path(of: "keychain-test-helper")).resolvingSymlinksInPath().path

        var r = try runHelper(["add", "alice", "svc", "s3cret"], environment: inProcess)
        #expect(r.stdout == "status=0\n")
        #expect(!daemon.isRunning)
        r = try runHelper(["find", "alice", "svc"], environment: onDemand)
        #expect(r.stdout == "status=0\ndata=s3cret\nagrp=\(helper)\n", "\(r.stderr)")
        #expect(daemon.isRunning, "no keychaind was started: \(daemon.log)")
        // From now on the keychain is reached through that keychaind only, even by a program that asks for none.
        r = try runHelper(["add", "bob", "svc", "x"], environment: inProcess)
        #expect(r.stdout == "status=0\n")
        r = try runHelper(["find", "bob", "svc"], environment: onDemand)
        #expect(r.stdout == "status=0\ndata=x\nagrp=\(helper)\n")
        // Stopped (as when it exits idle), it is started again, for such a program too.
        let first = try #require(daemon.pid)
        #expect(daemon.stop())
        r = try runHelper(["find", "bob", "svc"], environment: inProcess)
        #expect(r.stdout == "status=0\ndata=x\nagrp=\(helper)\n", "\(r.stderr)")
        #expect(daemon.isRunning && daemon.pid != first, "\(daemon.log)")
    }

    @Test func itemsStoredUnderTheOldInProcessGroupAreMovedOnce() throws {
        let home = folder()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let env = baseEnvironment(home: home)
        let helper = URL(fileURLWithPath: try BuiltProducts.path(of: "keychain-test-helper")).resolvingSymlinksInPath().path
        // The old rule: a program's private group was its executable's name.
        let security = try BuiltProducts.path(of: "security")
        let added = try runProgram(
            security,
            [
                "add-generic-password", "-a", "carol", "-s", "svc", "-w", "old",
                "--access-group", "keychain-test-helper",
            ], environment: env)
        #expect(added.status == 0, "\(added.stderr)")
        var r = try runHelper(["find", "carol", "svc"], environment: env)
        #expect(r.stdout == "status=0\ndata=old\nagrp=\(helper)\n", "\(r.stderr)")
        // Nothing is left under the old name.
        let old = try runProgram(security, ["find-generic-password", "-a", "carol", "--access-group", "keychain-test-helper"], environment: env)
        #expect(old.status == 44)
        r = try runHelper(["find", "carol", "svc"], environment: env)
        #expect(r.stdout == "status=0\ndata=old\nagrp=\(helper)\n")
    }
}
