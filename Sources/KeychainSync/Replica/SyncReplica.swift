import Crypto
import Foundation
import KeychainCore

/// The keychain's side of sync: which local changes go out, and how a change that comes in is applied, so that
/// every device ends with the same items (``SyncChangeStamp``'s rule) whatever order changes arrive in.
///
/// It works on the engine's items (synchronizable ones, tombstones of deleted ones included) and on ``SyncMirror``:
/// a local item whose content no longer has the digest the mirror kept has changed since the last agreement and
/// goes out; a change that comes in is weighed against the local item's current state. Incoming items are written
/// as ordinary adds, updates and deletes, so uniqueness, access groups and `kSecAttrSynchronizableAny` queries keep
/// their meaning. Nothing here talks to the server: the sync client uploads ``outgoingChanges()``, calls
/// ``acknowledge(_:version:)`` for each one the server took, and passes what the change feed brings to
/// ``apply(itemID:version:payload:)``. Each step is one durable write, so a process killed between two steps
/// resumes where it was: an unacknowledged change goes out again, an applied one is not applied twice.
public final class SyncReplica: Sendable {
    /// The keychain.
    package let engine: KeychainEngine
    /// What this device knows of each synced item.
    public let mirror: SyncMirror
    /// This device's identifier (the stamps of its changes carry it).
    public let device: String
    private let now: @Sendable () -> Date
    private let newItemID: @Sendable () -> String

    static let everything = AccessPolicy(groups: ["*"])
    /// Attributes the engine sets itself, which an update cannot pass.
    static let engineManaged: Set<String> = ["cdat", "mdat", "tomb", "sync"]

