#if Network
import Foundation
import KeychainCore
import KeychainSync
import KeychainSyncClient
import KeychainTestSupport

/// `sync-writer HOME PREFIX SEED [settle]`: a device that edits its keychain and syncs, round after round, until
/// killed — the client side of the kill test (`SyncKillTests`).
///
/// It opens the keychain at HOME with the engine in this process, and the sync session recorded in HOME's mirror
/// (the account and server were set up before). Each round makes 50 to 500 random edits to its own generic
/// passwords (service `sync-writer`, account `PREFIX-n`, secret `rev:R` with R rising): adds of new ones, updates,
/// deletes; then one `syncOnce()`. After each round that returns it prints, in one write, an `ack` line for every
/// item whose current state the mirror now records as agreed with the server at a version > 0 (the item's
/// change is not among the outgoing ones any more), unless it said so already:
///
///     ready items=N next=I rev=R        the keychain and the session opened (after any kill)
///     round K edits=E ms=T              the round's edits are made (in T ms); syncing starts
///     ack PREFIX-n rev:R|deleted ITEM_ID VERSION
///     lost-local PREFIX-n wrote=… holds=…  a round took back an edit of this process (never expected)
///     synced K uploaded=U conflicts=C applied=A ms=T   (T: the sync and the acknowledgements)
///     sync-error CODE                   the round failed (the server is down): tried again after 50 ms
///     settled                           (settle) nothing is left to upload; the program ends with status 0
///     error CODE MESSAGE                the keychain or the session did not open, or a local step failed;
///                                       status 1 (3 when settling did not end within 10 rounds)
///
/// With `settle` it makes no edits: it syncs until no local change is left, acknowledges, and exits.
enum SyncWriter {
    /// The service every item of the writer has.
    static let service = "sync-writer"
    /// Everything, as the sync replica reads items.
    static let caller = AccessPolicy(groups: ["*"])

    /// Runs the verb; returns the exit status.
    static func run(home: String, prefix: String, seed: UInt64, settle: Bool) async -> Int32 {
        do throws(KeychainError) {
            let location = KeychainLocation(home: home)
            let engine = try KeychainEngine(location: location, createIfMissing: false, tpm: nil, passcodePolicy: .testing)
            let session = try SyncSession.open(engine: engine, mirrorPath: location.syncMirrorPath)
            var state = try State(engine: engine, prefix: prefix, seed: seed)
            try state.acknowledge(session, quietly: true)
            emit("ready items=\(state.live.count) next=\(state.nextIndex) rev=\(state.nextRevision)")
            if settle {
                for _ in 0..<10 {
                    guard await syncRound(session) != nil else { continue }
                    try state.acknowledge(session)
                    if try session.replica.outgoingChanges().isEmpty {
                        emit("settled")
                        return 0
                    }
                }
                emit("error unsettled: 10 rounds left changes to upload")
                return 3
            }
            var round = 0
            while true {
                round += 1
                let start = ContinuousClock.now
                let edits = try state.edit(count: Int.random(in: 50...500, using: &state.random))
                emit("round \(round) edits=\(edits) ms=\(milliseconds(since: start))")
                let syncStart = ContinuousClock.now
                var summary: SyncSession.RoundSummary?
                while summary == nil {
                    summary = await syncRound(session)
                }
                try state.acknowledge(session)
                if let summary {
                    emit("synced \(round) uploaded=\(summary.uploaded) conflicts=\(summary.conflicts) applied=\(summary.applied) ms=\(milliseconds(since: syncStart))")
                }
            }
        } catch {
            emit("error \(error.code) \(error.message)")
            return 1
        }
    }

