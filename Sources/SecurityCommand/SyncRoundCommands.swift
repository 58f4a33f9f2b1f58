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
            or not connected: changes then wait for the next poll). While a round runs, "round: running, …" says \
            how far it got; a machine removed from its account says "joined: no (removed from account …)". A keychain in no account prints "account: none" \
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
            "joined: \(joined(status, account: account))",
            "last sync: \(status.lastSync?.formatted(.iso8601) ?? "never")",
        ]
        if let round = status.runningRound { lines.append("round: running, \(SyncNow.describe(round))") }
        if let error = status.lastError { lines.append("last error: \(printable(error))") }
        lines += [
            "pending changes: \(status.pendingChanges)",
            "conflicts resolved: \(status.conflictsResolved)",
            "push: \(status.isPushConnected ? "connected" : "not connected")",
        ]
        return lines.map { $0 + "\n" }.joined()
    }

    /// The `joined:` line's value: yes, waiting for approval, or removed (and how to join again).
    static func joined(_ status: KeychainStore.SyncStatus, account: String) -> String {
        if let removal = status.removal {
            var text = "no (removed from account \(printable(account))"
            if let date = removal.date { text += " on \(date.formatted(.iso8601))" }
            if let by = removal.removedBy { text += " by \(printable(by))" }
            let server = printable(status.server?.absoluteString ?? "URL")
            return text + "; to sync again run `security sync join --server \(server) --account \(printable(account))`, which makes a new device key)"
        }
        return status.isJoined ? "yes" : "no (waiting for approval: run `security sync join` again once approved)"
    }
}

/// `security sync now`: one sync round.
struct SyncNow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "now",
        abstract: "Sync now: fetch the server's changes, apply them, upload local ones.",
        discussion: """
            Runs one round and prints what it did: "applied:" (changes from other machines applied here), \
            "uploaded:" (local changes the server took), "conflicts resolved:", "rejected:" (records that did not \
            open, which are ignored), then "received:" and "sent:" (records and their sealed size). On a terminal \
            the round's progress is shown on standard error while it runs. Through keychaind the round is \
            keychaind's, beside its background rounds. A keychain in no account exits 44 and says to run \
            create-account or join; a machine removed from its account exits 3 and says to join again.
            """
    )

    static let function = "sync now"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let round = try await Self.round(store, function: Self.function)
        Output.standardOutput(Self.report(round))
    }

    /// One round, its progress shown on a terminal meanwhile (read from the status, on a connection of its own,
    /// a few times a second).
    static func round(_ store: KeychainStore, function: String) async throws(ToolFailure) -> KeychainStore.SyncRound {
        let progress = TerminalProgress()
        let watcher: Task<Void, Never>? =
            progress.isTerminal
            ? Task {
                guard let watching = try? SyncToolCommand.store(function) else { return }
                while !Task.isCancelled {
                    if let running = try? await watching.syncStatus().runningRound { progress.show("syncing: \(describe(running))") }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            } : nil
        defer {
            watcher?.cancel()
            progress.clear()
        }
        do {
            return try await store.syncNow()
        } catch {
            throw SyncToolCommand.failure(function, error)
        }
    }

    /// What a round did, as `sync now` prints it.
    static func report(_ round: KeychainStore.SyncRound) -> String {
        let t = round.transfer
        return """
            applied: \(round.applied)
            uploaded: \(round.uploaded)
            conflicts resolved: \(round.conflictsResolved)
            rejected: \(round.rejected)
            received: \(t.receivedRecords) \(t.receivedRecords == 1 ? "record" : "records"), \(TerminalProgress.size(t.receivedBytes))
            sent: \(t.sentRecords) \(t.sentRecords == 1 ? "record" : "records"), \(TerminalProgress.size(t.sentBytes))

            """
    }

    /// A running round's progress: "received 1200 records (2.3 MiB), sent 500 of 10003 (1.0 MiB)".
    static func describe(_ t: KeychainStore.SyncTransferProgress) -> String {
        var text = "received \(t.receivedRecords) records (\(TerminalProgress.size(t.receivedBytes)))"
        text += t.toSend > 0 ? ", sent \(t.sentRecords) of \(t.toSend) (\(TerminalProgress.size(t.sentBytes)))" : ", sent \(t.sentRecords)"
        return text
    }
}
