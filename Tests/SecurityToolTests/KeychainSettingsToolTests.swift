import Foundation
import KeychainTestSupport
import Testing
import KeychainClient
import KeychainCore

@Suite("security: error, show-keychain-info, set-keychain-settings")
struct KeychainSettingsToolTests {
    @Test func errorPrintsApplesMessageForEachCode() throws {
        try withKeychain { kc in
            let r = try kc.run(["error", "-25300", "0xFFFF9D28", "0", "-34018"])
            #expect(r.status == 0)
            #expect(r.stderr == "")
            #expect(
                r.stdout == """
                    Error: 0xFFFF9D2C -25300 The specified item could not be found in the keychain.
                    Error: 0xFFFF9D28 -25304 The specified item is no longer valid. It may have been deleted from the keychain.
                    Error: 0x00000000 0 No error.
                    Error: 0xFFFF7B1E -34018 A required entitlement isn't present.

                    """)
            let bad = try kc.run(["error", "banana"])
            #expect(bad.status == 2)
            #expect(bad.stdout == "")
            #expect(bad.stderr.contains("'banana' is not an error code"))
            #expect(try kc.run(["error"]).status == 2)
        }
    }

    @Test func settingsAreShownAsMacOSShowsThem() throws {
        try withKeychain { kc in
            let path = kc.home + "/keychain-2.db"
            try kc.succeed(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"])
            #expect(try kc.run(["show-keychain-info"]).stdout == "Keychain \"\(path)\" timeout=600s\n")
            // The path it prints names the keychain again.
            #expect(try kc.run(["show-keychain-info", path]).stdout == "Keychain \"\(path)\" timeout=600s\n")
            try kc.succeed(["set-keychain-settings", "-l", "-t", "3600"])
            #expect(try kc.run(["show-keychain-info"]).stdout == "Keychain \"\(path)\" lock-on-sleep timeout=3600s\n")
            try kc.succeed(["set-keychain-settings", "-u"])
            #expect(try kc.run(["show-keychain-info"]).stdout == "Keychain \"\(path)\" timeout=300s\n")
            try kc.succeed(["set-keychain-settings"])
            #expect(try kc.run(["show-keychain-info", "login.keychain"]).stdout == "Keychain \"\(path)\" no-timeout\n")
            let bad = try kc.run(["set-keychain-settings", "-t", "0"])
            #expect(bad.status == 2)
            #expect(try kc.run(["show-keychain-info"]).stdout == "Keychain \"\(path)\" no-timeout\n", "a refused change changes nothing")
        }
    }

    /// The pinentry reads the passcode, so a setting may only pick an installed one, in a program's own process
    /// and through keychaind alike; the refused change changes nothing.
    @Test func onlyAnInstalledPinentryCanBeSet() throws {
        try withKeychain { kc in
            let daemon = try SandboxDaemon(kc)
            let settingsFile = kc.home + "/keychain.settings"
            for env in [[:], daemon.environment] {
                let planted = try kc.run(["set-keychain-settings", "--pinentry", "/tmp/x"], environment: env)
                #expect(planted.status == 206, "errSecParam (-50) as the exit status: \(planted.stdout)\(planted.stderr)")
                #expect(planted.stderr.contains("`/tmp/x` is not an installed pinentry"), "\(planted.stderr)")
                #expect((try? String(contentsOfFile: settingsFile, encoding: .utf8))?.contains("/tmp/x") != true)
            }
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/pinentry-curses") {
                let installed = try kc.run(["set-keychain-settings", "--pinentry", "/usr/bin/pinentry-curses"], environment: daemon.environment)
                #expect(installed.status == 0, "\(installed.stderr)")
                #expect(try String(contentsOfFile: settingsFile, encoding: .utf8).contains("/usr/bin/pinentry-curses"))
            }
            #expect(daemon.stop() == 0)
        }
    }

    @Test func keychaindLocksAfterTheTimeoutTheSettingsGive() throws {
        try withKeychain { kc in
            let daemon = try SandboxDaemon(kc)
            let env = daemon.environment
            #expect(try kc.run(["set-keychain-password", "-p", "pw-1"], environment: env, detached: true).status == 0)
            func status() throws -> String { try kc.run(["daemon", "status"], environment: env).stdout }
            #expect(try status().contains("\nlock state: unlocked\n"))
            // The daemon started with its 600 s default; the settings shorten it while it runs. The tool reaches the
            // daemon through the keychain's folder (keychaind.serves); the person approves the change in keychaind's
            // prompt, with the passcode.
            try kc.personKnowsPasscode("pw-1")
            let changed = try kc.onTerminal(["set-keychain-settings", "-t", "1"], typing: "")
            #expect(changed.status == 0, "\(changed.stdout)")
            // `daemon status` is itself a request (it resets the idle clock): ask once, after the quiet spell.
            usleep(2_500_000)
            #expect(try status().contains("\nlock state: locked\n"), "locked after a second without requests")
            #expect(daemon.stop() == 0)
        }
    }

    @Test func programsThatOpenTheKeychainThemselvesLockAfterTheTimeoutTheSettingsGive() throws {
        try withKeychain { kc in
            // A program using SecItem without keychaind (the test helper, a separate process): its unlock lasts until
            // the keychain has gone unused for the settings' time.
            let helper = try BuiltProducts.path(of: "keychain-test-helper")
            #expect(try kc.launch(helper, ["set-passcode", "pw-5", "alice", "svc", "when-unlocked"]).stdout == "status=0\n")
            // No settings: the default (600 s) keeps the unlock through a short pause.
            #expect(try kc.launch(helper, ["unlock-idle-find", "pw-5", "alice", "svc", "1.2"]).stdout == "after=0\nidle=0\n")
            try kc.succeed(["set-keychain-settings", "-t", "1"])
            let locked = try kc.launch(helper, ["unlock-idle-find", "pw-5", "alice", "svc", "2.2"])
            #expect(locked.stdout == "after=0\nidle=\(KeychainStatus.interactionNotAllowed.rawValue)\n", "locked after a second unused: \(locked.stderr)")
            // Settings without -t: it never locks on its own.
            try kc.succeed(["set-keychain-settings", "-l"])
            #expect(try kc.launch(helper, ["unlock-idle-find", "pw-5", "alice", "svc", "1.2"]).stdout == "after=0\nidle=0\n")
            #expect(try kc.run(["show-keychain-info"]).stdout == "Keychain \"\(kc.home)/keychain-2.db\" lock-on-sleep no-timeout\n")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func dumpWithSecretsNeedsThePasscode() throws {
        try withKeychain { kc in
            // An Always item needs no unlock to read, but -d still asks for the passcode before any secret.
            let engine = try KeychainEngine(location: KeychainLocation(home: kc.home))
            _ = try InProcessKeychain(engine: engine, caller: AccessPolicy(groups: ["security"])).secItemAdd(
                [
                    "class": .string("genp"), "acct": .string("alice"), "svce": .string("svc"), "pdmn": .string("dk"),
                    "v_Data": .data(Data("always-secret".utf8)),
                ])
            try engine.close()
            try kc.succeed(["set-keychain-password", "-p", "pw-9"])
            let plain = try kc.run(["dump-keychain"], detached: true)
            #expect(plain.status == 0)
            #expect(plain.stdout.contains("\"acct\"<blob>=\"alice\""))
            let refused = try kc.run(["dump-keychain", "-d"], detached: true)
            #expect(refused.status == 36)
            #expect(refused.stdout == "")
            #expect(!refused.stderr.contains("always-secret"))
            let wrong = try kc.onTerminal(["dump-keychain", "-d"], typing: "nope\n")
            #expect(wrong.status == 51)
            #expect(!wrong.stdout.contains("always-secret"))
            let shown = try kc.onTerminal(["dump-keychain", "-d"], typing: "pw-9\n")
            #expect(shown.status == 0)
            #expect(shown.stdout.contains("\"always-secret\""))
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsNameEveryVerb(_ shell: String) throws {
        try withKeychain { kc in
            let r = try kc.run(["--generate-completion-script", shell])
            #expect(r.status == 0)
            #expect(r.stderr == "")
            for verb in [
                "find-generic-password", "add-internet-password", "dump-keychain", "unlock-keychain",
                "set-keychain-settings", "show-keychain-info", "error", "app", "daemon",
                "backup-keychain", "restore-keychain", "export", "import",
                "add-certificates", "find-certificate", "delete-certificate", "find-identity", "verify-cert", "authorize",
            ] {
                #expect(r.stdout.contains(verb), "\(shell) completion lacks \(verb)")
            }
        }
    }
}
