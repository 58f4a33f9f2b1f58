import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// macOS's trusted applications (`add-…-password -T`, `-A`) and partition lists (`set-…-partition-list -S`):
/// through a real keychaind, the programs an item trusts read it although its access group is the `security`
/// tool's; every other program, a program started with `LD_PRELOAD`, and a trusted program trying to change or
/// delete the item, do not get it.
@Suite("security: trusted applications and partition lists")
struct TrustedApplicationToolTests {
    static let notFound = "status=\(KeychainStatus.itemNotFound.rawValue)\n"

    /// A copy of libm the loader really loads, for `LD_PRELOAD`; nil where there is none.
    static func preloadLibrary(in kc: Sandbox) throws -> String? {
        guard
            let libm = [
                "/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6",
            ].first(where: FileManager.default.fileExists)
        else { return nil }
        let target = kc.root + "/inject.so"
        try FileManager.default.copyItem(atPath: libm, toPath: target)
        return target
    }

    @Test func dashTLetsThatProgramReadTheItemAndNoOtherThroughKeychaind() throws {
        try withKeychain(.keychaind) { kc in
            let trusted = try kc.program("trusted-app")
            let other = try kc.program("other-app")
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-T", trusted, "-w", "s3cret"])
            let found = try kc.launch(trusted, ["find", "alice", "svc"])
            #expect(found.stdout.hasPrefix("status=0\ndata=s3cret\nagrp="), "\(found.stdout)\(found.stderr)")
            #expect(found.stdout.hasSuffix("\ntrusted=\(trusted)\n"), "\(found.stdout)")
            #expect(!found.stdout.contains("agrp=\(trusted)\n"), "the item stays in the security tool's group")
            #expect(try kc.launch(other, ["find", "alice", "svc"]).stdout == Self.notFound)

            // Started with LD_PRELOAD, the trusted program may run other code: it is not the trusted program.
            if let library = try Self.preloadLibrary(in: kc) {
                let injected = try kc.launch(trusted, ["find", "alice", "svc"], environment: ["LD_PRELOAD": library])
                #expect(injected.stdout == Self.notFound, "\(injected.stdout)\(injected.stderr)")
            }

            // Listed by dump-keychain and find (without -w).
            let dump = try kc.run(["dump-keychain"])
            #expect(dump.status == 0)
            #expect(dump.stdout.contains("trusted applications (1):\n    0: \(trusted)\n"), "\(dump.stdout)")
            let shown = try kc.run(["find-generic-password", "-a", "alice", "-s", "svc"])
            #expect(shown.stdout.contains("trusted applications (1):\n    0: \(trusted)\n"), "\(shown.stdout)")
        }
    }

    @Test func aProgramCannotAddItselfToAnotherProgramsItemNorChangeOrDeleteOneItIsTrustedFor() throws {
        try withKeychain(.keychaind) { kc in
            let owner = try kc.program("owner-app")
            let reader = try kc.program("reader-app")
            let intruder = try kc.program("intruder-app")
            // The owner adds its item through Keychain Services, trusting the reader (kSecAttrTrustedApplications).
            #expect(try kc.launch(owner, ["trusted-add", "bob", "svc", "owned", reader]).stdout == "status=0\n")
            #expect(try kc.launch(reader, ["find", "bob", "svc"]).stdout == "status=0\ndata=owned\nagrp=\(owner)\ntrusted=\(reader)\n")

            // The intruder cannot put itself on the list: the item is not one of its own.
            #expect(try kc.launch(intruder, ["trusted-set", "bob", "svc", intruder]).stdout == Self.notFound)
            #expect(try kc.launch(intruder, ["trusted-set", "bob", "svc", "*"]).stdout == Self.notFound)
            #expect(try kc.launch(intruder, ["find", "bob", "svc"]).stdout == Self.notFound)
            // Nor can the trusted reader, which may read the item but not change or delete it.
            #expect(try kc.launch(reader, ["trusted-set", "bob", "svc", intruder]).stdout == Self.notFound)
            #expect(try kc.launch(reader, ["delete", "bob", "svc"]).stdout == Self.notFound)
            #expect(try kc.launch(intruder, ["find", "bob", "svc"]).stdout == Self.notFound)
            #expect(try kc.launch(reader, ["find", "bob", "svc"]).stdout == "status=0\ndata=owned\nagrp=\(owner)\ntrusted=\(reader)\n")

            // The owner may change the list: with it removed, the reader no longer sees the item.
            #expect(try kc.launch(owner, ["trusted-set", "bob", "svc"]).stdout == "status=0\n")
            #expect(try kc.launch(reader, ["find", "bob", "svc"]).stdout == Self.notFound)
            #expect(try kc.launch(owner, ["find", "bob", "svc"]).stdout == "status=0\ndata=owned\nagrp=\(owner)\n")
        }
    }

