import ArgumentParser
import Foundation
import KeychainKit

/// `security sync status`: where sync stands on this machine.
struct SyncStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where sync stands on this machine.",
        discussion: """
            Prints "account:", "server:", "device:" (this machine's ID), "joined:" (yes, or no while waiting for \
            approval), "last sync:" (UTC, ISO 8601, or never), "last error:" (only after a failed round), \
            "pending changes:" (local changes not yet on the server), "conflicts resolved:" and "push:" (connected \
            or not connected: changes then wait for the next poll). A keychain in no account prints "account: none" \
            and how to make or join one, and exits 0.
            """
    )

    static let function = "sync status"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let status: KeychainStore.SyncStatus
        do {
            status = try await store.syncStatus()
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(Self.describe(status))
    }

    /// The status's lines.
    static func describe(_ status: KeychainStore.SyncStatus) -> String {
        guard let account = status.account else {
            return """
                account: none
                Make an account with `security sync create-account --server URL`, or join one with `security sync join --server URL --account ID`.

                """
        }
        // What the engine recorded may come from the server (an error's text): control characters are escaped.
        var lines = [
            "account: \(printable(account))",
            "server: \(printable(status.server?.absoluteString ?? ""))",
            "device: \(printable(status.deviceID ?? ""))",
            "joined: \(status.isJoined ? "yes" : "no (waiting for approval: run `security sync join` again once approved)")",
            "last sync: \(status.lastSync?.formatted(.iso8601) ?? "never")",
        ]
        if let error = status.lastError { lines.append("last error: \(printable(error))") }
        lines += [
            "pending changes: \(status.pendingChanges)",
            "conflicts resolved: \(status.conflictsResolved)",
            "push: \(status.isPushConnected ? "connected" : "not connected")",
        ]
        return lines.map { $0 + "\n" }.joined()
    }
}

/// `security sync now`: one sync round.
struct SyncNow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "now",
        abstract: "Sync now: fetch the server's changes, apply them, upload local ones.",
        discussion: """
            Runs one round and prints what it did: "applied:" (changes from other machines applied here), \
            "uploaded:" (local changes the server took), "conflicts resolved:" and "rejected:" (records that did not \
            open, which are ignored). Through keychaind the round is keychaind's, beside its background rounds. A \
            keychain in no account exits 44 and says to run create-account or join.
            """
    )

    static let function = "sync now"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let round: KeychainStore.SyncRound
        do {
            round = try await store.syncNow()
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(
            """
            applied: \(round.applied)
            uploaded: \(round.uploaded)
            conflicts resolved: \(round.conflictsResolved)
            rejected: \(round.rejected)

            """)
    }
}
