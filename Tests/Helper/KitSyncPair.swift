#if Network
import Foundation
import KeychainKit

/// `kit-sync-pair SERVER-URL FOLDER-A FOLDER-B`: KeychainKit's sync API in embedded mode, as an app uses it — two
/// stores (two keychain folders, each syncing in this process) make an account, join it, and sync one item — for
/// `KeychainStoreSyncTests`, in a process of its own so that no test of the runner holds the threads it needs.
///
/// Prints one line per step, each with what it observed (the test compares the whole transcript):
///
///     created                           alpha made the account
///     pending code=true                 beta's first join waits for approval, with a code
///     approved fingerprint-matches=true alpha approved it with the fingerprint beta was shown
///     joined account-matches=true       beta's second join joined
///     status joined=true last-sync=false pending=0
///     status last-sync=false pending=1  after a synchronizable write
///     round applied=0 uploaded=1 conflicts=0 rejected=0
///     status last-sync=true pending=0 error=false
///     round applied=1 uploaded=0 conflicts=0 rejected=0   (beta's round)
///     beta reads s3cret
///     devices alpha,beta this=beta ids=32
///
/// On an error: `error STATUS MESSAGE`, status 1.
enum KitSyncPair {
    /// Runs the verb; returns the exit status.
    static func run(server: String, alphaFolder: String, betaFolder: String) async -> Int32 {
        do {
            guard let url = URL(string: server) else {
                print("error bad URL \(server)")
                return 2
            }
            let alpha = try KeychainStore(directory: alphaFolder, accessGroups: ["com.example.sync"])
            let beta = try KeychainStore(directory: betaFolder, accessGroups: ["com.example.sync"])
            let account = try await alpha.createSyncAccount(server: url, deviceName: "alpha")
            line("created")
            let invitation = try await alpha.createSyncInvitation()
            let carried = try KeychainStore.syncInvitation(fromURI: invitation.uri)
            line("invited uri-matches=\(carried.server == url && carried.account == account && carried.code == invitation.code)")
            guard case .pending(let code, let fingerprint) = try await beta.joinSyncAccount(account, server: url, invitation: invitation.code) else {
                line("error the join did not wait for approval")
                return 1
            }
            line("pending code=\(!code.isEmpty)")
            line("approved fingerprint-matches=\(try await alpha.approveSyncDevice(code: code, name: "beta") == fingerprint)")
            line("joined account-matches=\(try await beta.joinSyncAccount(account, server: url) == .joined(account: account))")

            // The status as events: at once, then each change (a pending write, then the round that sent it).
            var events = alpha.syncEvents(interval: .milliseconds(20)).makeAsyncIterator()
            guard let first = try await events.next() else { return ended() }
            let matches = first.account == account && first.server == url
            line("status joined=\(first.isJoined && matches) last-sync=\(first.lastSync != nil) pending=\(first.pendingChanges)")
            try Keychain(service: "svc", in: alpha).synchronizable(true).set("s3cret", for: "shared")
            guard let pending = try await events.next() else { return ended() }
            line("status last-sync=\(pending.lastSync != nil) pending=\(pending.pendingChanges)")
            line(describe(try await alpha.syncNow()))
            guard let synced = try await events.next() else { return ended() }
            line("status last-sync=\(synced.lastSync != nil) pending=\(synced.pendingChanges) error=\(synced.lastError != nil)")

            line(describe(try await beta.syncNow()))
            line("beta reads \(try Keychain(service: "svc", in: beta).synchronizable(true).string(for: "shared") ?? "nothing")")
            let devices = try await beta.syncDevices()
            let names = devices.map(\.name).sorted().joined(separator: ",")
            let this = devices.filter(\.isThisDevice).map(\.name).joined(separator: ",")
            line("devices \(names) this=\(this) ids=\(Set(devices.map(\.id.count)).sorted().map(String.init).joined(separator: ","))")
            return 0
        } catch {
            line("error \(error.status.rawValue) \(error)")
            return 1
        }
    }

    private static func describe(_ round: KeychainStore.SyncRound) -> String {
        "round applied=\(round.applied) uploaded=\(round.uploaded) conflicts=\(round.conflictsResolved) rejected=\(round.rejected)"
    }

    private static func ended() -> Int32 {
        line("error the status events ended")
        return 1
    }

    private static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
#endif
