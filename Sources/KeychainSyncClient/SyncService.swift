#if Network
import Foundation
import KeychainCore
import KeychainSync
import Logging
import Synchronization

/// The sync engine that runs beside the keychain: it answers the front ends' commands (``perform(_:)``) and, while
/// ``run()`` runs, keeps the keychain in sync on its own — a round at start, on push from the server, soon after
/// local writes, every poll interval, and again with backoff after a failure.
///
/// Commands and rounds share one serial lane: no two run at once. What a round did is recorded in the mirror
/// (when the last one succeeded, why the last one failed, how many conflicts were resolved so far) for
/// ``SyncCommand/status``, and told to whoever listens to ``events()``.
package final class SyncService: Sendable {
    /// The keychain.
    package let engine: KeychainEngine
    /// The sync mirror's path (``KeychainLocation/syncMirrorPath``).
    package let mirrorPath: String
    /// How long ``run()`` waits between rounds when nothing else asks for one.
    package let pollInterval: Duration
    let now: @Sendable () -> Date
    let logger: Logger

    struct State {
        /// The account's session, once opened (nil: not looked at yet, or in no account).
        var session: SyncSession?
        /// Who listens to ``events()``.
        var listeners: [UInt64: AsyncStream<SyncServiceEvent>.Continuation] = [:]
        var nextListener: UInt64 = 0
        /// Whether the push connection is open.
        var pushConnected = false
        /// Rounds failed in a row.
        var failures = 0
        /// The keychain's writes as the last round (or the write watcher) saw them.
        var seenWrites: WriteMark?
        /// Whether ``run()`` runs.
        var running = false
        /// Whether the keychain is in an account and finished joining, as the round loop last saw (the write
        /// watcher looks only then).
        var syncing = false
        /// How far the round running now got (nil: none runs).
        var round: SyncTransfer?
    }

    let state = Mutex(State())
    /// Commands and rounds, one at a time.
    let lane = SyncLane()
    /// Wakes the round loop (push, local writes, a new account).
    let roundWakeup = SyncWakeup()
    /// Wakes the push loop (a new account).
    let accountWakeup = SyncWakeup()
    /// Wakes the write watcher (the keychain syncs now).
    let writesWakeup = SyncWakeup()

    /// A service for the keychain `engine`, whose sync mirror is at `mirrorPath`; ``run()`` syncs every
    /// `pollInterval` at least.
    package init(
        engine: KeychainEngine, mirrorPath: String, pollInterval: Duration = .seconds(300),
        now: @escaping @Sendable () -> Date = Date.init, logger: Logger = Logger(label: "swift-keychain.sync")
    ) {
        self.engine = engine
        self.mirrorPath = mirrorPath
        self.pollInterval = pollInterval
        self.now = now
        self.logger = logger
    }

    deinit {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener.finish() }
    }

    // MARK: The account

    /// The account's session.
    /// - Throws: ``KeychainError`` `itemNotFound` when this keychain is in no account.
    func session() throws(KeychainError) -> SyncSession {
        if let session = state.withLock({ $0.session }) { return session }
        guard FileManager.default.fileExists(atPath: mirrorPath) else { throw Self.inNoAccount }
        let session = try SyncSession.open(engine: engine, mirrorPath: mirrorPath, now: now)
        return state.withLock { state in
            if let other = state.session { return other }
            state.session = session
            return session
        }
    }

    /// The session, or nil when this keychain is in no account.
    func sessionIfAny() throws(KeychainError) -> SyncSession? {
        do {
            return try session()
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    /// Whether the session's device finished joining (it holds a trusted device list).
    /// Whether this keychain has a sync account (joined, or asking to join): then its keychaind keeps running, to
    /// push and pull in the background.
    package var hasAccount: Bool {
        do {
            return try sessionIfAny() != nil
        } catch {
            return true
        }
    }

    func isJoined(_ session: SyncSession) -> Bool {
        (try? session.mirror.document("list")) != nil
    }

    /// Whether the session's device finished joining and was not removed since: it syncs.
    func isSyncing(_ session: SyncSession) -> Bool {
        isJoined(session) && (try? removal(of: session)) == nil
    }

    /// Takes `session` (made or finished joining just now) as the account's from now on, and wakes the loops for it.
    func adopt(_ session: SyncSession) {
        state.withLock { state in
            state.session = session
            state.failures = 0
            state.syncing = true
        }
        roundWakeup.signal()
        accountWakeup.signal()
        writesWakeup.signal()
    }

    static let inNoAccount = KeychainError(code: .itemNotFound, message: "This keychain is in no sync account: run `security sync create-account` or `security sync join`.")

    // MARK: Events

    /// Each round's outcome and push connection changes, for whoever listens; a slow listener loses the oldest.
    package func events() -> AsyncStream<SyncServiceEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncServiceEvent.self, bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = continuation
            return state.nextListener
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: SyncServiceEvent) {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener.yield(event) }
    }

    // MARK: Rounds

    /// One round in the lane, recorded.
    /// - Throws: ``KeychainError`` `itemNotFound` when this keychain is in no account or has not finished joining;
    ///   the round's error when it fails (recorded as the last error).
    func round() async throws(KeychainError) -> SyncRoundReport {
        try await lane.run { () async throws(KeychainError) -> SyncRoundReport in
            try await roundInLane()
        }
    }

    private func roundInLane() async throws(KeychainError) -> SyncRoundReport {
        let session = try session()
        _ = try session.trustedList()
        if let removal = try removal(of: session) { throw Self.removedError(session, removal) }
        // Writes from here on (the round's own included) ask for the next round.
        state.withLock {
            $0.seenWrites = currentWrites()
            $0.round = SyncTransfer()
        }
        defer { state.withLock { $0.round = nil } }
        let summary: SyncSession.RoundSummary
        do {
            summary = try await session.syncOnce { transfer in self.state.withLock { $0.round = transfer } }
        } catch  where error.code == .syncDeviceRemoved {
            // For good: the server never takes this device key back. Rounds and push stop until it joins again.
            let removal = Self.removal(from: error, in: session)
            logger.notice("this device was removed from its sync account; it stops syncing", metadata: ["account": "\(session.account)"])
            record { () throws(KeychainError) in try session.mirror.setDocument(Self.removalDocument, Self.encode(removal)) }
            let removed = Self.removedError(session, removal)
            emit(.roundFailed(message: removed.message))
            throw removed
        } catch {
            state.withLock { $0.failures += 1 }
            let message = "\(error.message) (OSStatus \(error.status.rawValue))"
            logger.notice("a sync round failed", metadata: ["error": "\(message)"])
            record { () throws(KeychainError) in try session.mirror.setDocument(Self.lastErrorDocument, Data(message.utf8)) }
            emit(.roundFailed(message: message))
            throw error
        }
        let report = SyncRoundReport(
            applied: summary.applied, uploaded: summary.uploaded,
            conflictsResolved: summary.keptLocal + summary.conflicts, rejected: summary.rejected, transfer: summary.transfer)
        state.withLock { $0.failures = 0 }
        record { () throws(KeychainError) in
            let mirror = session.mirror
            try mirror.setSetting(Self.lastSyncSetting, Int64((now().timeIntervalSince1970 * 1000).rounded()))
            try mirror.setDocument(Self.lastErrorDocument, Data())
            if report.conflictsResolved > 0 {
                try mirror.setSetting(Self.conflictsSetting, (try mirror.setting(Self.conflictsSetting) ?? 0) + Int64(report.conflictsResolved))
            }
        }
        emit(.round(report))
        return report
    }

    /// Writes the status; a failure to is logged, and does not undo the round.
    private func record(_ body: () throws(KeychainError) -> Void) {
        do {
            try body()
        } catch {
            logger.warning("the sync status could not be recorded in the mirror", metadata: ["error": "\(error.message)"])
        }
    }

    /// When the last round ended without error, in milliseconds since 1970 (a mirror setting).
    static let lastSyncSetting = "status.last-sync"
    /// Conflicts resolved since the account was set up here (a mirror setting).
    static let conflictsSetting = "status.conflicts-resolved"
    /// Why the last round failed, UTF-8, empty when it did not (a mirror document).
    static let lastErrorDocument = "status.last-error"
    /// That the server said this device was removed, and when and by whom (a mirror document, JSON).
    static let removalDocument = "status.removed"

    // MARK: Removal

    /// The removal the mirror recorded, if this device was removed.
    func removal(of session: SyncSession) throws(KeychainError) -> SyncRemoval? {
        guard let data = try session.mirror.document(Self.removalDocument), !data.isEmpty else { return nil }
        guard let stored = try? JSONDecoder().decode(StoredRemoval.self, from: data) else { return SyncRemoval() }
        return SyncRemoval(date: stored.millis.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }, by: stored.by)
    }

    /// The removal as the mirror keeps it.
    private struct StoredRemoval: Codable {
        var millis: Int64?
        var by: String?
    }

    static func encode(_ removal: SyncRemoval) -> Data {
        let stored = StoredRemoval(millis: removal.date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }, by: removal.by)
        return (try? JSONEncoder().encode(stored)) ?? Data("{}".utf8)
    }

    /// The removal the server's refusal `error` tells of, the remover named as the last trusted list names it.
    static func removal(from error: KeychainError, in session: SyncSession) -> SyncRemoval {
        let notice = error.cause as? SyncRemovalNotice
        return SyncRemoval(date: notice?.date, by: notice?.byDevice.map { name(of: $0, in: session) })
    }

    /// The name the last list this device trusted gives device `id`, else `id`.
    static func name(of id: String, in session: SyncSession) -> String {
        (try? session.trustedList().list.device(id)?.name) ?? id
    }

    /// What a removed device answers to a round, in the words `security sync status` uses.
    static func removedError(_ session: SyncSession, _ removal: SyncRemoval) -> KeychainError {
        KeychainError(
            code: .syncDeviceRemoved,
            message:
                "This machine was \(describe(removal, account: session.account)), and no longer syncs. To sync again, join again (with a new device key): security sync join --server \(session.serverURL.absoluteString) --account \(session.account)"
        )
    }

    /// "removed from account X on DATE by NAME".
    package static func describe(_ removal: SyncRemoval, account: String) -> String {
        var text = "removed from account \(account)"
        if let date = removal.date { text += " on \(date.formatted(.iso8601))" }
        if let by = removal.by { text += " by \(by)" }
        return text
    }

    // MARK: Local writes

    /// The keychain's writes as seen from here: this process's engine's count, and the database log's stamp
    /// (which other processes' writes change).
    struct WriteMark: Sendable, Hashable {
        var generation: UInt64
        var log: FileStamp?
    }

    func currentWrites() -> WriteMark {
        WriteMark(generation: engine.writeGeneration, log: FileStamp(path: engine.location.databasePath + "-wal"))
    }
}
#endif
