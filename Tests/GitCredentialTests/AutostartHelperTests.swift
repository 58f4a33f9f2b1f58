import Foundation
import KeychainTestSupport
import Testing

/// git's helper finds the same credentials whether it opened the keychain itself or reached it through the keychaind
/// it started on demand: the same program has the same private group either way (issue 30).
@Suite struct AutostartHelperTests {
    /// Through the keychaind the helper starts on demand (no `KEYCHAIN_DAEMON_SOCKET`).
    static let onDemand: [String: String?] = ["KEYCHAIN_DAEMON_SOCKET": nil]

    @Test func aCredentialStoredInProcessIsFoundThroughTheKeychaindStartedOnDemand() throws {
        let sb = try HelperSandbox()
        defer { sb.remove() }
        let daemon = AutostartedDaemon(home: sb.keychainHome)
        defer { daemon.stop() }
        var r = try sb.run(sb.helper, ["store"], input: Data("protocol=https\nhost=example.com\nusername=u\npassword=p\n".utf8))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!daemon.isRunning)
        r = try sb.run(sb.helper, ["get"], input: Data("protocol=https\nhost=example.com\n".utf8), environment: Self.onDemand)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "username=u\npassword=p\n")
        #expect(daemon.isRunning, "no keychaind was started: \(daemon.log)")
        // git stores nothing twice: a store of the same credential through keychaind replaces it.
        r = try sb.run(
            sb.helper, ["store"], input: Data("protocol=https\nhost=example.com\nusername=u\npassword=p2\n".utf8),
            environment: Self.onDemand)
        #expect(r.status == 0, "\(r.stderr)")
        r = try sb.run(try BuiltProducts.path(of: "security"), ["dump-keychain"], environment: ["KEYCHAIN_DAEMON_SOCKET": nil])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.components(separatedBy: "\"srvr\"<blob>=\"example.com\"").count == 2, "\(r.stdout)")
    }

    @Test func aCredentialStoredUnderTheOldInProcessGroupIsFoundAgain() throws {
        let sb = try HelperSandbox()
        defer { sb.remove() }
        let daemon = AutostartedDaemon(home: sb.keychainHome)
        defer { daemon.stop() }
        // Before 0.30 the helper's items went to a group named after its executable, not its path.
        let security = try BuiltProducts.path(of: "security")
        var r = try sb.run(
            security,
            [
                "add-internet-password", "-s", "example.com", "-a", "u", "-r", "htps", "-w", "old",
                "--access-group", "git-credential-keychain",
            ])
        #expect(r.status == 0, "\(r.stderr)")
        r = try sb.run(sb.helper, ["get"], input: Data("protocol=https\nhost=example.com\n".utf8), environment: Self.onDemand)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "username=u\npassword=old\n")
        // Moved once, to the helper's path: found again in process too.
        r = try sb.run(sb.helper, ["get"], input: Data("protocol=https\nhost=example.com\n".utf8))
        #expect(r.stdout == "username=u\npassword=old\n")
        // In the helper's group now. (Its secret is the helper's: the security tool lists the item, and would need the
        // person's approval to read the secret.)
        let helper = URL(fileURLWithPath: sb.helper).resolvingSymlinksInPath().path
        r = try sb.run(security, ["dump-keychain"])
        #expect(r.stdout.contains("access group: \"\(helper)\""), "\(r.stdout)\(r.stderr)")
    }
}
