import Foundation
import KeychainTestSupport
import Testing

/// `security sync`: two machines (two keychain homes) and the real `keychain-sync-server` on a real PostgreSQL, in
/// the tool's own process and through a keychaind serving each home.
@Suite("security sync")
struct SyncToolTests {
    /// One machine: its sandbox, and keychaind when the mode asks for one.
    final class Machine {
        var sandbox: Sandbox
        let daemon: KeychaindProcess?

        init(_ mode: ToolMode) throws {
            sandbox = try Sandbox()
            if mode == .keychaind {
                let daemon = try KeychaindProcess(socketPath: sandbox.root + "/d.sock", environment: sandbox.daemonEnvironment())
                sandbox.shared = daemon.environment
                self.daemon = daemon
            } else {
                daemon = nil
            }
        }

        deinit {
            daemon?.stop()
            sandbox.remove()
        }

        /// Runs `security sync <arguments>`; a run that fails is recorded with its output.
        func sync(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let result = try sandbox.run(["sync"] + arguments, timeout: 60)
            #expect(result.status == 0, "security sync \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr == "", sourceLocation: sourceLocation)
            return result.stdout
        }

        /// Adds a synchronizable generic password (service "kit") with KeychainKit, as an app would.
        func addSynchronizable(_ key: String, _ value: String) throws {
            let result = try sandbox.launch(sandbox.products + "/keychain-test-helper", ["kit-set-sync", key, value])
            #expect(result.stdout == "ok\n", "kit-set-sync: \(result.stdout) \(result.stderr)")
        }
    }

    /// The value after `name: ` on one of `output`'s lines.
    static func field(_ name: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
    }

    @Test(
        .enabled(if: SyncServerProcess.isAvailable, "needs the Network trait (swift test --traits Network) and PostgreSQL: set KEYCHAIN_TEST_POSTGRES_SOCKET (and _USER), as .ci/run does"),
        arguments: ToolMode.allCases)
    func twoMachinesJoinSyncAndPartThroughTheServer(_ mode: ToolMode) throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        let alpha = try Machine(mode), beta = try Machine(mode)