    @Test func dashALetsAnyProgramReadAndEmptyDashTNone() throws {
        try withKeychain(.keychaind) { kc in
            let any = try kc.program("any-app")
            try kc.succeed(["add-generic-password", "-a", "open", "-s", "svc", "-A", "-w", "for-all"])
            try kc.succeed(["add-generic-password", "-a", "closed", "-s", "svc", "-T", "", "-w", "for-none"])
            #expect(try kc.launch(any, ["find", "open", "svc"]).stdout.hasPrefix("status=0\ndata=for-all\n"))
            #expect(try kc.launch(any, ["find", "closed", "svc"]).stdout == Self.notFound)
            let dump = try kc.run(["dump-keychain"]).stdout
            #expect(dump.contains("trusted applications (1):\n    0: * (any application)\n"), "\(dump)")
            #expect(dump.components(separatedBy: "trusted applications").count == 2, "the -T \"\" item has no list")
        }
    }

    @Test func aMissingDashTProgramIsRefused() throws {
        try withKeychain(.keychaind) { kc in
            let result = try kc.run(["add-generic-password", "-a", "a", "-s", "s", "-T", kc.root + "/no-such-app", "-w", "x"])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("security: SecTrustedApplicationCreateFromPath: \(kc.root)/no-such-app: no such file."), "\(result.stderr)")
            #expect(try kc.run(["find-generic-password", "-a", "a", "-s", "s"]).status == 44)
        }
    }

    /// `security add-internet-password -T "$(command -v git-credential-keychain)"`, then git's helper finds it.
    @Test(arguments: [ToolMode.keychaind, .inProcess])
    func gitsHelperReadsAnInternetPasswordThatTrustsIt(mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let helper = try Sandbox.resolved(try BuiltProducts.path(of: "git-credential-keychain"))
            let off = mode == .inProcess ? ["KEYCHAIN_DAEMON_SOCKET": "off"] : [:]
            let added = try kc.run(
                [
                    "add-internet-password", "-s", "git.example.org", "-a", "octocat", "-r", "htps",
                    "-T", helper, "-w", "ghp_token",
                ], environment: off)
            #expect(added.status == 0, "\(added.stderr)")
            let get = try kc.launch(helper, ["get"], environment: off, input: Data("protocol=https\nhost=git.example.org\n\n".utf8))
            #expect(get.status == 0, "\(get.stderr)")
            #expect(get.stdout == "username=octocat\npassword=ghp_token\n")
            // Another host's item, not trusting the helper, stays out of its reach.
            try kc.succeed(["add-internet-password", "-s", "other.example.org", "-a", "octocat", "-r", "htps", "-w", "private"])
            let other = try kc.launch(helper, ["get"], environment: off, input: Data("protocol=https\nhost=other.example.org\n\n".utf8))
            #expect(other.stdout == "", "\(other.stdout)")
            // The helper cannot erase what it was only trusted to read.
            _ = try kc.launch(helper, ["erase"], environment: off, input: Data("protocol=https\nhost=git.example.org\nusername=octocat\n\n".utf8))
            #expect(try kc.run(["find-internet-password", "-s", "git.example.org", "-w"], environment: off).stdout == "ghp_token\n")
        }
    }

    @Test func partitionListVerbsSetTheTrustedApplications() throws {
        try withKeychain(.keychaind) { kc in
            let app = try kc.program("partition-app")
            try kc.succeed(["add-generic-password", "-a", "carol", "-s", "svc", "-w", "gen"])
            try kc.succeed(["add-internet-password", "-a", "carol", "-s", "host.example", "-w", "inet"])
            #expect(try kc.launch(app, ["find", "carol", "svc"]).stdout == Self.notFound)

            try kc.succeed(["set-generic-password-partition-list", "-a", "carol", "-s", "svc", "-S", "apple-tool:,apple:,\(app)", "-k", "unused"])
            #expect(try kc.launch(app, ["find", "carol", "svc"]).stdout.hasPrefix("status=0\ndata=gen\n"))
            var dump = try kc.run(["dump-keychain"]).stdout
            #expect(dump.contains("trusted applications (3):\n    0: apple-tool:\n    1: apple:\n    2: \(app)\n"), "\(dump)")

            try kc.succeed(["set-internet-password-partition-list", "-s", "host.example", "-S", "teamid:ABCDE12345"])
            dump = try kc.run(["dump-keychain"]).stdout
            #expect(dump.contains("trusted applications (1):\n    0: teamid:ABCDE12345\n"), "\(dump)")

            // The list replaces the previous one: with apple-tool: alone, the program no longer reads the item.
            try kc.succeed(["set-generic-password-partition-list", "-a", "carol", "-s", "svc", "-S", "apple-tool:"])
            #expect(try kc.launch(app, ["find", "carol", "svc"]).stdout == Self.notFound)

            let missing = try kc.run(["set-generic-password-partition-list", "-a", "nobody", "-S", "apple-tool:"])
            #expect(missing.status == 44)
            #expect(missing.stderr == "security: SecKeychainItemSetAccessWithPassword: The specified item could not be found in the keychain.\n")
            let bad = try kc.run(["set-generic-password-partition-list", "-a", "carol", "-S", "relative:thing"])
            #expect(bad.status == 1, "\(bad.stderr)")
        }
    }

    @Test func aProgramWithAGroupOfTheTeamReadsAnItemOfThatPartition() throws {
        try withKeychain(.keychaind) { kc in
            let app = try kc.program("team-app")
            let registered = try kc.run(["app", "add", "--group", "ABCDE12345.shared", app])
            #expect(registered.status == 0, "\(registered.stderr)")
            try kc.succeed(["add-generic-password", "-a", "dave", "-s", "svc", "-w", "team-secret"])
            #expect(try kc.launch(app, ["find", "dave", "svc"]).stdout == Self.notFound)
            try kc.succeed(["set-generic-password-partition-list", "-a", "dave", "-S", "teamid:ABCDE12345"])
            #expect(try kc.launch(app, ["find", "dave", "svc"]).stdout.hasPrefix("status=0\ndata=team-secret\n"))
            try kc.succeed(["set-generic-password-partition-list", "-a", "dave", "-S", "teamid:ZZZZZ99999"])
            #expect(try kc.launch(app, ["find", "dave", "svc"]).stdout == Self.notFound)
        }
    }

    /// With a passcode set, changing a partition list needs it (as macOS needs the keychain password): without a
    /// terminal and without -k the verb fails with errSecInteractionNotAllowed, with a wrong -k errSecAuthFailed.
    @Test func partitionListVerbsNeedThePasscodeWhenOneIsSet() throws {
        try withKeychain { kc in
            try kc.succeed(["add-generic-password", "-a", "erin", "-s", "svc", "-w", "x"])
            try kc.succeed(["set-keychain-password", "-p", "pw-1"])
            let none = try kc.run(["set-generic-password-partition-list", "-a", "erin", "-S", "apple-tool:"], detached: true)
            #expect(none.status == 36, "\(none.stderr)")
            let wrong = try kc.run(["set-generic-password-partition-list", "-a", "erin", "-S", "apple-tool:", "-k", "nope"], detached: true)
            #expect(wrong.status == 51, "\(wrong.stderr)")
            let right = try kc.run(["set-generic-password-partition-list", "-a", "erin", "-S", "apple-tool:", "-k", "pw-1"], detached: true)
            #expect(right.status == 0, "\(right.stderr)")
        }
    }
}
