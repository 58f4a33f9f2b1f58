import Foundation
import KeychainCore
import KeychainSync
import KeychainTestSupport
import Synchronization
import Testing

/// Replicas of real keychains (engines on disk) exchanging sealed records through a record store that keeps only
/// versions and refuses stale writes, as the server does: what each device ends with.
@Suite("Sync replicas")
struct SyncReplicaTests {
    static let everything = AccessPolicy(groups: ["*"])

    @Test("An item added, changed and deleted on one device is so on the other, and nothing echoes back")
    func followsChanges() throws {
        let world = try World(devices: 2)
        let (a, b) = (world.devices[0], world.devices[1])
        try a.add("mail", "ann", secret: "one")
        try world.settle()
        #expect(try b.secret("mail", "ann") == "one")
        #expect(try a.replica.outgoingChanges().isEmpty)
        #expect(try b.replica.outgoingChanges().isEmpty)

        a.clock.advance(1)
        try a.update("mail", "ann", secret: "two")
        try world.settle()
        #expect(try b.secret("mail", "ann") == "two")

        b.clock.advance(2)
        try b.delete("mail", "ann")
        try world.settle()
        #expect(try a.secret("mail", "ann") == nil)
        #expect(try world.identical())
        #expect(try a.replica.outgoingChanges().isEmpty && b.replica.outgoingChanges().isEmpty)
    }

    @Test("ThisDeviceOnly, passcode-class and non-synchronizable items never leave")
    func staysHome() throws {
        let world = try World(devices: 2)
        let a = world.devices[0]
        try a.add("local", "x", secret: "s", protection: "aku")
        try a.add("local", "y", secret: "s", protection: "cku")
        try a.add("local", "z", secret: "s", synchronizable: false)
        try a.add("shared", "w", secret: "s")
        #expect(try a.replica.outgoingChanges().map { $0.payload.isDeletion } == [false])
        try world.settle()
        #expect(world.store.itemCount == 1)
        #expect(try world.devices[1].secret("shared", "w") == "s")
        #expect(try world.devices[1].secret("local", "x") == nil)
    }

    @Test("Edits of one item on both sides while apart: both keep the newer, whichever syncs first")
    func conflictingEdits() throws {
        for firstToSync in [0, 1] {
            let world = try World(devices: 2)
            let (a, b) = (world.devices[0], world.devices[1])
            try a.add("vpn", "me", secret: "v1")
            try world.settle()
            a.clock.advance(5)
            try a.update("vpn", "me", secret: "from a")
            b.clock.advance(9)
            try b.update("vpn", "me", secret: "from b (newer)")
            try world.devices[firstToSync].round()
            try world.settle()
            #expect(try a.secret("vpn", "me") == "from b (newer)")
            #expect(try b.secret("vpn", "me") == "from b (newer)")
        }
    }

    @Test("The same password made on both devices before they met: one item with the newer content everywhere")
    func sameKeyBothSides() throws {
        let world = try World(devices: 2)
        let (a, b) = (world.devices[0], world.devices[1])
        try a.add("git", "me", secret: "older")
        b.clock.advance(3)
        try b.add("git", "me", secret: "newer")
        try world.settle()
        #expect(try a.secret("git", "me") == "newer")
        #expect(try b.secret("git", "me") == "newer")
        #expect(try world.identical())
    }

    @Test("A change seen before, or an older version served again, changes nothing")
    func replays() throws {
        let world = try World(devices: 2)
        let (a, b) = (world.devices[0], world.devices[1])
        try a.add("mail", "ann", secret: "one")
        try world.settle()
        let (itemID, entry) = try #require(world.store.latest().first)
        let payload = try world.open(entry)
        #expect(try b.replica.apply(itemID: itemID, version: entry.record.address.version, payload: payload) == .unchanged)
        #expect(try b.replica.apply(itemID: itemID, version: 0, payload: payload) == .unchanged)
    }

