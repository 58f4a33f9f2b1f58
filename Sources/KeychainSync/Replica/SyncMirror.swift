import Foundation
import GRDB
import KeychainCore

/// What this device knows of each synced item: its identifier in the zone, the local item it is (class and
/// engine UUID), the server's version last seen, the stamp of the change both sides last agreed on, and the digest of
/// the local item's content at that moment (a local item whose content no longer has it changed since). Plus the
/// replica's few settings (the change feed's token).
///
/// Kept in its own SQLite file beside the keychain (`sync-mirror.sqlite`, 0600, opened without following links).
/// Nothing in it is secret: identifiers, versions, times, digests of content (SHA-256 of sealed-at-rest data that
/// never leaves the device in the clear).
public final class SyncMirror: Sendable {
    /// One synced item.
    public struct Row: Sendable, Hashable {
        /// Its identifier in the zone.
        public var itemID: String
        /// Its class.
        package var itemClass: ItemClass
        /// The local item's UUID, or nil when there is none (a deletion seen before the item).
        package var uuid: Data?
        /// The server's version last seen (0: never on the server).
        public var version: UInt64
        /// The change both sides last agreed on.
        public var stamp: SyncChangeStamp
        /// SHA-256 of the local item's content when they agreed (empty: the local item must be written back).
        package var contentDigest: Data
    }

    private let database: DatabaseQueue

    /// The mirror at `path`, made when missing.
    /// - Throws: ``KeychainError`` `notAvailable` when it cannot be opened (a link, damaged).
    public init(path: String) throws(KeychainError) {
        try FileSystem.refuseSymbolicLinks([path, path + "-journal", path + "-wal", path + "-shm"])
        try FileSystem.createPrivateFile(path)
        do {
            var configuration = Configuration()
            // The mirror can lose its last writes to a power cut without harm (an unrecorded acknowledgement makes
            // the next upload meet a version conflict, which the replica resolves), so it is not synced at every
            // write; WAL keeps it whole.
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            }
            try database.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS items (
                            item_id TEXT PRIMARY KEY NOT NULL,
                            class TEXT NOT NULL,
                            uuid BLOB UNIQUE,
                            version INTEGER NOT NULL,
                            modified INTEGER NOT NULL,
                            device TEXT NOT NULL,
                            deleted INTEGER NOT NULL,
                            digest BLOB NOT NULL,
                            content BLOB NOT NULL
                        );
                        CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                        CREATE TABLE IF NOT EXISTS documents (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                        """)
            }
        } catch {
            throw KeychainError(code: .notAvailable, message: "The sync mirror \(path) cannot be opened; move it away and sync again from scratch.", cause: DescribedError(error))
        }
    }

    /// Forgets everything: items, settings and documents (the device joins an account afresh).
    package func reset() throws(KeychainError) {
        try write { db in
            try db.execute(sql: "DELETE FROM items; DELETE FROM settings; DELETE FROM documents")
        }
    }

    /// The row of `itemID`.
    public func row(_ itemID: String) throws(KeychainError) -> Row? {
        try read { db in try Row.fetch(db, "WHERE item_id = ?", [itemID]).first }
    }

    /// The row of the local item `uuid`.
    package func row(uuid: Data) throws(KeychainError) -> Row? {
        try read { db in try Row.fetch(db, "WHERE uuid = ?", [uuid]).first }
    }

    /// Every row.
    public func rows() throws(KeychainError) -> [Row] {
        try read { db in try Row.fetch(db, "ORDER BY item_id", []) }
    }

    /// Writes `row` (inserting or replacing the row of its item).
    public func save(_ row: Row) throws(KeychainError) {
        try save([row])
    }

    /// Writes `rows`, in one transaction.
    public func save(_ rows: [Row]) throws(KeychainError) {
        guard !rows.isEmpty else { return }
        try write { db in
            for row in rows {
                // A UUID belongs to one item: a row that had it (an item replaced by another) lets it go.
                if let uuid = row.uuid {
                    try db.cachedStatement(sql: "UPDATE items SET uuid = NULL WHERE uuid = ? AND item_id != ?")
                        .execute(arguments: [uuid, row.itemID])
                }
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO items (item_id, class, uuid, version, modified, device, deleted, digest, content)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    row.itemID, row.itemClass.rawValue, row.uuid, Int64(bitPattern: row.version),
                    Int64(bitPattern: row.stamp.modified), row.stamp.device, row.stamp.deleted,
                    row.stamp.digest, row.contentDigest,
                ])
            }
        }
    }

    /// A setting (the change feed's token), or nil.
    public func setting(_ name: String) throws(KeychainError) -> Int64? {
        try read { db in try Int64.fetchOne(db, sql: "SELECT value FROM settings WHERE name = ?", arguments: [name]) }
    }

    /// Sets a setting.
    public func setSetting(_ name: String, _ value: Int64) throws(KeychainError) {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", arguments: [name, value])
        }
    }

    /// A stored document (the trusted device list, the account's identifier), or nil.
    public func document(_ name: String) throws(KeychainError) -> Data? {
        try read { db in try Data.fetchOne(db, sql: "SELECT value FROM documents WHERE name = ?", arguments: [name]) }
    }

    /// Stores a document.
    public func setDocument(_ name: String, _ value: Data) throws(KeychainError) {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO documents (name, value) VALUES (?, ?)", arguments: [name, value])
        }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw KeychainError(code: .io, message: "The sync mirror could not be read.", cause: DescribedError(error))
        }
    }

    private func write(_ body: (Database) throws -> Void) throws(KeychainError) {
        do {
            try database.write(body)
        } catch {
            throw KeychainError(code: .io, message: "The sync mirror could not be written.", cause: DescribedError(error))
        }
    }
}

extension SyncMirror.Row {
    /// Rows matching `clause`.
    static func fetch(_ db: Database, _ clause: String, _ arguments: StatementArguments) throws -> [SyncMirror.Row] {
        try GRDB.Row.fetchAll(
            db, sql: "SELECT item_id, class, uuid, version, modified, device, deleted, digest, content FROM items " + clause,
            arguments: arguments
        ).compactMap { row in
            let itemID: String = row[0], className: String = row[1]
            guard let itemClass = ItemClass(rawValue: className) else { return nil }
            let version: Int64 = row[3], modified: Int64 = row[4]
            return SyncMirror.Row(
                itemID: itemID, itemClass: itemClass, uuid: row[2], version: UInt64(bitPattern: version),
                stamp: SyncChangeStamp(modified: UInt64(bitPattern: modified), device: row[5], deleted: row[6], digest: row[7]),
                contentDigest: row[8])
        }
    }
}
