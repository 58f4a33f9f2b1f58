import Foundation
import Crypto
import GRDB
import Logging

/// Rows of the item tables: the SQL filter a query becomes (blind indexes), reading and authenticating rows, and
/// the checks that run on decrypted attributes.
extension KeychainEngine {
    // MARK: Rows

    struct StoredRow {
        var rowid: Int64
        var identity: ItemCrypto.RowIdentity
        var meta: Data
        var secret: Data?
    }

    func identity(for cls: ItemClass, uuid: Data, attributes: [String: AttributeValue], protection: ProtectionClass,
                  sync: Bool, tombstone: Bool) -> ItemCrypto.RowIdentity {
        ItemCrypto.RowIdentity(
            table: cls.table, uuid: uuid, protection: protection,
            groupHash: crypto.attributeHash(table: cls.table, code: "agrp", value: attributes["agrp"] ?? .string("")),
            primaryKeyHash: crypto.primaryKeyHash(itemClass: cls, attributes: attributes),
            sync: sync, tombstone: tombstone)
    }

    /// Builds the SQL filter for a query and the checks that must run on decrypted attributes.
    func selectSQL(_ q: ItemQuery, groups: [String]?, columns: String) -> (sql: String, arguments: StatementArguments) {
        let cls = q.itemClass
        var clauses: [String] = []
        var args: [(any DatabaseValueConvertible)?] = []
        // Tombstones are never visible unless the caller asks for them by `tomb`.
        if case .int(let tomb)? = q.attributes["tomb"] {
            clauses.append("tomb = ?"); args.append(tomb)
        } else if q.attributes["tomb"] == nil {
            clauses.append("tomb = 0")
        }
        if let ref = q.persistentRef {
            clauses.append("uuid = ?")
            args.append(ref.uuid)
        } else {
            switch q.sync {
            case .local: clauses.append("sync = 0")
            case .synchronizable: clauses.append("sync = 1")
            case .any: break
            }
        }
        if let groups {
            clauses.append("h_agrp IN (\(Array(repeating: "?", count: groups.count).joined(separator: ",")))")
            args += groups.map { crypto.attributeHash(table: cls.table, code: "agrp", value: .string($0)) }
        }
        for code in q.attributes.keys.sorted() where code != "agrp" {
            guard let value = q.attributes[code], let descriptor = cls.attribute(code) else { continue }
            if code == "pdmn", let s = value.stringValue {
                clauses.append("pdmn = ?"); args.append(s)
            } else if descriptor.searchable {
                clauses.append("\(KeychainEngine.column(code)) = ?")
                args.append(crypto.attributeHash(table: cls.table, code: code, value: value))
            }
        }
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        return ("SELECT \(columns) FROM \"\(cls.table)\"\(whereClause) ORDER BY rowid", StatementArguments(args))
    }

    static let rowColumns = "rowid, uuid, pdmn, sync, tomb, h_agrp, pk, meta"

    /// The access groups a query is confined to: nil means every group.
    func matchingRows(_ db: Database, _ q: ItemQuery, groups: [String]?, includeSecret: Bool, limit: Int?) throws -> [(StoredRow, FoundItem)] {
        let cls = q.itemClass
        let columns = KeychainEngine.rowColumns + (includeSecret ? ", secret" : "")
        let (sql, arguments) = selectSQL(q, groups: groups, columns: columns)
        let statement = try db.cachedStatement(sql: sql)
        let cursor = try Row.fetchCursor(statement, arguments: arguments)
        var out: [(StoredRow, FoundItem)] = []
        while let row = try cursor.next() {
            guard let stored = KeychainEngine.storedRow(row, table: cls.table, includeSecret: includeSecret) else {
                logger.error("skipping malformed row", metadata: ["class": "\(cls.rawValue)"])
                continue
            }
            let identity = stored.identity
            guard let attributes = try openAttributesSkippingCorrupt(stored.meta, row: identity) else { continue }
            guard matches(attributes, q) else { continue }
            var item = FoundItem(itemClass: cls, uuid: identity.uuid, attributes: attributes, data: nil)
            if includeSecret, let blob = stored.secret {
                item.data = try crypto.openSecret(blob, row: identity)
            }
            out.append((stored, item))
            if let limit, out.count >= limit { break }
        }
        return out
    }

