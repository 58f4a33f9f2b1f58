import Foundation
import KeychainTestSupport
import Testing

/// The security tool meets items that need the user's presence: it is asked through the pinentry the keychain's
/// settings name (set with `set-keychain-settings --pinentry`), in-process and through keychaind, where keychaind
/// shows the prompt and names the tool as it identified it.
@Suite struct PresenceToolTests {
    @Test(
        .enabled(if: settingsMayNameATestPinentry, "a keychain setting names only a pinentry only root can change: the scripted one is, only when the tests run as root"),
        arguments: ToolMode.allCases)
    func aProtectedItemIsReadAndBackedUpOnlyAfterThePrompt(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let pinentry = try PinentryScript(in: kc.root + "/pinentry-script")
            try kc.succeed(["set-keychain-settings", "--pinentry", pinentry.program, "--prompt-timeout", "20"])
            // Settings of macOS's own change without losing the prompt settings.
            try kc.succeed(["set-keychain-settings", "-t", "3600"])
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "vault", "-w", "s3cret", "--access-control", "devicePasscode"])
            // Through keychaind the person approved both settings changes too (a start each, answered "always"), and
            // approves the backup below before its proof is asked for (one more answer).
            let approvals = mode == .keychaind ? 1 : 0
            try pinentry.replaceQueue("cancel", "confirm", "cancel", "confirm", mode == .keychaind ? "confirm" : "")
            let cancelled = try kc.run(["find-generic-password", "-a", "alice", "-s", "vault", "-w"], detached: true)
            #expect(cancelled.status == 128)  // errSecUserCanceled's low byte
            #expect(cancelled.stdout == "")
            let shown = try kc.run(["find-generic-password", "-a", "alice", "-s", "vault", "-w"], detached: true)
            #expect(shown.status == 0)
            #expect(shown.stdout == "s3cret\n")
            #expect(pinentry.starts == 2 + 2 * approvals)
            #expect(pinentry.log.contains("security"))

            // A backup holds the secret (sealed under the backup password): it needs the same proof (through
            // keychaind, after the person approves the backup itself: the cancel ends that approval, then a confirm
            // gives it and another the proof).
            let file = kc.root + "/protected.backup"
            let refused = try kc.run(["backup-keychain", "-o", file, "-P", "backup pw"], detached: true)
            #expect(refused.status == 128)
            #expect(!FileManager.default.fileExists(atPath: file))
            let backup = try kc.run(["backup-keychain", "-o", file, "-P", "backup pw"], detached: true)
            #expect(backup.status == 0)
            #expect(pinentry.starts == 4 + 3 * approvals)
        }
    }

    @Test func promptSettingsAreChecked() throws {
        try withKeychain { kc in
            let relative = try kc.run(["set-keychain-settings", "--pinentry", "pinentry-curses"])
            #expect(relative.status != 0)
            #expect(relative.stderr.contains("--pinentry needs an absolute path"))
            let long = try kc.run(["set-keychain-settings", "--prompt-timeout", "601"])
            #expect(long.status != 0)
            #expect(long.stderr.contains("--prompt-timeout must be between 1 and 600 seconds"))
        }
    }
}
