import Foundation
import KeychainClient
import KeychainCore
#if Network
// The sync client, when the package is built with its Network trait (else sync goes through keychaind).
import KeychainSyncClient
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// End-to-end-encrypted sync of the keychain's synchronizable items between the user's machines, through a
/// `keychain-sync-server` that stores only ciphertext (see SYNC.md).
///
/// The first machine makes an account; each further one asks to join it, shows a code, and is approved on a
/// machine of the account:
///
/// ```swift
/// // On the first machine:
/// let account = try await store.createSyncAccount(server: URL(string: "https://sync.example.com")!)
/// // On the first machine, for each new one: a one-time invitation (15 minutes).
/// let invitation = try await store.createSyncInvitation()
/// // On the new machine:
/// if case .pending(let code, let fingerprint) = try await store.joinSyncAccount(account, server: server, invitation: invitation.code) {
///     print("Approve \(code) on a machine of the account (fingerprint \(fingerprint)), then join again.")
/// }
/// // On the first machine:
/// let fingerprint = try await store.approveSyncDevice(code: code, name: "laptop")
/// // On the new machine, once approved:
/// _ = try await store.joinSyncAccount(account, server: server)   // .joined
/// ```
///
/// The sync engine runs where the keychain is served: in keychaind when it serves the keychain (it syncs in the
/// background for as long as it runs), else in this process, where ``runSync()`` runs it in the background and
/// ``syncNow()`` runs one round. Every call here waits for the engine on a thread of its own, never on Swift's
/// cooperative pool, and may take the server's round trips. Through keychaind only the `security` tool installed
/// beside it may manage the account, its devices and rounds; any program may read the status.
extension KeychainStore {
    /// Where sync stands on this machine.
    public struct SyncStatus: Sendable, Hashable {
        /// The account this keychain belongs to; nil when it is in none.
        public let account: String?
        /// The sync server's address; nil when the keychain is in no account.
        public let server: URL?
        /// This machine's device identifier (32 hex digits); nil when the keychain is in no account.
        public let deviceID: String?
        /// Whether this machine finished joining: a machine of the account approved it and it holds the account's key.
        public let isJoined: Bool
        /// When the last round ended without error; nil before the first.
        public let lastSync: Date?
        /// Why the last round failed, when it did (never item data).
        public let lastError: String?
        /// Local changes not yet on the server.
        public let pendingChanges: Int
        /// Conflicts resolved by the conflict rule since the account was set up on this machine.
        public let conflictsResolved: Int
        /// Whether the engine holds a push connection to the server now (changes then arrive within a second;
        /// without it they arrive at the next poll).
        public let isPushConnected: Bool
        /// When this machine was removed from the account (it no longer syncs until it joins again); nil otherwise.
        public let removal: SyncRemovalInfo?
        /// The round running now, and how far it got; nil when none runs.
        public let runningRound: SyncTransferProgress?

        init(_ report: SyncStatusReport) {
            account = report.account
            server = report.server.flatMap(URL.init(string:))
            deviceID = report.device
            isJoined = report.joined
            lastSync = report.lastSync
            lastError = report.lastError
            pendingChanges = report.pendingChanges
            conflictsResolved = report.conflictsResolved
            isPushConnected = report.pushConnected
            removal = report.removal.map { SyncRemovalInfo(date: $0.date, removedBy: $0.by) }
            runningRound = report.running.map(SyncTransferProgress.init)
        }
    }

    /// How this machine learned it was removed from its sync account.
    public struct SyncRemovalInfo: Sendable, Hashable {
        /// When it was removed, as the server recorded it.
        public let date: Date?
        /// The machine that removed it: its name in the device list this machine last trusted, else its device
        /// identifier.
        public let removedBy: String?
    }

    /// What a round read from the server and sent to it, so far or in all.
    public struct SyncTransferProgress: Sendable, Hashable {
        /// Records read from the server.
        public let receivedRecords: Int
        /// Their sealed size, in bytes.
        public let receivedBytes: Int
        /// Records the server took.
        public let sentRecords: Int
        /// Their sealed size, in bytes.
        public let sentBytes: Int
        /// The local changes the round has to send (0 until it has read the server's changes).
        public let toSend: Int