    /// Identities: certificates matching the query's certificate attributes, each with the private key whose
    /// application label is the certificate's public key hash (and that matches the query's key attributes).
    /// The item is the certificate's; its key rides along in ``FoundItem/identityKey``.
    func identityRows(_ db: Database, _ q: ItemQuery, groups: [String]?) throws -> [FoundItem] {
        let certificateCodes = Set(ItemClass.certificate.attributes.map(\.code))
        let keyCodes = Set(ItemClass.key.attributes.map(\.code)).subtracting(certificateCodes)
        var certificates = q
        certificates.itemClass = .certificate
        certificates.attributes = q.attributes.filter { certificateCodes.contains($0.key) }
        let secrets = q.returns.data || q.returns.ref
        var out: [FoundItem] = []
        for (_, certificate) in try matchingRows(db, certificates, groups: groups, includeSecret: secrets, limit: nil) {
            guard case .data(let hash)? = certificate.attributes["pkhh"] else { continue }
            var keys = ItemQuery(itemClass: .key)
            keys.sync = q.sync
            keys.attributes = q.attributes.filter { keyCodes.contains($0.key) }
            keys.attributes["klbl"] = .data(hash)
            keys.attributes["kcls"] = .int(KeyClass.privateKey.rawValue)
            guard let (_, key) = try matchingRows(db, keys, groups: groups, includeSecret: secrets, limit: 1).first else { continue }
            var identity = certificate
            identity.identityKey = .init(uuid: key.uuid, attributes: key.attributes, data: key.data)
            out.append(identity)
            if let limit = q.limit.maximum, out.count >= limit { break }
        }
        return out
    }

    /// Reads the plaintext columns of a row without trusting them: a NULL or a value of the wrong type (a
    /// damaged or tampered file) gives nil, never a trap.
    static func storedRow(_ row: Row, table: String, includeSecret: Bool) -> StoredRow? {
        func value<T: DatabaseValueConvertible>(_ index: Int, as _: T.Type = T.self) -> T? {
            T.fromDatabaseValue(row[index] as DatabaseValue)
        }
        guard let rowid = value(0, as: Int64.self), let uuid = value(1, as: Data.self),
              let protection = value(2, as: String.self).flatMap(ProtectionClass.init(rawValue:)),
              let sync = value(3, as: Int64.self), let tomb = value(4, as: Int64.self),
              let groupHash = value(5, as: Data.self), let primaryKeyHash = value(6, as: Data.self),
              let meta = value(7, as: Data.self) else { return nil }
        let identity = ItemCrypto.RowIdentity(table: table, uuid: uuid, protection: protection, groupHash: groupHash,
                                              primaryKeyHash: primaryKeyHash, sync: sync != 0, tombstone: tomb != 0)
        return StoredRow(rowid: rowid, identity: identity, meta: meta,
                         secret: includeSecret ? value(8, as: Data.self) : nil)
    }

    /// Opens a row's attributes; a row that fails authentication (damaged or tampered with) is logged and
    /// skipped, never deleted. (Kept out of `matchingRows`: a typed do/catch inside its loop makes the
    /// Swift 6.3 compiler hang.)
    func openAttributesSkippingCorrupt(_ meta: Data, row identity: ItemCrypto.RowIdentity) throws(KeychainError) -> [String: AttributeValue]? {
        do {
            return try crypto.openAttributes(meta, row: identity)
        } catch where error.code == .corruptData {
            logger.error("skipping item that failed authentication", metadata: ["class": "\(identity.table)"])
            return nil
        }
    }

    /// Verifies on decrypted attributes what the hash columns selected (and what they cannot: dates, hosts).
    func matches(_ attributes: [String: AttributeValue], _ q: ItemQuery) -> Bool {
        for (code, wanted) in q.attributes {
            guard let actual = attributes[code] else { return false }
            if actual != wanted && actual.matchBytes != wanted.matchBytes { return false }
        }
        if let host = q.hostOrSubdomain {
            guard let server = attributes["srvr"]?.stringValue,
                  server == host || server.hasSuffix("." + host) else { return false }
        }
        return true
    }
}
