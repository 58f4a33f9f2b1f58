#if Network
import AsyncHTTPClient
import Foundation
import KeychainCore
import KeychainNetwork
import KeychainSync
import KeychainSyncAPI
import NIOCore
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The sync server as this device talks to it: every call of the API document, through the client generated from
/// it, signed by the device's key. Answers other than success become ``KeychainError``s whose message carries the
/// server's own (which says what to do).
package struct SyncServerConnection: Sendable {
    let client: Client
    /// The device that signs.
    package let keys: SyncDeviceKeys

    /// A connection to the server at `url` (`https://sync.example.com`), signing as `keys`.
    package init(url: URL, keys: SyncDeviceKeys, now: @escaping @Sendable () -> Date = Date.init) {
        client = Client(
            serverURL: url, transport: AsyncHTTPClientTransport(configuration: .init(client: Self.httpClient, timeout: .seconds(60))),
            middlewares: [SyncRequestSigner(keys: keys, now: now)])
        self.keys = keys
    }

    /// The HTTP client every connection shares. A server that cannot be reached fails the call at once instead of
    /// after a minute of quiet retries: the sync service retries with its own backoff, and a person running
    /// `security sync now` learns it at once.
    static let httpClient = HTTPClient.keychainShared(connectTimeout: .seconds(10), readTimeout: .seconds(60))

    // MARK: Accounts and devices

    /// Creates `account` with this device as its only one (list version 1) and its first zone key.
    package func createAccount(_ account: String, list: SignedSyncDeviceList, zoneKey: SyncZoneKey, token: String? = nil) async throws(KeychainError) {
        let wrapped = try zoneKey.wrapped(to: keys.publicKeys, account: account)
        let body = Components.Schemas.CreateAccountRequest(
            accountId: account, device: Self.keys(keys.publicKeys), deviceList: Self.list(list),
            zoneKeys: [.init(keyId: zoneKey.keyID, recipient: keys.publicKeys.deviceID, wrapped: .init(wrapped))])
        let output = try await call { try await client.createAccount(headers: .init(keychainAccountToken: token), body: .json(body)) }
        switch output {
        case .created: return
        case .conflict(let answer): throw Self.refused(try? answer.body.json, status: 409)
        default: throw Self.unexpected(output)
        }
    }

    /// Asks to join `account` with an invitation's secret (not needed to ask again while pending).
    package func requestJoin(_ account: String, invitation: SyncInvitation? = nil) async throws(KeychainError) {
        let body = Components.Schemas.JoinRequest(
            device: Self.keys(keys.publicKeys),
            codeHash: .init(Array(keys.publicKeys.joinCode.characters.utf8)), invitation: invitation?.secret)
        let output = try await call { try await client.requestJoin(path: .init(account: account), body: .json(body)) }
        switch output {
        case .accepted: return
        case .notFound(let answer): throw Self.refused(try? answer.body.json, status: 404)
        case .conflict(let answer): throw Self.refused(try? answer.body.json, status: 409)
        default: throw Self.unexpected(output)
        }
    }

    /// The devices waiting to join `account`, with their keys and when they asked.
    package func pendingDevices(_ account: String) async throws(KeychainError) -> [(keys: SyncDevicePublicKeys, requested: Date)] {
        let output = try await call { try await client.listJoins(path: .init(account: account)) }
        guard case .ok(let answer) = output, let pending = try? answer.body.json.pending else { throw Self.unexpected(output) }
        return pending.compactMap { device in
            (try? Self.keys(device.device)).map { ($0, Date(timeIntervalSince1970: TimeInterval(device.requested) / 1000)) }
        }
    }

    /// Records a one-time invitation to `account` (its hash), lasting `lifetime`; returns when it lapses.
    package func createInvitation(_ account: String, _ invitation: SyncInvitation, lifetime: Duration) async throws(KeychainError) -> Date {
        let body = Components.Schemas.Invitation(tokenHash: .init(invitation.hash), lifetimeSeconds: lifetime.components.seconds)
        let output = try await call { try await client.createInvitation(path: .init(account: account), body: .json(body)) }
        switch output {
        case .created(let answer):
            guard let created = try? answer.body.json else { throw Self.unexpected(output) }
            return Date(timeIntervalSince1970: TimeInterval(created.expires) / 1000)
        case .conflict(let answer): throw Self.refused(try? answer.body.json, status: 409)
        default: throw Self.unexpected(output)
        }
    }

    /// Rejects the pending device `device` of `account` for good.
    package func rejectJoin(_ account: String, device: String) async throws(KeychainError) {
        let output = try await call { try await client.rejectJoin(path: .init(account: account, device: device)) }
        switch output {
        case .noContent: return
        case .notFound(let answer): throw Self.refused(try? answer.body.json, status: 404)
        default: throw Self.unexpected(output)
        }
    }

    /// The account's current signed device list (not yet verified: see ``SignedSyncDeviceList``).
    package func deviceList(_ account: String) async throws(KeychainError) -> SignedSyncDeviceList {
        guard let list = try await deviceListIfTrusted(account) else {
            throw KeychainError(code: .authenticationFailed, message: "This device is not trusted in the account yet: approve it on a device of the account, then try again.")
        }
        return list
    }

    /// The device list, or nil while this device waits to join (the server shows it to trusted devices only).
    package func deviceListIfTrusted(_ account: String) async throws(KeychainError) -> SignedSyncDeviceList? {
        let output = try await call { try await client.getDeviceList(path: .init(account: account)) }
        if case .forbidden(let answer) = output, (try? answer.body.json.error) == "not_trusted" { return nil }
        guard case .ok(let answer) = output, let list = try? answer.body.json else { throw Self.unexpected(output) }
        return try Self.list(list)
    }

    /// What putting a device list gave.
    package enum ListOutcome: Sendable {
        /// It is in force.
        case accepted
        /// Another version came first: this is the current one.
        case conflict(SignedSyncDeviceList)
    }

    /// Puts the next device list.
    package func putDeviceList(_ account: String, _ list: SignedSyncDeviceList) async throws(KeychainError) -> ListOutcome {
        let output = try await call { try await client.putDeviceList(path: .init(account: account), body: .json(Self.list(list))) }
        switch output {
        case .ok: return .accepted
        case .conflict(let answer):
            guard let current = try? answer.body.json.current else { throw Self.unexpected(output) }
            return .conflict(try Self.list(current))
        default: throw Self.unexpected(output)
        }
    }

    /// Stores zone keys wrapped for devices: (key identifier, recipient device, wrapping).
    package func putZoneKeys(_ account: String, _ keys: [(keyID: String, recipient: String, wrapped: Data)]) async throws(KeychainError) {
        let body = Components.Schemas.ZoneKeys(keys: keys.map { .init(keyId: $0.keyID, recipient: $0.recipient, wrapped: .init($0.wrapped)) })
        let output = try await call { try await client.putZoneKeys(path: .init(account: account), body: .json(body)) }
        guard case .noContent = output else { throw Self.unexpected(output) }
    }

    /// The zone keys wrapped for this device: (key identifier, wrapping).
    package func zoneKeys(_ account: String) async throws(KeychainError) -> [(keyID: String, wrapped: Data)] {
        let output = try await call { try await client.getZoneKeys(path: .init(account: account)) }
        guard case .ok(let answer) = output, let keys = try? answer.body.json.keys else { throw Self.unexpected(output) }
        return keys.map { ($0.keyId, Data($0.wrapped.data)) }
    }

    // MARK: Records

    /// A record as the feed gives it.
    package struct FeedRecord: Sendable {
        /// The sealed record.
        package var record: SealedSyncRecord
        /// Its sequence number in the zone.
        package var seq: Int64
    }

    /// What writing a batch gave.
    package enum WriteOutcome: Sendable {
        /// Every write is in, at these versions (by item).
        case written([String: UInt64])
        /// Nothing is in: these items are at other versions (their current records, when they exist).
        case conflict([(itemID: String, currentVersion: UInt64, current: FeedRecord?)])
    }

    /// Writes `records`, each replacing `expected` (all or nothing).
    package func write(_ account: String, zone: String, _ records: [(record: SealedSyncRecord, expected: UInt64, deleted: Bool)]) async throws(KeychainError) -> WriteOutcome {
        let body = Components.Schemas.WriteBatch(
            writes: records.map {
                .init(
                    itemId: $0.record.address.itemID, expectedVersion: Int64($0.expected), deleted: $0.deleted,
                    ciphertext: .init($0.record.ciphertext), wrappedKey: .init($0.record.wrappedKey), keyId: $0.record.keyID)
            })
        let output = try await call { try await client.writeRecords(path: .init(account: account, zone: zone), body: .json(body)) }
        switch output {
        case .ok(let answer):
            guard let result = try? answer.body.json else { throw Self.unexpected(output) }
            return .written(Dictionary(result.records.map { ($0.itemId, UInt64(max(0, $0.version))) }, uniquingKeysWith: { $1 }))
        case .conflict(let answer):
            guard let conflict = try? answer.body.json else { throw Self.unexpected(output) }
            return .conflict(
                conflict.conflicts.map { item in
                    (item.itemId, UInt64(max(0, item.currentVersion)), item.current.map { Self.record($0, account: account, zone: zone) })
                })
        default: throw Self.unexpected(output)
        }
    }

    /// What reading the feed gave.
    package enum FeedPage: Sendable {
        /// Records after `since`, up to `next`; `more` when there are others after them.
        case records([FeedRecord], next: Int64, more: Bool)
        /// Changes were purged past `since`: read from 0 again.
        case resync
    }

    /// The zone's changes after `since`.
    package func changes(_ account: String, zone: String, since: Int64, limit: Int32 = 500) async throws(KeychainError) -> FeedPage {
        let output = try await call {
            try await client.getChanges(path: .init(account: account, zone: zone), query: .init(since: since, limit: limit))
        }
        switch output {
        case .ok(let answer):
            guard let page = try? answer.body.json else { throw Self.unexpected(output) }
            return .records(page.records.map { Self.record($0, account: account, zone: zone) }, next: page.next, more: page.more)
        case .gone:
            return .resync
        default: throw Self.unexpected(output)
        }
    }

    // MARK: Conversions

    static func keys(_ keys: SyncDevicePublicKeys) -> Components.Schemas.DeviceKeys {
        .init(signingKey: .init(keys.signing.rawRepresentation), agreementKey: .init(keys.agreement.rawRepresentation))
    }

    static func keys(_ keys: Components.Schemas.DeviceKeys) throws(KeychainError) -> SyncDevicePublicKeys {
        try SyncDevicePublicKeys(signing: Data(keys.signingKey.data), agreement: Data(keys.agreementKey.data))
    }

    static func list(_ list: SignedSyncDeviceList) -> Components.Schemas.DeviceList {
        .init(
            deviceList: .init(list.bytes), deviceListVersion: Int64(list.list.version),
            trustedDeviceIds: list.list.devices.map(\.deviceID), signer: list.signer, signature: .init(list.signature))
    }

    static func list(_ list: Components.Schemas.DeviceList) throws(KeychainError) -> SignedSyncDeviceList {
        try SignedSyncDeviceList(bytes: Data(list.deviceList.data), signer: list.signer, signature: Data(list.signature.data))
    }

    static func record(_ record: Components.Schemas.Record, account: String, zone: String) -> FeedRecord {
        FeedRecord(
            record: SealedSyncRecord(
                address: SyncRecordAddress(account: account, zone: zone, itemID: record.itemId, version: UInt64(max(0, record.version))),
                keyID: record.keyId, ciphertext: Data(record.ciphertext.data), wrappedKey: Data(record.wrappedKey.data)), seq: record.seq)
    }

    // MARK: Errors

    /// Runs a call, turning a transport failure into a clear error.
    func call<Output: Sendable>(_ body: () async throws -> Output) async throws(KeychainError) -> Output {
        do {
            return try await body()
        } catch {
            throw KeychainError(
                code: .io, message: "The sync server could not be reached or answered nonsense; check its address and your network, then try again.",
                cause: SyncTransportFailure(error))
        }
    }

    /// The server's refusal, with its message.
    static func refused(_ error: Components.Schemas._Error?, status: Int) -> KeychainError {
        let code: KeychainError.Code =
            switch status {
            case 404: .itemNotFound
            case 409: .duplicateItem
            default: .authenticationFailed
            }
        return KeychainError(code: code, message: "The sync server refused (\(status) \(error?.error ?? "")): \(error?.message ?? "no reason given").")
    }

    /// An answer the call does not expect (a refusal of the request, the device or its signature): the server's
    /// own error and message when the answer carries them (`forbidden, device_removed: This device was removed…`).
    static func unexpected(_ output: some Sendable) -> KeychainError {
        let answer = Mirror(reflecting: output).children.first
        let kind = answer?.label ?? "an answer without a status"
        if let error = answer.flatMap({ serverError(in: $0.value, depth: 0) }) {
            if error.error == "device_removed" {
                let removal = SyncRemovalNotice(
                    date: error.removedAt.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }, byDevice: error.removedBy)
                return KeychainError(
                    code: .syncDeviceRemoved,
                    message: "This machine was removed from its sync account, and no longer syncs. To sync again, join the account again with `security sync join` (it makes a new device key).",
                    cause: removal)
            }
            return KeychainError(code: .authenticationFailed, message: "The sync server refused the request (\(kind), \(error.error.prefix(100))): \(error.message.prefix(300))")
        }
        return KeychainError(
            code: .authenticationFailed,
            message: "The sync server gave an answer this device does not expect (\(kind)); check the server's address, and that this device's software is as new as the server's.")
    }

    /// The error document somewhere in a generated answer (its body's JSON), found by reflection so that one
    /// function serves every operation's answers.
    static func serverError(in value: Any, depth: Int) -> Components.Schemas._Error? {
        if let error = value as? Components.Schemas._Error { return error }
        guard depth < 6 else { return nil }
        for child in Mirror(reflecting: value).children {
            if let error = serverError(in: child.value, depth: depth + 1) { return error }
        }
        return nil
    }
}