    /// A replica of `engine`'s synchronizable items, for `device`.
    package init(
        engine: KeychainEngine, mirror: SyncMirror, device: String, now: @escaping @Sendable () -> Date = Date.init,
        newItemID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }
    ) {
        self.engine = engine
        self.mirror = mirror
        self.device = device
        self.now = now
        self.newItemID = newItemID
    }

    // MARK: Local items

    /// A synchronizable item as stored (or its tombstone).
    struct LocalItem {
        var itemClass: ItemClass
        var uuid: Data
        var attributes: [String: AttributeValue]
        var data: Data?
        var deleted: Bool

        /// Its modification time in milliseconds.
        var modified: UInt64 {
            guard case .date(let date)? = attributes["mdat"] else { return 0 }
            return UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded()))
        }

        /// What is compared with the mirror: SHA-256 of the class, whether deleted, the attributes and the secret.
        var contentDigest: Data {
            var fields = SyncFields(domain: "keychain-sync/content/v1")
            fields.append(itemClass.rawValue)
            fields.append(UInt64(deleted ? 1 : 0))
            fields.append(bytes: ItemRecord.encode(attributes.filter { $0.key != "tomb" }))
            fields.append(bytes: data ?? Data())
            return Data(SHA256.hash(data: fields.bytes))
        }
    }

    /// Every synchronizable item that may leave the device, tombstones included.
    func localItems() throws(KeychainError) -> [LocalItem] {
        var items: [LocalItem] = []
        for itemClass in ItemClass.stored {
            for tombstones in [false, true] {
                var q = ItemQuery(itemClass: itemClass)
                q.sync = .synchronizable
                q.limit = .all
                items += try find(q, tombstones: tombstones).filter {
                    SyncEligibility.reasonToStay(itemClass: itemClass, attributes: $0.attributes) == nil
                }
            }
        }
        return items
    }

    /// The local item `uuid` of `itemClass` (or its tombstone), if any.
    func localItem(_ itemClass: ItemClass, uuid: Data) throws(KeychainError) -> LocalItem? {
        var q = ItemQuery(itemClass: itemClass)
        q.sync = .any
        q.persistentRef = PersistentReference(itemClass: itemClass, uuid: uuid)
        if let live = try find(q, tombstones: false).first { return live }
        return try find(q, tombstones: true).first
    }

    /// What `q` finds, with data and attributes: live items, or (`tombstones`) only the tombstones the engine
    /// keeps of deleted synchronizable items.
    func find(_ query: ItemQuery, tombstones: Bool) throws(KeychainError) -> [LocalItem] {
        var q = query
        if tombstones { q.attributes["tomb"] = .int(1) }
        q.returns = ReturnOptions(data: true, attributes: true)
        do {
            return try engine.find(q, caller: Self.everything).map { item in
                LocalItem(itemClass: q.itemClass, uuid: item.uuid, attributes: item.attributes, data: item.data, deleted: tombstones)
            }
        } catch  where error.code == .itemNotFound {
            return []
        }
    }

    /// The payload of `item`'s current state, made by this device.
    func payload(of item: LocalItem) -> SyncItemPayload {
        item.deleted
            ? SyncItemPayload(deletionOf: item.itemClass, modified: item.modified, device: device)
            : SyncItemPayload(
                item: item.itemClass, attributes: item.attributes.filter { $0.key != "tomb" }, data: item.data,
                modified: item.modified, device: device)
    }

    var nowMilliseconds: UInt64 { UInt64(max(0, (now().timeIntervalSince1970 * 1000).rounded())) }

    // MARK: Going out

    /// A local change to upload.
    public struct OutgoingChange: Sendable, Hashable {
        /// The item's identifier in the zone.
        public var itemID: String
        /// The version the server must hold for the write to be taken (0: none).
        public var expectedVersion: UInt64
        /// What to seal.
        public var payload: SyncItemPayload
        /// The local item (nil for the deletion of one that is gone).
        var uuid: Data?
        var itemClass: ItemClass
        /// The local content the payload was made from.
        var contentDigest: Data
    }

    /// Every local change the server does not have: new synchronizable items, items changed or deleted since the
    /// last agreement, items that left sync (made not synchronizable), and records that lost to another.
    ///
    /// A new item gets its identifier here, and the mirror keeps it at once (version 0, nothing agreed), so that a
    /// retry after a crash between the upload and its acknowledgement names the same item: the server then
    /// answers that it has it, and the client applies that answer like any change.
    public func outgoingChanges() throws(KeychainError) -> [OutgoingChange] {
        try outgoingChanges(keepingNewItems: true)
    }

    /// How many local changes the server does not have (what ``outgoingChanges()`` would list), without giving new
    /// items their identifiers: nothing is written.
    public func outgoingChangeCount() throws(KeychainError) -> Int {
        try outgoingChanges(keepingNewItems: false).count
    }

    /// The local changes; `keepingNewItems` records the identifiers new items get in the mirror.
    private func outgoingChanges(keepingNewItems: Bool) throws(KeychainError) -> [OutgoingChange] {
        var changes: [OutgoingChange] = []
        var seen: Set<Data> = []
        var newRows: [SyncMirror.Row] = []
        let rows = try mirror.rows()
        let byUUID = Dictionary(rows.compactMap { row in row.uuid.map { ($0, row) } }, uniquingKeysWith: { first, _ in first })
        for item in try localItems() {
            seen.insert(item.uuid)
            let digest = item.contentDigest
            if let row = byUUID[item.uuid] {
                guard row.contentDigest != digest else { continue }
                changes.append(
                    OutgoingChange(
                        itemID: row.itemID, expectedVersion: row.version, payload: payload(of: item),
                        uuid: item.uuid, itemClass: item.itemClass, contentDigest: digest))
            } else if !item.deleted {
                let change = OutgoingChange(
                    itemID: newItemID(), expectedVersion: 0, payload: payload(of: item),
                    uuid: item.uuid, itemClass: item.itemClass, contentDigest: digest)
                newRows.append(
                    SyncMirror.Row(
                        itemID: change.itemID, itemClass: item.itemClass, uuid: item.uuid, version: 0,
                        stamp: change.payload.stamp, contentDigest: Data()))
                changes.append(change)
            }
        }
        if keepingNewItems { try mirror.save(newRows) }
        // Records with no local item behind them.
        for row in rows where row.uuid.map({ !seen.contains($0) }) ?? true {
            let deletion: SyncItemPayload
            if row.stamp.deleted {
                // An agreed deletion stays agreed; one the server lost sight of is said again, unchanged.
                guard row.contentDigest.isEmpty else { continue }
                deletion = SyncItemPayload(deletionOf: row.itemClass, modified: row.stamp.modified, device: row.stamp.device)
            } else {
                // The item left sync or lost its key to another (its record is deleted), or this record lost a clash.
                guard row.uuid != nil || row.contentDigest.isEmpty else { continue }
                deletion = SyncItemPayload(deletionOf: row.itemClass, modified: max(nowMilliseconds, row.stamp.modified + 1), device: device)
            }
            changes.append(
                OutgoingChange(
                    itemID: row.itemID, expectedVersion: row.version, payload: deletion, uuid: nil,
                    itemClass: row.itemClass, contentDigest: Data([0])))
        }
        return changes
    }

    /// Records that the server took `change` as `version`.
    public func acknowledge(_ change: OutgoingChange, version: UInt64) throws(KeychainError) {
        try acknowledge([(change, version)])
    }

    /// Records that the server took each change at its version (one write to the mirror).
    public func acknowledge(_ taken: [(change: OutgoingChange, version: UInt64)]) throws(KeychainError) {
        try mirror.save(
            taken.map { change, version in
                SyncMirror.Row(
                    itemID: change.itemID, itemClass: change.itemClass, uuid: change.uuid, version: version,
                    stamp: change.payload.stamp, contentDigest: change.contentDigest)
            })
    }

    // MARK: Coming in

    /// What applying a change did.
    public enum Applied: Sendable, Hashable {
        /// The local item now has it.
        case applied
        /// The local change won; it goes out at the next upload.
        case keptLocal
        /// Nothing to do: the change was seen before, or is the one already held.
        case unchanged
    }

    /// Applies the change the server holds as `version` of `itemID`.
    @discardableResult
    public func apply(itemID: String, version: UInt64, payload incoming: SyncItemPayload) throws(KeychainError) -> Applied {
        let payload = incoming
        if let row = try mirror.row(itemID) {
            guard version > row.version else { return .unchanged }
            let local = try row.uuid.flatMap { uuid throws(KeychainError) in try localItem(row.itemClass, uuid: uuid) }
            let localChanged = local.map { $0.contentDigest != row.contentDigest } ?? false
            let localStamp = localChanged ? local.map { self.payload(of: $0).stamp } ?? row.stamp : row.stamp
            var next = row
            next.version = version
            switch SyncConflictRule.resolve(local: localStamp, incoming: payload.stamp) {
            case .same:
                if let local { next.contentDigest = local.contentDigest }
                try mirror.save(next)
                return .unchanged
            case .keepLocal:
                // The server holds an older change: ours goes out again (its digest no longer matches).
                if !localChanged { next.contentDigest = Data() }
                try mirror.save(next)
                return .keptLocal
            case .takeIncoming:
                // The item is gone here and another local item took its key since (deleted, then made again):
                // the two are weighed as two items with one key.
                if !payload.isDeletion, local.map({ $0.deleted }) ?? true, let clash = try sameKey(as: payload) {
                    return try resolveClash(itemID: itemID, version: version, payload: payload, local: clash)
                }
                let written = try write(payload, over: local)
                next.uuid = written?.uuid
                next.stamp = payload.stamp
                next.contentDigest = written?.contentDigest ?? Data([0])
                try mirror.save(next)
                return .applied
            }
        }
        guard !payload.isDeletion else {
            // A deletion of an item this device never had: remembered, so that a late copy of it is not revived.
            try mirror.save(
                SyncMirror.Row(
                    itemID: itemID, itemClass: payload.itemClass, uuid: nil, version: version,
                    stamp: payload.stamp, contentDigest: Data([0])))
            return .applied
        }
        if let clash = try sameKey(as: payload) {
            return try resolveClash(itemID: itemID, version: version, payload: payload, local: clash)
        }
        let written = try write(payload, over: nil)
        try mirror.save(
            SyncMirror.Row(
                itemID: itemID, itemClass: payload.itemClass, uuid: written?.uuid, version: version,
                stamp: payload.stamp, contentDigest: written?.contentDigest ?? Data([0])))
        return .applied
    }

    /// A new item that has the primary key of a local one (both devices made the same password before they
    /// synced): the rule decides which content the key keeps; the losing record is deleted on the server.
    func resolveClash(itemID: String, version: UInt64, payload: SyncItemPayload, local: LocalItem) throws(KeychainError) -> Applied {
        let localRow = try mirror.row(uuid: local.uuid)
        let localStamp = localRow.flatMap { $0.contentDigest == local.contentDigest ? $0.stamp : nil } ?? self.payload(of: local).stamp
        if SyncConflictRule.resolve(local: localStamp, incoming: payload.stamp) == .takeIncoming {
            if var other = localRow {
                // The local item's own record loses its item: deleted at the next upload.
                other.uuid = nil
                other.contentDigest = Data()
                try mirror.save(other)
            }
            let written = try write(payload, over: local)
            try mirror.save(
                SyncMirror.Row(
                    itemID: itemID, itemClass: payload.itemClass, uuid: written?.uuid, version: version,
                    stamp: payload.stamp, contentDigest: written?.contentDigest ?? Data([0])))
            return .applied
        }
        // The incoming record loses: deleted at the next upload; the local item goes out under its own identifier.
        try mirror.save(
            SyncMirror.Row(
                itemID: itemID, itemClass: payload.itemClass, uuid: nil, version: version,
                stamp: payload.stamp, contentDigest: Data()))
        return .keptLocal
    }

    /// The local item (not a tombstone) with the primary key `payload`'s item has, if any.
    func sameKey(as payload: SyncItemPayload) throws(KeychainError) -> LocalItem? {
        var q = ItemQuery(itemClass: payload.itemClass)
        q.sync = .synchronizable
        for descriptor in payload.itemClass.primaryKey where descriptor.code != "sync" {
            if let value = payload.attributes[descriptor.code] { q.attributes[descriptor.code] = value }
        }
        return try find(q, tombstones: false).first
    }

    /// Writes `payload` as the local item (over `local` when there is one): an update, a delete (leaving the
    /// engine's tombstone) or an add. Returns the local item as stored after.
    func write(_ payload: SyncItemPayload, over local: LocalItem?) throws(KeychainError) -> LocalItem? {
        let itemClass = payload.itemClass
        func byReference(_ uuid: Data) -> ItemQuery {
            var q = ItemQuery(itemClass: itemClass)
            q.sync = .any
            q.persistentRef = PersistentReference(itemClass: itemClass, uuid: uuid)
            return q
        }
        if payload.isDeletion {
            guard let local, !local.deleted else { return local }
            _ = try engine.delete(byReference(local.uuid), caller: Self.everything)
            return try localItem(itemClass, uuid: local.uuid)
        }
        if let local, !local.deleted {
            let changes = payload.attributes.filter { !Self.engineManaged.contains($0.key) }
            try engine.update(byReference(local.uuid), attributes: changes, sync: true, data: payload.data, caller: Self.everything)
            return try localItem(itemClass, uuid: local.uuid)
        }
        var q = ItemQuery(itemClass: itemClass)
        q.attributes = payload.attributes.filter { !Self.engineManaged.contains($0.key) }
        q.sync = .synchronizable
        q.valueData = payload.data
        var dates: ItemDates?
        if case .date(let created)? = payload.attributes["cdat"], case .date(let modified)? = payload.attributes["mdat"] {
            dates = ItemDates(created: created, modified: modified)
        }
        let added = try engine.add(q, caller: Self.everything, keepingDates: dates)
        return try localItem(itemClass, uuid: added.uuid)
    }
}
