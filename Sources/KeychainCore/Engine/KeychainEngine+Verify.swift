import Foundation
import GRDB

/// Checking every stored item for damage (`security verify-keychain`).
extension KeychainEngine {
    /// Checks every row of every item table, tombstones included: its plaintext columns, its sealed attributes,
    /// its search index (the keyed hashes a query selects on, recomputed from the attributes) and its sealed
    /// secret. Nothing is changed and no attribute or secret leaves; items of a locked class are counted as not
    /// checked. The caller decides who may ask (keychaind: the admin tool).
    package func verify() throws(KeychainError) -> KeychainIntegrityReport {
        var report = KeychainIntegrityReport()
        for cls in ItemClass.stored {
            let indexed = cls.attributes.filter(\.searchable).map(\.code)
            let columns = ([KeychainEngine.rowColumns, "secret"] + indexed.map(KeychainEngine.column)).joined(separator: ", ")
            let rows = try read { db in try Row.fetchAll(db, sql: "SELECT \(columns) FROM \"\(cls.table)\" ORDER BY rowid") }
            for row in rows {
                switch try verifyRow(row, cls, indexed: indexed) {
                case .intact: report.verified += 1
                case .locked: report.notChecked += 1
                case .damaged(let item): report.damaged.append(item)
                }
            }
        }
        logger.info(
            "verified keychain",
            metadata: [
                "verified": "\(report.verified)", "notChecked": "\(report.notChecked)",
                "damaged": "\(report.damaged.count)",
            ])
        return report
    }

    /// What checking one row found.
    enum RowCheck {
        case intact
        case locked
        case damaged(DamagedItem)
    }

    /// Checks one row read with `rowColumns, secret` and then the `h_` column of each code in `indexed`.
    func verifyRow(_ row: Row, _ cls: ItemClass, indexed: [String]) throws(KeychainError) -> RowCheck {
        let rowid = Int64.fromDatabaseValue(row[0] as DatabaseValue) ?? -1
        let uuid = Data.fromDatabaseValue(row[1] as DatabaseValue).flatMap { $0.count == ItemCrypto.uuidLength ? $0 : nil }
        func damaged(_ problem: String) -> RowCheck {
            .damaged(
                DamagedItem(
                    itemClass: cls, rowid: rowid, persistentRef: uuid.map { PersistentReference(itemClass: cls, uuid: $0) },
                    problem: problem))
        }
        guard let stored = KeychainEngine.storedRow(row, table: cls.table, includeSecret: true), uuid != nil else {
            return damaged("a stored column (uuid, pdmn, sync, tomb, h_agrp, pk or meta) is missing or holds a value of the wrong type")
        }
        let attributes: [String: AttributeValue]
        do {
            attributes = try crypto.openAttributes(stored.meta, row: stored.identity)
        } catch  where error.code == .interactionNotAllowed {
            return .locked
        } catch  where error.code == .corruptData {
            return damaged("its sealed attributes fail authentication (\(error.message))")
        }
        for (offset, code) in indexed.enumerated() {
            let storedHash = Data.fromDatabaseValue(row[9 + offset] as DatabaseValue)
            let expected = attributes[code].map { crypto.attributeHash(table: cls.table, code: code, value: $0) }
            if storedHash != expected {
                return damaged("its search index h_\(code) does not match its attributes, so queries on \(code) miss it")
            }
        }
        if crypto.primaryKeyHash(itemClass: cls, attributes: attributes) != stored.identity.primaryKeyHash {
            return damaged("its primary-key hash (pk) does not match its attributes")
        }
        if let secret = stored.secret {
            do {
                _ = try crypto.openSecret(secret, row: stored.identity)
            } catch  where error.code == .interactionNotAllowed {
                return .locked
            } catch  where error.code == .corruptData {
                return damaged("its sealed secret fails authentication (\(error.message))")
            }
        }
        return .intact
    }
}