    /// Milliseconds since `start`.
    static func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
        let elapsed = (ContinuousClock.now - start).components
        return elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
    }

    /// One sync round, or nil (after a short pause) when it failed.
    static func syncRound(_ session: SyncSession) async -> SyncSession.RoundSummary? {
        do throws(KeychainError) {
            return try await session.syncOnce()
        } catch {
            emit("sync-error \(error.code)")
            try? await Task.sleep(for: .milliseconds(50))
            return nil
        }
    }

    /// Writes `text` and a line end in one write to standard output, so a parent reading after a kill sees whole
    /// lines only.
    static func emit(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// The writer's items and what it last said of them.
    struct State {
        let engine: KeychainEngine
        let prefix: String
        var random: SeededGenerator
        /// Live items: account → revision.
        var live: [String: UInt64] = [:]
        /// The live items' accounts, for picking one at random.
        var accounts: [String] = []
        /// The next new item's number.
        var nextIndex = 0
        /// The next revision written (above every one held, so an item's revisions only rise).
        var nextRevision: UInt64 = 1
        /// Items this process deleted.
        var deleted: Set<String> = []
        /// What this process last acknowledged of each item.
        var acknowledged: [String: String] = [:]

        /// The state found in the keychain (items a killed run left, tombstones included).
        init(engine: KeychainEngine, prefix: String, seed: UInt64) throws(KeychainError) {
            self.engine = engine
            self.prefix = prefix
            random = SeededGenerator(seed: seed)
            for item in try items() {
                guard let index = item.account.split(separator: "-").last.flatMap({ Int($0) }) else { continue }
                nextIndex = max(nextIndex, index + 1)
                if let revision = item.revision {
                    live[item.account] = revision
                    accounts.append(item.account)
                    nextRevision = max(nextRevision, revision + 1)
                }
            }
        }

        /// The writer's items, live (with their revision) and deleted (their tombstones, revision nil).
        func items() throws(KeychainError) -> [(account: String, uuid: Data, revision: UInt64?)] {
            var found: [(account: String, uuid: Data, revision: UInt64?)] = []
            for tombstones in [false, true] {
                var q = ItemQuery(itemClass: .genericPassword)
                q.attributes = ["svce": .string(service)]
                if tombstones { q.attributes["tomb"] = .int(1) }
                q.sync = .synchronizable
                q.limit = .all
                q.returns = ReturnOptions(data: !tombstones, attributes: true)
                let items: [FoundItem]
                do {
                    items = try engine.find(q, caller: caller)
                } catch  where error.code == .itemNotFound {
                    items = []
                }
                for item in items {
                    guard case .string(let account)? = item.attributes["acct"], account.hasPrefix(prefix + "-") else { continue }
                    let revision = tombstones ? nil : item.data.flatMap { UInt64(String(decoding: $0.dropFirst(4), as: UTF8.self)) }
                    if !tombstones, revision == nil { continue }
                    found.append((account, item.uuid, revision))
                }
            }
            return found
        }

        /// The writer's item `account`.
        func query(_ account: String) -> ItemQuery {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = ["svce": .string(service), "acct": .string(account)]
            q.sync = .synchronizable
            return q
        }

        /// Makes `count` random edits: adds while few items are live, else mostly updates, and some adds and
        /// deletes, which keep about 400 items live.
        mutating func edit(count: Int) throws(KeychainError) -> Int {
            for _ in 0..<count {
                let roll = Int.random(in: 0..<100, using: &random)
                let revision = nextRevision
                nextRevision += 1
                if accounts.count < 50 || roll < 15 {
                    let account = "\(prefix)-\(nextIndex)"
                    nextIndex += 1
                    var q = query(account)
                    q.attributes["agrp"] = .string("TEAM.sync")
                    q.attributes["pdmn"] = .string("ak")
                    q.valueData = Data("rev:\(revision)".utf8)
                    _ = try engine.add(q, caller: caller)
                    live[account] = revision
                    accounts.append(account)
                    continue
                }
                let index = Int.random(in: 0..<accounts.count, using: &random)
                let account = accounts[index]
                if roll < 15 + (accounts.count > 400 ? 20 : 5) {
                    _ = try engine.delete(query(account), caller: caller)
                    live[account] = nil
                    deleted.insert(account)
                    accounts.swapAt(index, accounts.count - 1)
                    accounts.removeLast()
                } else {
                    try engine.update(query(account), attributes: [:], sync: nil, data: Data("rev:\(revision)".utf8), caller: caller)
                    live[account] = revision
                }
            }
            return count
        }

        /// Prints an `ack` line for every item whose current state the mirror records as agreed with the server
        /// (`quietly`: only remembers them, as at start, for states a run before may have said already).
        mutating func acknowledge(_ session: SyncSession, quietly: Bool = false) throws(KeychainError) {
            let pending = Set(try session.replica.outgoingChanges().map(\.itemID))
            let rows = try session.replica.mirror.rows()
            let byUUID = Dictionary(rows.compactMap { row in row.uuid.map { ($0, row) } }, uniquingKeysWith: { first, _ in first })
            var lines: [String] = []
            let items = try items()
            // No round may take back a local edit (an incoming change applied over a newer local one).
            let held = Dictionary(items.map { ($0.account, $0.revision.map { "rev:\($0)" } ?? "deleted") }, uniquingKeysWith: { first, _ in first })
            for (account, revision) in live where held[account] != "rev:\(revision)" {
                lines.append("lost-local \(account) wrote=rev:\(revision) holds=\(held[account] ?? "none")")
            }
            for account in deleted where held[account] != "deleted" {
                lines.append("lost-local \(account) wrote=deleted holds=\(held[account] ?? "none")")
            }
            for item in items {
                guard let row = byUUID[item.uuid], row.version > 0, !pending.contains(row.itemID) else { continue }
                let state = item.revision.map { "rev:\($0)" } ?? "deleted"
                guard acknowledged[item.account] != state else { continue }
                acknowledged[item.account] = state
                lines.append("ack \(item.account) \(state) \(row.itemID) \(row.version)")
            }
            if !lines.isEmpty, !quietly { emit(lines.joined(separator: "\n")) }
        }
    }
}
#endif