    @Test("Killed after the server took a write and before it was acknowledged: the retry names the same item, nothing is doubled")
    func killedBeforeAcknowledging() throws {
        let world = try World(devices: 2)
        let (a, b) = (world.devices[0], world.devices[1])
        try a.add("mail", "ann", secret: "one")
        try a.round(acknowledging: false)
        a.clock.advance(1)
        try a.update("mail", "ann", secret: "two")
        try a.round(acknowledging: false)
        try world.settle()
        #expect(world.store.itemCount == 1)
        #expect(try b.secret("mail", "ann") == "two")
        #expect(try world.identical())
    }

    @Test("An item made not synchronizable is deleted on the other devices, and stays here")
    func leavesSync() throws {
        let world = try World(devices: 2)
        let (a, b) = (world.devices[0], world.devices[1])
        try a.add("mail", "ann", secret: "one")
        try world.settle()
        a.clock.advance(1)
        try a.engine.update(a.query("mail", "ann"), attributes: [:], sync: false, data: nil, caller: SyncReplicaTests.everything)
        try world.settle()
        #expect(try b.secret("mail", "ann") == nil)
        #expect(try a.secret("mail", "ann") == "one")
    }

    @Test(
        "Three devices making 200 edits each while apart (the same items edited, deleted, made again) end identical",
        arguments: [1, 2, 3, 4, 5, 6])
    func partitionHeals(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let world = try World(devices: 3)
        for index in 0..<6 { try world.devices[index % 3].add("svc\(index)", "acct", secret: "start") }
        try world.settle()
        // Apart: each device makes edits, deletes and re-adds of the same few items.
        for step in 0..<600 {
            let device = world.devices[step % 3]
            device.clock.advance(Double(Int.random(in: 1...3, using: &random)))
            let service = "svc\(Int.random(in: 0 ..< 6, using: &random))"
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                if try device.secret(service, "acct") != nil {
                    try device.update(service, "acct", secret: "v\(Int.random(in: 0 ..< 1000, using: &random))")
                } else {
                    try device.add(service, "acct", secret: "re\(Int.random(in: 0 ..< 1000, using: &random))")
                }
            default:
                if try device.secret(service, "acct") != nil { try device.delete(service, "acct") }
            }
        }
        try world.settle()
        #expect(try world.identical())
    }
}

/// A settable clock for one device's engine.
final class DeviceClock: Sendable {
    let seconds = Mutex<Double>(1_764_000_000)
    var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
}

/// Stands in for the server's record table: the latest sealed record of each item with its version, writes
/// refused unless they name the current version, and a feed in write order. Nothing else of the server.
final class RecordStore: @unchecked Sendable {
    struct Entry { var record: SealedSyncRecord; var seq: Int }
    private(set) var entries: [String: Entry] = [:]
    private(set) var seq = 0
    var itemCount: Int { entries.count }

    func write(_ record: SealedSyncRecord, expected: UInt64) -> Bool {
        guard (entries[record.address.itemID]?.record.address.version ?? 0) == expected else { return false }
        seq += 1
        entries[record.address.itemID] = Entry(record: record, seq: seq)
        return true
    }

    func changes(since: Int) -> [(String, Entry)] {
        entries.filter { $0.value.seq > since }.sorted { $0.value.seq < $1.value.seq }.map { ($0.key, $0.value) }
    }

    func latest() -> [(String, Entry)] { changes(since: 0) }
}

/// One device: a keychain on disk, its mirror and replica, and where it is in the feed.
final class Device: @unchecked Sendable {
    let home = FileManager.default.temporaryDirectory.path + "/sync-replica-" + UUID().uuidString.prefix(8)
    let clock = DeviceClock()
    let engine: KeychainEngine
    let replica: SyncReplica
    unowned let world: World
    var cursor = 0

    init(world: World, name: String) throws {
        self.world = world
        let clock = self.clock
        engine = try KeychainEngine(location: KeychainLocation(home: home), now: { clock.now }, tpm: nil, passcodePolicy: .testing)
        replica = SyncReplica(engine: engine, mirror: try SyncMirror(path: home + "/sync-mirror.sqlite"), device: name, now: { clock.now })
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    func query(_ service: String, _ account: String) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["svce": .string(service), "acct": .string(account), "agrp": .string("TEAM.shared")]
        q.sync = .any
        return q
    }