/// The server's word that this device was removed: when, and by which device's list (as the server says; the
/// removed device can no longer check it).
package struct SyncRemovalNotice: Error, Sendable, Hashable, CustomStringConvertible {
    /// When the device was removed.
    package var date: Date?
    /// The identifier of the device whose list left it out.
    package var byDevice: String?

    package var description: String {
        "removed\(date.map { " on \($0.formatted(.iso8601))" } ?? "")\(byDevice.map { " by device \($0.prefix(64))" } ?? "")"
    }
}

/// What went wrong under a call that failed before the server's answer could be read: the operation, what the
/// OpenAPI client says happened (sending, decoding…) and the transport's own error (`HTTPClientError.connectTimeout`,
/// a socket's errno). Neither the request nor its body is described: they carry the device's signatures and
/// wrapped keys.
struct SyncTransportFailure: Error, Sendable, CustomStringConvertible {
    let description: String

    init(_ error: any Error) {
        guard let client = error as? ClientError else {
            description = Self.describe(error)
            return
        }
        var parts = ["\(client.operationID): \(client.causeDescription)"]
        if let status = client.response?.status { parts.append("answer \(status.code)") }
        parts.append(Self.describe(client.underlyingError))
        description = parts.joined(separator: ", ")
    }

    /// An error whose own description names no secret (the HTTP client's errors, socket errors, decoding paths),
    /// else its type alone.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as HTTPClientError: String(describing: error)
        case let error as IOError: String(describing: error)
        case let error as DecodingError: "DecodingError at \(Self.path(of: error))"
        case let error as ClientError: Self.describe(error.underlyingError)
        default: String(describing: type(of: error))
        }
    }

    /// Where in the answer a decoding failed (`devices.0.name`): names from the API document, never a value.
    static func path(of error: DecodingError) -> String {
        let context: DecodingError.Context? =
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context): context
            @unknown default: nil
            }
        let keys = context?.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } ?? []
        return keys.isEmpty ? "the top" : keys.joined(separator: ".")
    }
}
#endif
