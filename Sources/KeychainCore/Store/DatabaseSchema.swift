import Foundation
import GRDB

/// `keychain-2.db`'s tables, one per stored item class, built from the schema table: blind-index columns for
/// the searchable attributes, the sealed attribute record and the sealed secret.
extension KeychainEngine {
    // MARK: Schema

    static func column(_ code: String) -> String { "\"h_\(code)\"" }

    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version == schemaVersion { return }
        guard version <= schemaVersion else {
            throw KeychainError(
                code: .notAvailable, status: .wrongSecVersion, message: "keychain-2.db has schema version \(version); this swift-keychain understands up to \(schemaVersion). Upgrade swift-keychain.")
        }
        if version == 0 {
            for cls in ItemClass.stored {
                let t = cls.table
                var columns = [
                    "rowid INTEGER PRIMARY KEY",
                    "uuid BLOB NOT NULL UNIQUE",
                    "pk BLOB NOT NULL UNIQUE",
                    "sync INTEGER NOT NULL DEFAULT 0",
                    "tomb INTEGER NOT NULL DEFAULT 0",
                    "pdmn TEXT NOT NULL",
                ]
                columns += cls.attributes.filter(\.searchable).map { "\(column($0.code)) BLOB" }
                columns += ["meta BLOB NOT NULL", "secret BLOB"]
                try db.execute(sql: "CREATE TABLE \"\(t)\" (\(columns.joined(separator: ", ")))")
                for index in cls.indexes {
                    let name = "\(t)_" + index.joined(separator: "_")
                    try db.execute(sql: "CREATE INDEX \"\(name)\" ON \"\(t)\" (\(index.map(column).joined(separator: ", ")))")
                }
            }
        }
        if version < 2 {
            // Version 2: the keyed hashes of generic passwords' free-form attributes (ExtendedAttributes), one row
            // per name/value pair, removed with their item by a trigger whichever way the item goes.
            let table = ExtendedAttributes.indexTable
            try db.execute(
                sql: """
                    CREATE TABLE "\(table)" (h BLOB NOT NULL, item INTEGER NOT NULL, PRIMARY KEY (h, item)) WITHOUT ROWID;
                    CREATE INDEX "\(table)_item" ON "\(table)" (item);
                    CREATE TRIGGER "\(table)_gone" AFTER DELETE ON "genp" BEGIN DELETE FROM "\(table)" WHERE item = OLD.rowid; END;
                    """)
        }
        if version < 3 {
            // Version 3: the keyed hashes of items' trusted applications (TrustedApplications), one row per term,
            // removed with their item by a trigger on each class's table.
            let table = TrustedApplications.indexTable
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS "\(table)" (tbl TEXT NOT NULL, h BLOB NOT NULL, item INTEGER NOT NULL, PRIMARY KEY (tbl, h, item)) WITHOUT ROWID;
                    CREATE INDEX IF NOT EXISTS "\(table)_item" ON "\(table)" (tbl, item);
                    """)
            for cls in ItemClass.stored {
                try db.execute(
                    sql: """
                        CREATE TRIGGER IF NOT EXISTS "\(table)_\(cls.table)_gone" AFTER DELETE ON "\(cls.table)"
                        BEGIN DELETE FROM "\(table)" WHERE tbl = '\(cls.table)' AND item = OLD.rowid; END
                        """)
            }
        }
        try db.execute(sql: "PRAGMA user_version = \(schemaVersion)")
    }
}
