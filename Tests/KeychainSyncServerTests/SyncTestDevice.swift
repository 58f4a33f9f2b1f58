#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import Synchronization
import Testing

/// A settable clock for one device: its keychain's modification dates and its sync session's stamps and request
/// times. It starts at the real time (whole seconds), so the server accepts the requests it dates, and moves only
/// when a test advances it, so the stamps a test makes are known in advance.
final class SyncTestClock: Sendable {
    private let milliseconds: Mutex<Int64>

    /// A clock at the current time, rounded down to the second.
    init() {
        milliseconds = Mutex(Int64(Date().timeIntervalSince1970) * 1000)
    }

    /// The time it shows.
    var now: Date { Date(timeIntervalSince1970: Double(milliseconds.withLock { $0 }) / 1000) }

    /// The time it shows, in milliseconds since 1970 (as a change's stamp carries it).
    var nowMilliseconds: UInt64 { UInt64(milliseconds.withLock { $0 }) }

    /// Moves it on by `by` milliseconds.
    func advance(milliseconds by: Int64) { milliseconds.withLock { $0 += by } }
}

/// A device: a keychain of its own on disk (in a temporary home), its clock, and its sync session once it made or
/// joined an account.
final class SyncTestDevice: @unchecked Sendable {
    static let everything = AccessPolicy(groups: ["*"])

    let home = FileManager.default.temporaryDirectory.path + "/sync-device-" + UUID().uuidString.prefix(8)
    let clock = SyncTestClock()
    let engine: KeychainEngine
    var session: SyncSession?
    var mirrorPath: String { home + "/sync-mirror.sqlite" }

    init() throws {
        let clock = self.clock
        engine = try KeychainEngine(location: KeychainLocation(home: home), now: { clock.now }, tpm: nil, passcodePolicy: .testing)
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    /// This device's identifier (what its stamps carry).
    var deviceID: String {
        get throws { try SyncKeyring(engine: engine).deviceKeys().publicKeys.deviceID }
    }

    /// The session, which the test must have made.
    var requiredSession: SyncSession {
        get throws { try #require(session) }
    }

    func query(_ service: String, account: String = "ann", group: String = "TEAM.mail") -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["svce": .string(service), "acct": .string(account), "agrp": .string(group)]
        q.sync = .any
        return q
    }

    func add(
        _ service: String, account: String = "ann", group: String = "TEAM.mail", label: String? = nil, secret: String,
        protection: String = "ak", synchronizable: Bool = true
    ) throws {
        var q = query(service, account: account, group: group)
        q.attributes["pdmn"] = .string(protection)
        if let label { q.attributes["labl"] = .string(label) }
        q.sync = synchronizable ? .synchronizable : .local
        q.valueData = Data(secret.utf8)
        _ = try engine.add(q, caller: Self.everything)
    }

    func update(_ service: String, account: String = "ann", group: String = "TEAM.mail", label: String? = nil, secret: String) throws {
        let changes: [String: AttributeValue] = label.map { ["labl": .string($0)] } ?? [:]
        try engine.update(
            query(service, account: account, group: group), attributes: changes, sync: nil, data: Data(secret.utf8),
            caller: Self.everything)
    }

    func delete(_ service: String, account: String = "ann", group: String = "TEAM.mail") throws {
        _ = try engine.delete(query(service, account: account, group: group), caller: Self.everything)
    }

    /// The items `q` finds; none for errSecItemNotFound.
    func found(_ q: ItemQuery) throws -> [FoundItem] {
        let result = Result { () throws(KeychainError) in try engine.find(q, caller: Self.everything) }
        if case .failure(let error) = result, error.code == .itemNotFound { return [] }
        return try result.get()
    }

    func secret(_ service: String, account: String = "ann", group: String = "TEAM.mail") throws -> String? {
        var q = query(service, account: account, group: group)
        q.returns.data = true
        return try found(q).first?.data.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every live synchronizable password, one line each: the attributes that travel and matter (service, account,
    /// group, label, accessibility) and the secret, sorted.
    func contents() throws -> [String] {
        var q = ItemQuery(itemClass: .genericPassword)
        q.sync = .synchronizable
        q.limit = .all
        q.returns = ReturnOptions(data: true, attributes: true)
        return try found(q).map { item in
            let fields = ["svce", "acct", "agrp", "labl", "pdmn"].map { item.attributes[$0]?.stringValue ?? "-" }
            return (fields + [String(decoding: item.data ?? Data(), as: UTF8.self)]).joined(separator: "|")
        }.sorted()
    }

    /// One sync round.
    @discardableResult
    func sync() async throws -> SyncSession.RoundSummary {
        try await requiredSession.syncOnce()
    }

    /// The server's address for instance `index` of `servers`.
    static func url(_ servers: TestServers, _ index: Int = 0) throws -> URL {
        try #require(URL(string: "http://127.0.0.1:\(servers.ports[index])"))
    }

    /// `count` devices in one new account on `servers`: the first makes it and invites each other, which asks to
    /// join with the invitation; the first approves it. Returns the devices and the account.
    static func account(of count: Int, on servers: TestServers) async throws -> ([SyncTestDevice], String) {
        let devices = try (0..<count).map { _ in try SyncTestDevice() }
        let first = devices[0], clock = first.clock
        first.session = try await SyncSession.createAccount(
            engine: first.engine, mirrorPath: first.mirrorPath, serverURL: url(servers),
            name: "device 0", now: { clock.now })
        let account = try first.requiredSession.account
        for (index, device) in devices.enumerated().dropFirst() {
            let clock = device.clock
            let joining = try await SyncSession.join(
                engine: device.engine, mirrorPath: device.mirrorPath, serverURL: url(servers),
                account: account, invitation: try await first.requiredSession.invite().invitation, now: { clock.now })
            device.session = joining.session
            try await first.requiredSession.approve(joining.code, name: "device \(index)")
            #expect(try await joining.session.finishJoining())
        }
        return (devices, account)
    }

    /// Rounds on every device, in turn, until one whole pass applies, uploads and rejects nothing and no device has
    /// a change left to send; at most `limit` passes. Returns the passes it took, or nil when it did not settle.
    static func settle(_ devices: [SyncTestDevice], limit: Int = 12) async throws -> Int? {
        for pass in 1...limit {
            var quiet = true
            for device in devices {
                let summary = try await device.sync()
                if summary.counts != SyncSession.RoundSummary() { quiet = false }
            }
            if quiet, try devices.allSatisfy({ try $0.requiredSession.replica.outgoingChanges().isEmpty }) { return pass }
        }
        return nil
    }
}
extension SyncSession.RoundSummary {
    /// The summary's counts alone (what was read and sent in bytes left out), to compare with an expected one.
    var counts: Self {
        var summary = self
        summary.transfer = SyncTransfer()
        return summary
    }
}

extension SyncReply {
    /// A round's counts alone (what was read and sent in bytes left out); any other reply as it is.
    var counts: Self {
        guard case .round(var report) = self else { return self }
        report.transfer = SyncTransfer()
        return .round(report)
    }
}
#endif