        init(_ transfer: SyncTransfer) {
            receivedRecords = transfer.receivedRecords
            receivedBytes = transfer.receivedBytes
            sentRecords = transfer.sentRecords
            sentBytes = transfer.sentBytes
            toSend = transfer.toSend
        }
    }

    /// One trusted machine of the sync account.
    public struct SyncDevice: Sendable, Hashable, Identifiable {
        /// Its device identifier (32 hex digits), as ``removeSyncDevice(id:)`` takes it.
        public let id: String
        /// The name the approving machine gave it.
        public let name: String
        /// Its key fingerprint, as it showed when it joined.
        public let fingerprint: String
        /// When it was added to the account.
        public let added: Date
        /// Whether it is this machine.
        public let isThisDevice: Bool
    }

    /// What one sync round did.
    public struct SyncRound: Sendable, Hashable {
        /// Changes from other machines applied to this keychain.
        public let applied: Int
        /// Local changes the server took.
        public let uploaded: Int
        /// Conflicts resolved by the conflict rule.
        public let conflictsResolved: Int
        /// Records that did not open (moved, replayed, altered, or sealed with a key this machine lacks) and were ignored.
        public let rejected: Int
        /// What the round read and sent.
        public let transfer: SyncTransferProgress
    }

    /// Where joining an account stands.
    public enum SyncJoinState: Sendable, Hashable {
        /// Waiting for approval: type `code` on a machine of the account (`security sync approve CODE`, or
        /// ``approveSyncDevice(code:name:)``), check that it shows `fingerprint`, then join again.
        case pending(code: String, fingerprint: String)
        /// Joined: this machine holds the account's key and syncs.
        case joined(account: String)
    }

