#if Network
import Foundation
import KeychainCore
import KeychainSync

/// One device's membership in a sync account and the work of syncing: making the account, joining it, approving
/// and removing devices, and sync rounds (read the feed and apply it, then upload local changes).
///
/// What it keeps: the device's keys and zone keys in the keychain (``SyncKeyring``), the account, the server's
/// address, the trusted device list and the feed's position in the mirror beside it. Every step is durable before
/// the next, so a device killed at any point resumes from what it last recorded.
package final class SyncSession: Sendable {
    /// The zone every item lives in.
    package static let zone = "keychain"
    /// The most writes sent in one batch (the server's limit).
    static let batchSize = 500

    package let engine: KeychainEngine
    package let keyring: SyncKeyring
    package let replica: SyncReplica
    package let server: SyncServerConnection
    package let account: String
    /// The server's address (`https://sync.example.com`).
    package let serverURL: URL
    private let now: @Sendable () -> Date

    var mirror: SyncMirror { replica.mirror }

    init(
        engine: KeychainEngine, mirror: SyncMirror, keys: SyncDeviceKeys, serverURL: URL, account: String,
        now: @escaping @Sendable () -> Date
    ) {
        self.engine = engine
        keyring = SyncKeyring(engine: engine)
        replica = SyncReplica(engine: engine, mirror: mirror, device: keys.publicKeys.deviceID, now: now)
        server = SyncServerConnection(url: serverURL, keys: keys, now: now)
        self.account = account
        self.serverURL = serverURL
        self.now = now
    }

    /// The session of the account this keychain belongs to, from what the mirror at `mirrorPath` recorded.
    /// - Throws: ``KeychainError`` `itemNotFound` when this keychain is in no account yet.
    package static func open(engine: KeychainEngine, mirrorPath: String, now: @escaping @Sendable () -> Date = Date.init) throws(KeychainError) -> SyncSession {
        let mirror = try SyncMirror(path: mirrorPath)
        guard let account = try mirror.document("account").flatMap({ String(data: $0, encoding: .utf8) }),
            let server = try mirror.document("server").flatMap({ String(data: $0, encoding: .utf8) }).flatMap(URL.init(string:))
        else {
            throw KeychainError(code: .itemNotFound, message: "This keychain is in no sync account: run `security sync create-account` or `security sync join`.")
        }
        return SyncSession(
            engine: engine, mirror: mirror, keys: try SyncKeyring(engine: engine).deviceKeys(), serverURL: server,
            account: account, now: now)
    }

    // MARK: The account

    /// Makes a new account on the server at `serverURL` with this device (called `name`) as its first one.
    package static func createAccount(
        engine: KeychainEngine, mirrorPath: String, serverURL: URL, name: String, accountToken: String? = nil,
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws(KeychainError) -> SyncSession {
        let mirror = try SyncMirror(path: mirrorPath)
        let keyring = SyncKeyring(engine: engine)
        let keys = try keyring.deviceKeys()
        let account = UUID().uuidString.lowercased()
        let list = try SyncDeviceList(
            account: account, version: 1,
            devices: [
                SyncDeviceEntry(keys: keys.publicKeys, name: name, added: UInt64(now().timeIntervalSince1970))
            ])
        let signed = try list.signed(by: keys)
        let zoneKey = SyncZoneKey(now: now())
        let session = SyncSession(engine: engine, mirror: mirror, keys: keys, serverURL: serverURL, account: account, now: now)
        try await session.server.createAccount(account, list: signed, zoneKey: zoneKey, token: accountToken)
        try keyring.save(zoneKey)
        try session.remember(server: serverURL, list: signed)
        return session
    }

    /// Asks to join `account` on the server at `serverURL`; returns the code to approve on a device of the account
    /// (`security sync approve CODE`) and this device's fingerprint. ``finishJoining()`` completes it once approved.
    package static func join(
        engine: KeychainEngine, mirrorPath: String, serverURL: URL, account: String, invitation: SyncInvitation?,
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws(KeychainError) -> (session: SyncSession, code: SyncJoinCode, fingerprint: String) {
        let mirror = try SyncMirror(path: mirrorPath)
        let keys = try SyncKeyring(engine: engine).deviceKeys()
        let session = SyncSession(engine: engine, mirror: mirror, keys: keys, serverURL: serverURL, account: account, now: now)
        try await session.server.requestJoin(account, invitation: invitation)
        try mirror.setDocument("account", Data(account.utf8))
        try mirror.setDocument("server", Data(serverURL.absoluteString.utf8))
        return (session, keys.publicKeys.joinCode, keys.publicKeys.fingerprint)
    }

    /// Completes joining once a device approved this one: takes the device list (which must list this device and be
    /// signed by a device it lists) and the zone keys wrapped for this device. False while not approved yet.
    package func finishJoining() async throws(KeychainError) -> Bool {
        let keys = try keyring.deviceKeys()
        // A device waiting for approval is shown nothing of the account.
        guard let offered = try await server.deviceListIfTrusted(account) else { return false }
        guard offered.list.device(keys.publicKeys.deviceID) != nil else { return false }
        guard let signer = offered.list.device(offered.signer),
            signer.keys.signing.isValidSignature(offered.signature, for: offered.bytes), offered.list.account == account
        else {
            throw KeychainError(code: .verifyFailed, message: "The device list offered to this device is not signed by a device it lists; the server may have been tampered with. Nothing was joined.")
        }
        guard try await takeZoneKeys() > 0 else { return false }
        try mirror.setDocument("list", Self.encode(offered))
        return true
    }

    /// The trusted device list as this device last verified it.
    package func trustedList() throws(KeychainError) -> SignedSyncDeviceList {
        guard let stored = try mirror.document("list") else {
            throw KeychainError(code: .itemNotFound, message: "This device has not finished joining its sync account: approve it on another device, then run `security sync join` again.")
        }
        return try Self.decode(stored)
    }

    /// Approves the device that shows `code`: signs the next device list with it, and wraps the zone keys to it.
    /// Returns its fingerprint, for the person to compare.
    @discardableResult
    package func approve(_ code: SyncJoinCode, name: String) async throws(KeychainError) -> String {
        let keys = try keyring.deviceKeys()
        guard let newcomer = try await server.pendingDevices(account).map(\.keys).first(where: { $0.joinCode == code }) else {
            throw KeychainError(code: .itemNotFound, message: "No device waiting to join shows \(code); check the code on the new device (it changes if it asked again), or ask it to join again.")
        }
        let trusted = try await refreshList()
        let next = try trusted.list.successor(adding: [SyncDeviceEntry(keys: newcomer, name: name, added: UInt64(now().timeIntervalSince1970))])
        try await putList(next.signed(by: keys))
        var wrapped: [(keyID: String, recipient: String, wrapped: Data)] = []
        for key in try keyring.zoneKeys().values {
            wrapped.append((key.keyID, newcomer.deviceID, try key.wrapped(to: newcomer, account: account)))
        }
        try await server.putZoneKeys(account, wrapped)
        return newcomer.fingerprint
    }

    /// Makes a one-time invitation to join the account, lasting `lifetime` (15 minutes at most).
    package func invite(lifetime: Duration = .seconds(900)) async throws(KeychainError) -> (invitation: SyncInvitation, uri: String, expires: Date) {
        _ = try trustedList()
        let invitation = SyncInvitation()
        let expires = try await server.createInvitation(account, invitation, lifetime: lifetime)
        return (invitation, invitation.uri(server: serverURL, account: account), expires)
    }

    /// The devices waiting to join.
    package func pending() async throws(KeychainError) -> [SyncPendingDevice] {
        try await server.pendingDevices(account).map { device in
            SyncPendingDevice(
                id: device.keys.deviceID, code: device.keys.joinCode.description, fingerprint: device.keys.fingerprint,
                requested: device.requested)
        }
    }

    /// Rejects the waiting device whose identifier, or join code, is `device`; returns its identifier.
    @discardableResult
    package func reject(_ device: String) async throws(KeychainError) -> String {
        let waiting = try await pending()
        let code = try? SyncJoinCode(parsing: device)
        guard let match = waiting.first(where: { $0.id == device.lowercased() || code.map(\.description) == $0.code }) else {
            throw KeychainError(code: .itemNotFound, message: "No device waiting to join is \(device.prefix(64)) (see `security sync pending`).")
        }
        try await server.rejectJoin(account, device: match.id)
        return match.id
    }

    /// Removes device `id`: the next device list leaves it out, and a new zone key, wrapped to the devices that
    /// remain, seals everything written from now on.
    package func removeDevice(_ id: String) async throws(KeychainError) {
        let keys = try keyring.deviceKeys()
        let trusted = try await refreshList()
        guard trusted.list.device(id) != nil else {
            throw KeychainError(code: .itemNotFound, message: "Device \(id) is not in this account (see `security sync devices`).")
        }
        let next = try trusted.list.successor(removing: [id])
        try await putList(next.signed(by: keys))
        let zoneKey = SyncZoneKey(now: now())
        try keyring.save(zoneKey)
        var wrapped: [(keyID: String, recipient: String, wrapped: Data)] = []
        for device in next.devices {
            wrapped.append((zoneKey.keyID, device.deviceID, try zoneKey.wrapped(to: device.keys, account: account)))
        }
        try await server.putZoneKeys(account, wrapped)
    }

    /// The server's device list, accepted only after checking it follows the one this device trusts.
    func refreshList() async throws(KeychainError) -> SignedSyncDeviceList {
        let trusted = try trustedList()
        let current = try await server.deviceList(account)
        guard current.list.version > trusted.list.version else { return trusted }
        _ = try current.verifiedSuccessor(of: trusted.list)
        try mirror.setDocument("list", Self.encode(current))
        return current
    }

    func putList(_ list: SignedSyncDeviceList) async throws(KeychainError) {
        switch try await server.putDeviceList(account, list) {
        case .accepted:
            try mirror.setDocument("list", Self.encode(list))
        case .conflict:
            throw KeychainError(code: .duplicateItem, message: "Another device changed the device list meanwhile; try again.")
        }
    }

    /// Unwraps and keeps the zone keys the server holds for this device; returns how many it holds.
    @discardableResult
    func takeZoneKeys() async throws(KeychainError) -> Int {
        let keys = try keyring.deviceKeys()
        var held = try keyring.zoneKeys()
        for (keyID, wrapped) in try await server.zoneKeys(account) where held[keyID] == nil {
            let key = try SyncZoneKey.unwrap(wrapped, keyID: keyID, account: account, device: keys)
            try keyring.save(key)
            held[keyID] = key
        }
        return held.count
    }

    func remember(server: URL, list: SignedSyncDeviceList) throws(KeychainError) {
        try mirror.setDocument("account", Data(account.utf8))
        try mirror.setDocument("server", Data(server.absoluteString.utf8))
        try mirror.setDocument("list", Self.encode(list))
    }

    /// A signed list as stored in the mirror (`keychain-sync/stored-list/v1`: the list's bytes, its signer, its
    /// signature).
    static func encode(_ list: SignedSyncDeviceList) -> Data {
        var fields = SyncFields(domain: storedListDomain)
        fields.append(bytes: list.bytes)
        fields.append(list.signer)
        fields.append(bytes: list.signature)
        return fields.data
    }

    static func decode(_ data: Data) throws(KeychainError) -> SignedSyncDeviceList {
        let parts: (bytes: [UInt8], signer: String, signature: [UInt8])
        do throws(SyncFormatError) {
            var reader = try SyncFieldReader(data, domain: storedListDomain)
            parts = (try reader.field(), try reader.string(), try reader.field(maximum: 64))
            try reader.finish()
        } catch {
            throw KeychainError(code: .corruptData, message: "The trusted sync device list kept by this device is damaged (\(error.reason)); run `security sync join` again.")
        }
        return try SignedSyncDeviceList(bytes: Data(parts.bytes), signer: parts.signer, signature: Data(parts.signature))
    }

    static let storedListDomain = "keychain-sync/stored-list/v1"

    // MARK: Syncing

    /// What one round did.
    package struct RoundSummary: Sendable, Hashable {
        /// Incoming changes applied to the keychain.
        package var applied = 0
        /// Incoming changes that lost to a local one (which then goes out).
        package var keptLocal = 0
        /// Local changes the server took.
        package var uploaded = 0
        /// Writes refused as stale (taken up at the next round).
        package var conflicts = 0
        /// Records that did not open (moved, replayed, altered, or sealed with a key this device lacks).
        package var rejected = 0
        /// What was read and sent.
        package var transfer = SyncTransfer()
    }

    /// One round: the feed read to its end and applied, then every local change uploaded. `progress` is told what
    /// was read and sent so far after each page and each batch.
    package func syncOnce(progress: (SyncTransfer) -> Void = { _ in }) async throws(KeychainError) -> RoundSummary {
        var summary = RoundSummary()
        try await takeZoneKeys()
        var zoneKeys = try keyring.zoneKeys()
        var since = try mirror.setting("seq") ?? 0
        while true {
            switch try await server.changes(account, zone: Self.zone, since: since) {
            case .resync:
                since = 0
                try mirror.setSetting("seq", 0)
                continue
            case .records(let records, let next, let more):
                for feed in records {
                    summary.transfer.receivedRecords += 1
                    summary.transfer.receivedBytes += feed.record.ciphertext.count + feed.record.wrappedKey.count
                    if zoneKeys[feed.record.keyID] == nil {
                        // Sealed with a key made since (a device was removed): the server may hold it for us now.
                        try await takeZoneKeys()
                        zoneKeys = try keyring.zoneKeys()
                    }
                    let payload: SyncItemPayload
                    do {
                        payload = try SyncItemPayload(encoded: SyncRecordSeal.open(feed.record, zoneKey: { zoneKeys[$0] }))
                    } catch {
                        summary.rejected += 1
                        continue
                    }
                    switch try replica.apply(itemID: feed.record.address.itemID, version: feed.record.address.version, payload: payload) {
                    case .applied: summary.applied += 1
                    case .keptLocal: summary.keptLocal += 1
                    case .unchanged: break
                    }
                }
                since = max(since, next)
                try mirror.setSetting("seq", since)
                progress(summary.transfer)
                if !more { break }
                continue
            }
            break
        }
        guard let current = zoneKeys.keys.max().flatMap({ zoneKeys[$0] }) else {
            throw KeychainError(code: .notAvailable, message: "This device holds no zone key yet: it must be approved by a device of the account.")
        }
        let changes = try replica.outgoingChanges()
        summary.transfer.toSend = changes.count
        progress(summary.transfer)
        for start in stride(from: 0, to: changes.count, by: Self.batchSize) {
            let batch = Array(changes[start..<min(changes.count, start + Self.batchSize)])
            var sealed: [(record: SealedSyncRecord, expected: UInt64, deleted: Bool)] = []
            for change in batch {
                let address = SyncRecordAddress(account: account, zone: Self.zone, itemID: change.itemID, version: change.expectedVersion + 1)
                sealed.append(
                    (
                        try SyncRecordSeal.seal(change.payload.encoded, at: address, zoneKey: current), change.expectedVersion,
                        change.payload.isDeletion
                    ))
            }
            switch try await server.write(account, zone: Self.zone, sealed) {
            case .written(let versions):
                try replica.acknowledge(batch.map { ($0, versions[$0.itemID] ?? $0.expectedVersion + 1) })
                summary.uploaded += batch.count
                summary.transfer.sentRecords += batch.count
                summary.transfer.sentBytes += sealed.reduce(0) { $0 + $1.record.ciphertext.count + $1.record.wrappedKey.count }
                progress(summary.transfer)
            case .conflict(let stale):
                // Nothing of the batch was written; the stale items' current records are applied now, and the
                // rest goes out at the next round with what is current then.
                summary.conflicts += stale.count
                for item in stale {
                    guard let current = item.current,
                        let payload = try? SyncItemPayload(encoded: SyncRecordSeal.open(current.record, zoneKey: { zoneKeys[$0] }))
                    else { continue }
                    _ = try replica.apply(itemID: item.itemID, version: item.currentVersion, payload: payload)
                }
            }
        }
        return summary
    }
}
#endif