        // The first machine makes the account.
        let created = try alpha.sync(["create-account", "--server", server.url, "--name", "alpha"])
        let account = try #require(Self.field("account", in: created))
        #expect(account.count == 36)
        #expect(
            created == """
                account: \(account)
                server: \(server.url)
                To add another machine, run `security sync invite` here and `security sync join --invitation URI` there.

                """)

        // Without an invitation the second cannot ask; the first makes one, valid 15 minutes, with a URI.
        let uninvited = try beta.sandbox.run(["sync", "join", "--server", server.url, "--account", account])
        #expect(uninvited.status == 206)
        #expect(uninvited.stderr.contains("security sync invite"))
        let invited = try alpha.sync(["invite"])
        let uri = try #require(Self.field("uri", in: invited))
        #expect(uri.hasPrefix("keychain-sync://join?") && uri.contains(account))
        #expect(Self.field("invitation", in: invited)?.count == 14)
        #expect(Self.field("expires", in: invited).flatMap { try? Date($0, strategy: .iso8601) }.map { $0.timeIntervalSinceNow > 800 } == true)
        #expect(invited.hasSuffix("On the new machine run: security sync join --invitation '\(uri)'\n"))

        // The second asks to join with it and shows a code and its fingerprint.
        let pending = try beta.sync(["join", "--invitation", uri])
        let code = try #require(Self.field("code", in: pending))
        let fingerprint = try #require(Self.field("fingerprint", in: pending))
        #expect(code.count == 11 && code.dropFirst(5).first == "-")
        #expect(
            pending == """
                join: waiting for approval
                code: \(code)
                fingerprint: \(fingerprint)
                On a machine of the account run `security sync approve \(code)` and check that it prints this fingerprint; then run `security sync join --server \(server.url) --account \(account)` here again.

                """)
        #expect(Self.field("joined", in: try beta.sync(["status"])) == "no (waiting for approval: run `security sync join` again once approved)")
        // The first lists it, with the code it shows; the invitation cannot be used twice.
        let waiting = try alpha.sync(["pending"]).split(separator: "\n")
        #expect(waiting.count == 2 && waiting[0].hasPrefix("ID") && waiting[1].contains(code) && waiting[1].hasSuffix(fingerprint))
        let third = try Machine(mode)
        let reused = try third.sandbox.run(["sync", "join", "--invitation", uri])
        #expect(reused.status != 0)
        #expect(reused.stderr.contains("invitation_required"))
        // A machine the first rejects is told so when it asks again.
        let thirdPending = try third.sync(["join", "--invitation", try #require(Self.field("uri", in: try alpha.sync(["invite"])))])
        let thirdCode = try #require(Self.field("code", in: thirdPending))
        #expect(try alpha.sync(["reject", thirdCode]) == "rejected: \(thirdCode)\n")
        let rejected = try third.sandbox.run(["sync", "join", "--server", server.url, "--account", account])
        #expect(rejected.status == 3)
        #expect(rejected.stderr.contains("rejected on a machine of the account"))
        #expect(try alpha.sync(["pending"]).split(separator: "\n").count == 2)

        // A malformed code is refused with errSecParam, and says what a code looks like.
        let malformed = try alpha.sandbox.run(["sync", "approve", "NOT-A-CODE!"])
        #expect(malformed.status == 206)
        #expect(malformed.stdout == "")
        #expect(malformed.stderr.hasSuffix("security: sync approve: OSStatus -50 (see `security error -50`)\n"))
        #expect(malformed.stderr.contains("XXXXX-XXXXX"))

        // The first approves it, showing the same fingerprint; the second joins.
        let approved = try alpha.sync(["approve", code, "--name", "beta"])
        #expect(
            approved == """
                approved: beta
                fingerprint: \(fingerprint)
                Check that the new machine printed this fingerprint; if it did not, remove it with `security sync remove-device ID` (`security sync devices` lists it).

                """)
        // Joining completes with the first round, which says what it did.
        let joined = try beta.sync(["join", "--server", server.url, "--account", account])
        #expect(joined.hasPrefix("join: joined account \(account)\napplied: 0\nuploaded: 0\n"))
        #expect(Self.field("received", in: joined) == "0 records, 0 B")

        // An item added on the first appears on the second after a round on each. keychaind's background rounds (after
        // the write, on push) may carry it first: then a round finds nothing left to do, and its counts are zero.
        try alpha.addSynchronizable("shared", "s3cret")
        let uploaded = try alpha.sync(["now"])
        let applied = try beta.sync(["now"])
        if mode == .inProcess {
            #expect(uploaded.hasPrefix("applied: 0\nuploaded: 1\nconflicts resolved: 0\nrejected: 0\nreceived: 0 records, 0 B\nsent: 1 record, "))
            #expect(applied.hasPrefix("applied: 1\nuploaded: 0\nconflicts resolved: 0\nrejected: 0\nreceived: 1 record, "))
            #expect(applied.hasSuffix("\nsent: 0 records, 0 B\n"))
        }
        let found = try beta.sandbox.run(["find-generic-password", "-s", "kit", "-a", "shared", "-w"])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout == "s3cret\n")

        // Both machines list both devices, each marking itself.
        let listed = try alpha.sync(["devices"])
        let lines = listed.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("ID") == true)
        #expect(lines.first?.contains("NAME") == true && lines.first?.contains("ADDED") == true && lines.first?.contains("FINGERPRINT") == true)
        let alphaLine = try #require(lines.first { $0.contains("  alpha  ") })
        let betaLine = try #require(lines.first { $0.contains("  beta  ") })
        #expect(alphaLine.hasSuffix("  this device"))
        #expect(betaLine.hasSuffix(fingerprint))
        let betaID = String(betaLine.prefix { $0 != " " })
        #expect(betaID.count == 32)
        let fromBeta = try beta.sync(["devices"])
        #expect(fromBeta.split(separator: "\n").first { $0.hasPrefix(betaID) }?.hasSuffix("  this device") == true)

        // The status says where sync stands.
        let status = try alpha.sync(["status"])
        #expect(Self.field("account", in: status) == account)
        #expect(Self.field("server", in: status) == server.url)
        #expect(Self.field("device", in: status)?.count == 32)
        #expect(Self.field("joined", in: status) == "yes")
        #expect(Self.field("last sync", in: status).flatMap { try? Date($0, strategy: .iso8601) } != nil)
        #expect(Self.field("pending changes", in: status) == "0")
        #expect(Self.field("conflicts resolved", in: status) == "0")
        #expect(["connected", "not connected"].contains(Self.field("push", in: status) ?? ""))

        // The first removes the second: the list holds only itself.
        #expect(try alpha.sync(["remove-device", betaID]) == "removed: \(betaID)\n")
        let after = try alpha.sync(["devices"]).split(separator: "\n")
        #expect(after.count == 2)
        #expect(after.last?.hasSuffix("  this device") == true)

        // The second learns it at its next round: exit 3, saying when, by whom, and how to join again; its status
        // says the same.
        let refused = try beta.sandbox.run(["sync", "now"])
        #expect(refused.status == 3)
        #expect(refused.stdout == "")
        #expect(refused.stderr.contains("This machine was removed from account \(account) on "))
        #expect(refused.stderr.contains(" by alpha, and no longer syncs."))
        #expect(refused.stderr.contains("security sync join --server \(server.url) --account \(account)"))
        let removedStatus = try beta.sync(["status"])
        #expect(Self.field("joined", in: removedStatus)?.hasPrefix("no (removed from account \(account) on ") == true)
        #expect(Self.field("joined", in: removedStatus)?.contains(" by alpha; to sync again run `security sync join") == true)
        #expect(try beta.sandbox.run(["sync", "devices"]).status == 3)

        // Joining again asks afresh (with a new invitation), with a new device key and so a new code; once
        // approved it joins.
        let reinvited = try #require(Self.field("uri", in: try alpha.sync(["invite"])))
        let again = try beta.sync(["join", "--invitation", reinvited])
        let newCode = try #require(Self.field("code", in: again))
        #expect(newCode != code)
        #expect(Self.field("fingerprint", in: again) != fingerprint)
        _ = try alpha.sync(["approve", newCode, "--name", "beta again"])
        #expect(try beta.sync(["join", "--server", server.url, "--account", account]).hasPrefix("join: joined account \(account)\n"))
        #expect(Self.field("joined", in: try beta.sync(["status"])) == "yes")
    }

    @Test(
        .enabled(if: SyncServerProcess.isAvailable, "needs the Network trait (swift test --traits Network) and PostgreSQL: set KEYCHAIN_TEST_POSTGRES_SOCKET (and _USER), as .ci/run does"),
        arguments: ToolMode.allCases)
    func itemsTheToolMakesSynchronizableReachTheOtherMachines(_ mode: ToolMode) throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        let alpha = try Machine(mode), beta = try Machine(mode), gamma = try Machine(mode)
        let account = try #require(Self.field("account", in: try alpha.sync(["create-account", "--server", server.url, "--name", "alpha"])))
        for (machine, name) in [(beta, "beta"), (gamma, "gamma")] {
            let invitation = try #require(Self.field("invitation", in: try alpha.sync(["invite"])))
            let pending = try machine.sync(["join", "--server", server.url, "--account", account, "--invitation", invitation])
            _ = try alpha.sync(["approve", try #require(Self.field("code", in: pending)), "--name", name])
            _ = try machine.sync(["join", "--server", server.url, "--account", account])
        }
        func add(_ machine: Machine, _ arguments: [String], password: String) throws {
            let result = try machine.sandbox.launch(
                machine.sandbox.tool, ["add-generic-password"] + arguments + ["--password-stdin"], input: Data((password + "\n").utf8))
            #expect(result.status == 0, "add-generic-password \(arguments): \(result.stderr)")
        }
        func password(_ machine: Machine, _ service: String) throws -> String? {
            let found = try machine.sandbox.run(["find-generic-password", "-s", service, "-w"])
            return found.status == 0 ? found.stdout : nil
        }
        func dump(_ machine: Machine) throws -> [String] {
            try machine.sandbox.run(["dump-keychain"]).stdout.components(separatedBy: "keychain: ").filter { !$0.isEmpty }
        }
        func syncAll() throws {
            for machine in [alpha, beta, gamma, alpha] { _ = try machine.sync(["now"]) }
        }

        // --sync on the first machine reaches the other two through the server; dump-keychain says it syncs.
        try add(alpha, ["-s", "web.example.com", "-a", "ann", "--sync"], password: "synced secret")
        try add(alpha, ["-s", "local.example.com", "-a", "ann"], password: "local secret")
        let listed = try dump(alpha)
        #expect(listed.first { $0.contains("\"web.example.com\"") }?.contains("\nsync: yes\n") == true)
        #expect(listed.first { $0.contains("\"local.example.com\"") }?.contains("sync: yes") == false)
        try syncAll()
        for machine in [beta, gamma] {
            #expect(try password(machine, "web.example.com") == "synced secret\n")
            #expect(try password(machine, "local.example.com") == nil)
        }

        // An existing local item is made synchronizable by find's selectors, and local again.
        #expect(try alpha.sync(["items", "add", "generic-password", "-s", "local.example.com"]) == "synchronizable: 1\n")
        try syncAll()
        #expect(try password(gamma, "local.example.com") == "local secret\n")
        let none = try alpha.sandbox.run(["sync", "items", "add", "generic-password", "-s", "local.example.com"])
        #expect(none.status == 44)
        #expect(try alpha.sync(["items", "remove", "generic-password", "-s", "local.example.com"]) == "local: 1\n")
        try syncAll()
        #expect(try password(gamma, "local.example.com") == nil)
        #expect(try password(alpha, "local.example.com") == "local secret\n")
        let unchosen = try alpha.sandbox.run(["sync", "items", "add", "generic-password"])
        #expect(unchosen.status != 0)
        #expect(unchosen.stderr.contains("--all"))

        // An item whose access control needs the user's presence stays behind, and says so.
        try add(alpha, ["-s", "pinned.example.com", "-a", "ann", "--access-control", "userPresence"], password: "pinned")
        #expect(
            try alpha.sync(["items", "add", "generic-password", "-s", "pinned.example.com"])
                == "synchronizable: 0\nleft on this machine: 1 (ThisDeviceOnly accessibility, or an access control that needs your presence)\n")

        // The keychain's setting: new items sync unless --no-sync.
        #expect(try alpha.sync(["default"]) == "new items sync: off\n")
        #expect(try alpha.sync(["default", "on"]) == "new items sync: on\n")
        #expect(try alpha.sync(["default"]) == "new items sync: on\n")
        try add(alpha, ["-s", "auto.example.com", "-a", "ann"], password: "follows the setting")
        try add(alpha, ["-s", "kept.example.com", "-a", "ann", "--no-sync"], password: "stays")
        try syncAll()
        #expect(try password(beta, "auto.example.com") == "follows the setting\n")
        #expect(try password(beta, "kept.example.com") == nil)
        #expect(try alpha.sync(["default", "off"]) == "new items sync: off\n")
    }

    /// A keychain in no account: `status` says so and how to make or join one; `now` fails with errSecItemNotFound
    /// (exit 44) saying the same. No server is needed for either.
    @Test(arguments: ToolMode.allCases)
    func aKeychainInNoAccount(_ mode: ToolMode) throws {
        let machine = try Machine(mode)
        #expect(
            try machine.sync(["status"]) == """
                account: none
                Make an account with `security sync create-account --server URL`, or join one with `security sync join --server URL --account ID`.

                """)
        let now = try machine.sandbox.run(["sync", "now"])
        #expect(now.status == 44)
        #expect(now.stdout == "")
        #expect(now.stderr.hasPrefix("security: sync now: The specified item could not be found in the keychain.\nsecurity: "))
        #expect(now.stderr.contains("security sync create-account"))
        #expect(now.stderr.contains("security sync join"))
    }

    /// An address that is not an http or https URL is refused before anything is sent: errSecParam.
    @Test func aServerThatIsNotAURLIsRefused() throws {
        let machine = try Machine(.inProcess)
        let result = try machine.sandbox.run(["sync", "create-account", "--server", "ftp://example.com"])
        #expect(result.status == 206)
        #expect(
            result.stderr == """
                security: 'ftp://example.com' is not a sync server's address: give an https (or http) URL, like https://sync.example.com.
                security: sync create-account: OSStatus -50 (see `security error -50`)

                """)
    }
}