    /// The name a machine gets when none is given: its host name.
    public static var defaultSyncDeviceName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "this device" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "this device" : name
    }

    /// Makes a new sync account on the server at `server` with this machine as its first device, and returns the
    /// account's identifier, which other machines join with ``joinSyncAccount(_:server:invitation:)``.
    ///
    /// - Parameters:
    ///   - server: The sync server's address (`https://…`, or `http://…` on a trusted network).
    ///   - deviceName: What this machine is called in the account's device list (default: its host name).
    ///   - accountToken: A token from the server's operator, when the server creates accounts by token only.
    /// - Throws: `KeychainError` with `KeychainStatus/param` for an address that is not http or https or an empty
    ///   name, `KeychainStatus/duplicateItem` when the keychain is already in an account, the server's failure
    ///   otherwise.
    public func createSyncAccount(
        server: URL, deviceName: String = KeychainStore.defaultSyncDeviceName, accountToken: String? = nil
    ) async throws(KeychainError) -> String {
        try Self.check(server: server)
        try Self.check(deviceName: deviceName)
        let reply = try await sync(.createAccount(server: server.absoluteString, deviceName: deviceName, accountToken: accountToken))
        guard case .accountCreated(let account) = reply else { throw Self.unexpected(reply) }
        return account
    }

    /// Asks to join `account` on the server at `server` with an invitation a machine of the account made
    /// (``createSyncInvitation()``: its code), or, asked again once a machine of the account approved this one,
    /// completes the join (no invitation needed then).
    ///
    /// - Returns: ``SyncJoinState/pending(code:fingerprint:)`` until approved, then ``SyncJoinState/joined(account:)``.
    /// - Throws: `KeychainError` with `KeychainStatus/param` for an address that is not http or https, an empty
    ///   account, a malformed invitation or none for a new request, the server's failure otherwise (an invitation
    ///   that lapsed or was used: `KeychainStatus/authFailed`).
    public func joinSyncAccount(_ account: String, server: URL, invitation: String? = nil) async throws(KeychainError) -> SyncJoinState {
        try Self.check(server: server)
        guard !account.isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "The account is empty. Give the account identifier `security sync create-account` printed on the first machine.")
        }
        let reply = try await sync(.join(server: server.absoluteString, account: account, invitation: invitation))
        switch reply {
        case .joinPending(let code, let fingerprint): return .pending(code: code, fingerprint: fingerprint)
        case .joined(let account): return .joined(account: account)
        default: throw Self.unexpected(reply)
        }
    }

    /// A one-time invitation to join this machine's account, made with ``createSyncInvitation()``.
    public struct SyncInvitation: Sendable, Hashable {
        /// The code to type on the new machine (`XXXX-XXXX-XXXX`).
        public let code: String
        /// The URI that carries it with the server's address and the account (for a QR code).
        public let uri: String
        /// When it lapses (15 minutes after it was made); it admits one machine.
        public let expires: Date
    }

    /// A machine waiting to join the account.
    public struct SyncPendingDevice: Sendable, Hashable, Identifiable {
        /// Its device identifier.
        public let id: String
        /// The join code it shows (what ``approveSyncDevice(code:name:)`` takes).
        public let code: String
        /// Its key fingerprint.
        public let fingerprint: String
        /// When it asked.
        public let requested: Date
    }

    /// The server, account and code an invitation's URI carries (``SyncInvitation/uri``), for
    /// ``joinSyncAccount(_:server:invitation:)``.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/param` when `uri` is not an invitation's URI.
    public static func syncInvitation(fromURI uri: String) throws(KeychainError) -> (server: URL, account: String, code: String) {
        let parts = try SyncInvitationURI.parse(uri)
        guard let server = URL(string: parts.server) else {
            throw KeychainError(code: .invalidParameter, message: "The invitation names no server address; ask for a new invitation.")
        }
        return (server, parts.account, parts.code)
    }

    /// Makes a one-time invitation for another machine to join the account: the server admits one join request
    /// that carries it within 15 minutes, and no join request without one.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when this keychain is in no account.
    public func createSyncInvitation() async throws(KeychainError) -> SyncInvitation {
        let reply = try await sync(.invite)
        guard case .invitation(let code, let uri, let expires) = reply else { throw Self.unexpected(reply) }
        return SyncInvitation(code: code, uri: uri, expires: expires)
    }

    /// The machines waiting to join the account, oldest first.
    public func pendingSyncDevices() async throws(KeychainError) -> [SyncPendingDevice] {
        let reply = try await sync(.pending)
        guard case .pending(let devices) = reply else { throw Self.unexpected(reply) }
        return devices.map { SyncPendingDevice(id: $0.id, code: $0.code, fingerprint: $0.fingerprint, requested: $0.requested) }
    }

    /// Rejects a machine waiting to join, by its identifier or the code it shows: it can never join with that key.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when no waiting machine matches.
    public func rejectSyncDevice(_ device: String) async throws(KeychainError) {
        let reply = try await sync(.reject(device: device))
        guard case .rejected = reply else { throw Self.unexpected(reply) }
    }

    /// Approves the machine that shows `code` (``SyncJoinState/pending(code:fingerprint:)`` there), naming it
    /// `name`: it is added to the account's device list and given the account's key.
    ///
    /// - Returns: The approved machine's fingerprint: check that the new machine shows the same.
    /// - Throws: `KeychainError` with `KeychainStatus/param` for a code that is not ten letters and digits
    ///   (`XXXXX-XXXXX`) or an empty name, `KeychainStatus/itemNotFound` when this keychain is in no account or no
    ///   machine asking to join shows the code.
    public func approveSyncDevice(code: String, name: String) async throws(KeychainError) -> String {
        try Self.check(deviceName: name)
        let reply = try await sync(.approve(code: code, deviceName: name))
        guard case .approved(let fingerprint) = reply else { throw Self.unexpected(reply) }
        return fingerprint
    }

    /// The account's trusted machines.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when this keychain is in no account.
    public func syncDevices() async throws(KeychainError) -> [SyncDevice] {
        let reply = try await sync(.devices)
        guard case .devices(let devices) = reply else { throw Self.unexpected(reply) }
        return devices.map {
            SyncDevice(id: $0.id, name: $0.name, fingerprint: $0.fingerprint, added: $0.added, isThisDevice: $0.isThisDevice)
        }
    }

    /// Removes a machine from the account (by ``SyncDevice/id``): a new account key seals everything written
    /// afterwards, which the removed machine cannot open.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when this keychain is in no account or no
    ///   device has the identifier.
    public func removeSyncDevice(id: String) async throws(KeychainError) {
        let reply = try await sync(.removeDevice(id: id))
        guard case .removed = reply else { throw Self.unexpected(reply) }
    }

    /// Where sync stands on this machine (also when the keychain is in no account: then ``SyncStatus/account`` is nil).
    public func syncStatus() async throws(KeychainError) -> SyncStatus {
        let reply = try await sync(.status)
        guard case .status(let report) = reply else { throw Self.unexpected(reply) }
        return SyncStatus(report)
    }

    /// Syncs now: reads the server's changes, applies them, and uploads the local ones.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when this keychain is in no account (make one
    ///   with ``createSyncAccount(server:deviceName:accountToken:)`` or join one), `KeychainError/Code/syncDeviceRemoved` when
    ///   this machine was removed from its account (join again: it then gets a new device key), the server's
    ///   failure otherwise.
    public func syncNow() async throws(KeychainError) -> SyncRound {
        let reply = try await sync(.now)
        guard case .round(let round) = reply else { throw Self.unexpected(reply) }
        return SyncRound(
            applied: round.applied, uploaded: round.uploaded, conflictsResolved: round.conflictsResolved,
            rejected: round.rejected, transfer: SyncTransferProgress(round.transfer))
    }

    /// The sync status as it changes: the status at once, then each time it differs, looked at every `interval`
    /// (the same in this process and through keychaind).
    ///
    /// ```swift
    /// for try await status in store.syncEvents(interval: .seconds(2)) {
    ///     print(status.lastSync ?? "never", status.pendingChanges)
    /// }
    /// ```
    ///
    /// The sequence ends when the task is cancelled, and fails with the error when the status cannot be read.
    public func syncEvents(interval: Duration = .seconds(5)) -> SyncEvents {
        SyncEvents(store: self, interval: interval)
    }

    /// Runs the sync engine in this process until the task is cancelled: a round at start when the keychain is in
    /// an account, then on the server's push, after local writes, and at the poll interval, retrying after failures.
    /// A program that opens its keychain itself (no keychaind) runs this for as long as it wants its keychain to sync.
    /// When keychaind serves the keychain it returns at once: keychaind syncs it.
    public func runSync() async {
        #if Network
        SyncServices.register()
        #endif
        await connection.runSync()
    }

    /// The status changes ``syncEvents(interval:)`` yields.
    public struct SyncEvents: AsyncSequence, Sendable {
        public typealias Element = SyncStatus
        public typealias Failure = KeychainError

        let store: KeychainStore
        let interval: Duration

        public func makeAsyncIterator() -> Iterator {
            Iterator(store: store, interval: interval)
        }

        /// Reads the status every interval and returns it when it changed.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = SyncStatus
            public typealias Failure = KeychainError

            let store: KeychainStore
            let interval: Duration
            var last: SyncStatus?

            /// The next status that differs from the last one returned; nil once the task is cancelled.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(KeychainError) -> SyncStatus? {
                while !Task.isCancelled {
                    if last != nil {
                        do {
                            try await Task.sleep(for: interval)
                        } catch {
                            return nil
                        }
                    }
                    let status = try await store.syncStatus()
                    if status != last {
                        last = status
                        return status
                    }
                }
                return nil
            }

            /// The next status that differs from the last one returned; nil once the task is cancelled.
            public mutating func next() async throws(KeychainError) -> SyncStatus? {
                try await next(isolation: nil)
            }
        }
    }

    // MARK: The seam

    /// Sends `command` to the sync engine: this process's, or keychaind's.
    func sync(_ command: SyncCommand) async throws(KeychainError) -> SyncReply {
        #if Network
        SyncServices.register()
        #endif
        return try await connection.sync(command)
    }

    static func check(server: URL) throws(KeychainError) {
        guard let scheme = server.scheme?.lowercased(), scheme == "https" || scheme == "http", server.host?.isEmpty == false else {
            throw KeychainError(code: .invalidParameter, message: "The sync server's address must be an https (or http) URL with a host, like https://sync.example.com.")
        }
    }

    static func check(deviceName: String) throws(KeychainError) {
        guard !deviceName.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "The device name is empty. Give a name the account's device list shows, like the machine's host name.")
        }
    }

    static func unexpected(_ reply: SyncReply) -> KeychainError {
        KeychainError(code: .internal, message: "The sync engine answered with something else than asked. Install keychaind and this program from the same release.")
    }
}