    func add(_ service: String, _ account: String, secret: String, protection: String = "ak", synchronizable: Bool = true) throws {
        var q = query(service, account)
        q.attributes["pdmn"] = .string(protection)
        q.sync = synchronizable ? .synchronizable : .local
        q.valueData = Data(secret.utf8)
        _ = try engine.add(q, caller: SyncReplicaTests.everything)
    }

    func update(_ service: String, _ account: String, secret: String) throws {
        try engine.update(query(service, account), attributes: [:], sync: nil, data: Data(secret.utf8), caller: SyncReplicaTests.everything)
    }

    func delete(_ service: String, _ account: String) throws {
        _ = try engine.delete(query(service, account), caller: SyncReplicaTests.everything)
    }

    /// The items `q` finds; none for errSecItemNotFound.
    func found(_ q: ItemQuery) throws -> [FoundItem] {
        let result = Result { () throws(KeychainError) in try engine.find(q, caller: SyncReplicaTests.everything) }
        if case .failure(let error) = result, error.code == .itemNotFound { return [] }
        return try result.get()
    }

    func secret(_ service: String, _ account: String) throws -> String? {
        var q = query(service, account)
        q.returns.data = true
        return try found(q).first?.data.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every live synchronizable item: service, account, secret.
    func contents() throws -> [String] {
        var q = ItemQuery(itemClass: .genericPassword)
        q.sync = .synchronizable
        q.limit = .all
        q.returns = ReturnOptions(data: true, attributes: true)
        return try found(q).map { item in
            "\(item.attributes["svce"]?.stringValue ?? "")/\(item.attributes["acct"]?.stringValue ?? "")=\(String(decoding: item.data ?? Data(), as: UTF8.self))"
        }.sorted()
    }

    /// Reads the feed, then uploads what is pending (a stale write waits for the next round); without
    /// `acknowledging`, as if killed after each upload and before recording it.
    func round(acknowledging: Bool = true) throws {
        for (itemID, entry) in world.store.changes(since: cursor) {
            try replica.apply(itemID: itemID, version: entry.record.address.version, payload: try world.open(entry))
            cursor = entry.seq
        }
        for change in try replica.outgoingChanges() {
            let address = SyncRecordAddress(
                account: SyncVectors.account, zone: "keychain", itemID: change.itemID,
                version: change.expectedVersion + 1)
            let sealed = try SyncRecordSeal.seal(change.payload.encoded, at: address, zoneKey: world.zoneKey)
            if world.store.write(sealed, expected: change.expectedVersion), acknowledging {
                try replica.acknowledge(change, version: address.version)
            }
        }
    }
}

/// Devices sharing one record store and zone key.
final class World: @unchecked Sendable {
    let store = RecordStore()
    let zoneKey = SyncZoneKey()
    private(set) var devices: [Device] = []

    init(devices count: Int) throws {
        for index in 0..<count { devices.append(try Device(world: self, name: "device-\(index)")) }
    }

    func open(_ entry: RecordStore.Entry) throws -> SyncItemPayload {
        try SyncItemPayload(encoded: SyncRecordSeal.open(entry.record, zoneKey: { [zoneKey] in $0 == zoneKey.keyID ? zoneKey : nil }))
    }

    /// Rounds until no device has anything to send and every device has read the whole feed.
    func settle() throws {
        for _ in 0..<20 {
            for device in devices { try device.round() }
            let quiet = try devices.allSatisfy { try $0.replica.outgoingChanges().isEmpty && $0.cursor == store.seq }
            if quiet { return }
        }
        Issue.record("the devices did not settle in 20 rounds")
    }

    func identical() throws -> Bool {
        let all = try devices.map { try $0.contents() }
        if Set(all.map { $0.joined(separator: "\n") }).count != 1 {
            Issue.record("devices differ: \(all)")
            return false
        }
        return true
    }
}
