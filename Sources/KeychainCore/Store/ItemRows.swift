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

    func identity(
        for cls: ItemClass, uuid: Data, attributes: [String: AttributeValue], protection: ProtectionClass,
        sync: Bool, tombstone: Bool
    ) -> ItemCrypto.RowIdentity {
        ItemCrypto.RowIdentity(
            table: cls.table, uuid: uuid, protection: protection,
            groupHash: attributes["agrp"].flatMap { $0.stringValue }.map { crypto.groupHash(table: cls.table, group: $0) }
                ?? crypto.attributeHash(table: cls.table, code: "agrp", value: attributes["agrp"] ?? .string("")),
            primaryKeyHash: crypto.primaryKeyHash(itemClass: cls, attributes: attributes),
            sync: sync, tombstone: tombstone)
    }

    /// The form of a query's SELECT, without its values: queries of one form share one SQL text (and so one
    /// prepared statement), which is built once and then found here.
    struct SelectShape: Hashable {
        enum Tombstones: Hashable { case hidden, given, any }
        var table: String
        var columns: String
        var tombstones: Tombstones
        var byReference: Bool
        var sync: SyncFilter
        var groups: Int?
        /// The filtered columns in order: `pdmn`, or a searchable attribute's code.
        var codes: [String]
        /// How many free-form attribute pairs are looked up in their index (generic passwords).
        var extended = 0
        /// How many trusted-application terms the rows are found by (``TrustedApplications/indexTable``); then the
        /// groups are those the rows are *not* in (the caller's own, found already).
        var trusted = 0
    }

    /// Builds the SQL filter for a query and the checks that must run on decrypted attributes.
    func selectSQL(_ q: ItemQuery, groups: [String]?, columns: String, db: Database? = nil) -> (sql: String, arguments: [BoundValue]) {
        let (shape, args) = selectShape(q, groups: groups, columns: columns, db: db)
        return (sqlText(shape), args)
    }

    /// The same query for the rows outside `groups` whose trusted applications name one of `trusted`: the form and
    /// arguments of the query over `groups` (``selectShape(_:groups:columns:db:)``), with the trusted terms' clause
    /// and arguments after all of its own, so that nothing of it is computed twice.
    func trustedSelect(_ shape: SelectShape, _ arguments: [BoundValue], _ cls: ItemClass, trusted: [String]) -> (sql: String, arguments: [BoundValue]) {
        var shape = shape
        shape.trusted = trusted.count
        var args = arguments
        args.reserveCapacity(arguments.count + trusted.count + 1)
        args.append(.text(cls.table))
        for term in trusted { args.append(.blob(trustedHash(cls, term))) }
        return (sqlText(shape), args)
    }

    /// The SQL text of a form, made once.
    func sqlText(_ shape: SelectShape) -> String {
        selectStatements.withLock { cache in
            if let sql = cache[shape] { return sql }
            let sql = KeychainEngine.selectSQL(shape)
            // The forms are few (classes × attribute combinations in use); a cache that somehow grows is reset.
            if cache.count >= 512 { cache.removeAll() }
            cache[shape] = sql
            return sql
        }
    }

    /// A query's form and the values it binds.
    func selectShape(_ q: ItemQuery, groups: [String]?, columns: String, db: Database? = nil) -> (shape: SelectShape, arguments: [BoundValue]) {
        let cls = q.itemClass
        var shape = SelectShape(
            table: cls.table, columns: columns, tombstones: .hidden, byReference: q.persistentRef != nil,
            sync: q.sync, groups: groups?.count, codes: [])
        var args: [BoundValue] = []
        args.reserveCapacity(q.attributes.count + (groups?.count ?? 0) + 1)
        // Tombstones are never visible unless the caller asks for them by `tomb`.
        if case .int(let tomb)? = q.attributes["tomb"] {
            shape.tombstones = .given
            args.append(.integer(tomb))
        } else if q.attributes["tomb"] != nil {
            shape.tombstones = .any
        }
        if let ref = q.persistentRef {
            args.append(.blob(ref.uuid))
        }
        if let groups {
            for group in groups { args.append(.blob(crypto.groupHash(table: cls.table, group: group))) }
        }
        let codes = q.attributes.count == 1 ? Array(q.attributes.keys) : q.attributes.keys.sorted()
        for code in codes where code != "agrp" {
            guard let value = q.attributes[code], let descriptor = cls.attribute(code) else { continue }
            if code == "pdmn", let s = value.stringValue {
                shape.codes.append(code); args.append(.text(s))
            } else if descriptor.searchable {
                shape.codes.append(code)
                args.append(.blob(crypto.attributeHash(table: cls.table, code: code, value: value)))
            }
        }
        if cls == .genericPassword && !q.extendedMatch.isEmpty {
            shape.extended = q.extendedMatch.count
            var hashes = q.extendedMatch.map { name, value in
                crypto.attributeHash(
                    table: cls.table, code: ExtendedAttributes.code,
                    value: ExtendedAttributes.indexTerm(name: name, value: value))
            }
            if hashes.count > 1, let db { hashes = Self.bySelectivity(hashes, db) }
            args += hashes.map { .blob($0) }
        }
        return (shape, args)
    }

    /// Free-form attribute hashes, rarest first: each is counted in the index up to a small cap (a bounded walk of
    /// its range), so that the search starts from the pair with the fewest items whatever the store's size.
    static func bySelectivity(_ hashes: [Data], _ db: Database) -> [Data] {
        let cap = 64
        let sql = "SELECT count(*) FROM (SELECT 1 FROM \"\(ExtendedAttributes.indexTable)\" WHERE h = ? LIMIT \(cap))"
        let counted = hashes.map { hash -> (Data, Int) in
            // A failed count only loses the ordering, never a result: the query itself checks every pair.
            let count = (try? Int.fetchOne(db.cachedStatement(sql: sql), arguments: [hash])) ?? cap
            return (hash, count)
        }
        return counted.sorted { $0.1 < $1.1 }.map(\.0)
    }

    /// The SQL text of a query's form.
    static func selectSQL(_ shape: SelectShape) -> String {
        var clauses: [String] = []
        switch shape.tombstones {
        case .hidden: clauses.append("tomb = 0")
        case .given: clauses.append("tomb = ?")
        case .any: break
        }
        if shape.byReference {
            clauses.append("uuid = ?")
        } else {
            switch shape.sync {
            case .local: clauses.append("sync = 0")
            case .synchronizable: clauses.append("sync = 1")
            case .any: break
            }
        }
        if let groups = shape.groups {
            clauses.append("h_agrp \(shape.trusted > 0 ? "NOT IN" : "IN") (\(Array(repeating: "?", count: groups).joined(separator: ",")))")
        }
        // With free-form attributes, the search starts from their index (a few rows), not from a column index such as
        // service + account that every item of a Secret Service collection shares: `+` keeps SQLite off the latter.
        let noIndex = shape.extended > 0 ? "+" : ""
        for code in shape.codes {
            clauses.append(code == "pdmn" ? "pdmn = ?" : "\(noIndex)\(KeychainEngine.column(code)) = ?")
        }
        // The first pair (the rarest, see bySelectivity) gives the candidate rows; each other pair is one lookup in
        // the index's primary key per candidate. (An IN list for every pair would build each pair's whole set: an
        // `xdg:schema` that every item shares would cost as many rows as the collection has.)
        for index in 0..<shape.extended {
            clauses.append(
                index == 0
                    ? "rowid IN (SELECT item FROM \"\(ExtendedAttributes.indexTable)\" WHERE h = ?)"
                    : "EXISTS (SELECT 1 FROM \"\(ExtendedAttributes.indexTable)\" WHERE h = ? AND item = \"\(shape.table)\".rowid)")
        }
        // Last, so that its values follow the query's own (see trustedSelect).
        if shape.trusted > 0 {
            clauses.append("rowid IN (SELECT item FROM \"\(TrustedApplications.indexTable)\" WHERE tbl = ? AND h IN (\(Array(repeating: "?", count: shape.trusted).joined(separator: ","))))")
        }
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        return "SELECT \(shape.columns) FROM \"\(shape.table)\"\(whereClause) ORDER BY rowid"
    }

    static let rowColumns = "rowid, uuid, pdmn, sync, tomb, h_agrp, pk, meta"

    /// The rows of `q`'s class that match it, at most `limit`, confined to `groups` (nil means every group). A
    /// damaged row among the candidates (see ``DamagedRowPolicy``) is never passed over in silence: it fails the
    /// query with `errSecDecode`, or is skipped and counted in the log, as `damaged` says.
    ///
    /// With `onlyMatched`, the items carry only the attributes the query matches on (for a find that returns
    /// nothing else of them).
    ///
    /// With a `gate`, an item whose access control guards its secret gives its secret only when the request holds
    /// the proof; otherwise the query fails with `errSecAuthNeeded` listing what each such item needs, or, with
    /// `kSecUseAuthenticationUISkip`, leaves the item out (Apple's `q_skip_acl_items`). Without a gate (the
    /// engine's own reads: verification, backup's envelope, a token key's use) secrets are opened as stored.
    ///
    /// With `trusted` terms (a caller's ``AccessPolicy/trustedAs``) and `groups`, the rows of `groups` come first;
    /// then, while `limit` allows, the rows outside `groups` whose trusted applications name one of the terms.
    func matchingRows(
        _ db: Database, _ q: ItemQuery, groups: [String]?, trusted: [String] = [], includeSecret: Bool, limit: Int?,
        damaged policy: DamagedRowPolicy, onlyMatched: Bool = false,
        gate: PresenceGate? = nil
    ) throws -> [(StoredRow, FoundItem)] {
        let cls = q.itemClass
        let columns = KeychainEngine.rowColumns + (includeSecret ? ", secret" : "")
        let (shape, arguments) = selectShape(q, groups: groups, columns: columns, db: db)
        var keeping: [String]?
        if onlyMatched {
            keeping = Array(q.attributes.keys)
            if q.hostOrSubdomain != nil { keeping?.append("srvr") }
            if !q.extendedMatch.isEmpty { keeping?.append(ExtendedAttributes.code) }
            // A protected item's access control is read even when the query keeps few attributes.
            if includeSecret && gate != nil { keeping?.append("accc") }
        }
        var out: [(StoredRow, FoundItem)] = []
        var damaged = 0
        var needed: [PresenceRequirement] = []
        try collectRows(
            db, q, sql: sqlText(shape), arguments: arguments, includeSecret: includeSecret, limit: limit,
            policy: policy, keeping: keeping, gate: gate, into: &out, damaged: &damaged, needed: &needed)
        if !trusted.isEmpty, groups != nil, limit.map({ out.count < $0 }) ?? true {
            let (sql, trustedArguments) = trustedSelect(shape, arguments, cls, trusted: trusted)
            try collectRows(
                db, q, sql: sql, arguments: trustedArguments, includeSecret: includeSecret, limit: limit,
                policy: policy, keeping: keeping, gate: gate, into: &out, damaged: &damaged, needed: &needed)
        }
        if !needed.isEmpty { throw KeychainEngine.presenceNeeded(needed) }
        if damaged > 0 {
            logger.error("skipped damaged items", metadata: ["class": "\(cls.rawValue)", "count": "\(damaged)"])
            if out.isEmpty && policy == .skipUnlessNoneIntact { throw KeychainError.damagedItem(cls) }
        }
        return out
    }

    /// Runs one SELECT of ``matchingRows(_:_:groups:trusted:includeSecret:limit:damaged:onlyMatched:gate:)``,
    /// adding its matches to `out` (until `out` holds `limit`), and counting its damaged rows and the presence its
    /// protected items need.
    private func collectRows(
        _ db: Database, _ q: ItemQuery, sql: String, arguments: [BoundValue], includeSecret: Bool,
        limit: Int?, policy: DamagedRowPolicy, keeping: [String]?, gate: PresenceGate?,
        into out: inout [(StoredRow, FoundItem)], damaged: inout Int,
        needed: inout [PresenceRequirement]
    ) throws {
        let cls = q.itemClass
        let rows = try RowStatement(db.cachedStatement(sql: sql), in: db, binding: arguments)
        defer { rows.finish() }
        rows: while try rows.next() {
            let outcome: RowOutcome
            if let stored = rows.storedRow(table: cls.table, includeSecret: includeSecret) {
                outcome = try openRow(stored, q, includeSecret: includeSecret, keeping: keeping, gate: gate)
            } else {
                outcome = .damaged
            }
            switch outcome {
            case .noMatch:
                continue rows
            case .damaged:
                damaged += 1
                if policy == .fail { throw KeychainError.damagedItem(cls) }
            case .item(let stored, let item):
                out.append((stored, item))
                if let limit, out.count >= limit { break rows }
            case .needsPresence(let requirement):
                if gate?.options.ui == .skip { continue rows }
                if needed.count < KeychainEngine.maximumRequirements { needed.append(requirement) }
            }
        }
    }

    /// Identities: certificates matching the query's certificate attributes, each with the private key whose
    /// application label is the certificate's public key hash (and that matches the query's key attributes).
    /// The item is the certificate's; its key rides along in ``FoundItem/identityKey``.
    func identityRows(_ db: Database, _ q: ItemQuery, groups: [String]?, gate: PresenceGate? = nil) throws -> [FoundItem] {
        let certificateCodes = Set(ItemClass.certificate.attributes.map(\.code))
        let keyCodes = Set(ItemClass.key.attributes.map(\.code)).subtracting(certificateCodes)
        var certificates = q
        certificates.itemClass = .certificate
        certificates.attributes = q.attributes.filter { certificateCodes.contains($0.key) }
        let secrets = q.returns.data || q.returns.ref
        var out: [FoundItem] = []
        let policy = DamagedRowPolicy.forQuery(q)
        for (_, certificate) in try matchingRows(db, certificates, groups: groups, includeSecret: secrets, limit: nil, damaged: policy, gate: gate) {
            guard case .data(let hash)? = certificate.attributes["pkhh"] else { continue }
            var keys = ItemQuery(itemClass: .key)
            keys.sync = q.sync
            keys.attributes = q.attributes.filter { keyCodes.contains($0.key) }
            keys.attributes["klbl"] = .data(hash)
            keys.attributes["kcls"] = .int(KeyClass.privateKey.rawValue)
            // A damaged key leaves its certificate without an identity; with kSecMatchLimitAll that is logged.
            guard
                let (_, key) = try matchingRows(
                    db, keys, groups: groups, includeSecret: secrets, limit: 1,
                    damaged: policy == .fail ? .fail : .skip, gate: gate
                ).first
            else { continue }
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
            let meta = value(7, as: Data.self)
        else { return nil }
        let identity = ItemCrypto.RowIdentity(
            table: table, uuid: uuid, protection: protection, groupHash: groupHash,
            primaryKeyHash: primaryKeyHash, sync: sync != 0, tombstone: tomb != 0)
        return StoredRow(
            rowid: rowid, identity: identity, meta: meta,
            secret: includeSecret ? value(8, as: Data.self) : nil)
    }

    /// What one candidate row turned out to be.
    enum RowOutcome {
        /// Intact, and it matches the query.
        case item(StoredRow, FoundItem)
        /// Intact, and the decrypted attributes do not match the query.
        case noMatch
        /// Its columns are malformed, or its sealed attributes or secret fail authentication.
        case damaged
        /// It matches, and its secret needs a proof of presence (or an application password) the request lacks.
        case needsPresence(PresenceRequirement)
    }

    /// At most this many requirements travel in one `errSecAuthNeeded` (Apple's client retries up to 20 times).
    static let maximumRequirements = 20

    /// Opens a row's attributes (and its secret when asked), and checks them against `q`. A row that fails
    /// authentication is reported as damaged, never deleted; a locked class still fails with
    /// `errSecInteractionNotAllowed`. (Kept out of `matchingRows`: a typed do/catch inside its loop makes the
    /// Swift 6.3 compiler hang.)
    func openRow(
        _ stored: StoredRow, _ q: ItemQuery, includeSecret: Bool, keeping: [String]? = nil,
        gate: PresenceGate? = nil
    ) throws(KeychainError) -> RowOutcome {
        let identity = stored.identity
        do {
            let attributes = try crypto.openAttributes(stored.meta, row: identity, keeping: keeping)
            guard matches(attributes, q) else { return .noMatch }
            var item = FoundItem(itemClass: q.itemClass, uuid: identity.uuid, attributes: attributes, data: nil)
            if includeSecret, let blob = stored.secret {
                if let gate, let control = KeychainEngine.accessControl(attributes), control.isProtected {
                    guard let data = try openProtectedSecret(blob, row: identity, control: control, gate: gate) else {
                        guard let requirement = KeychainEngine.requirement(item, .decrypt) else { return .damaged }
                        return .needsPresence(requirement)
                    }
                    item.data = data
                } else {
                    item.data = try crypto.openSecret(blob, row: identity)
                }
            }
            return .item(stored, item)
        } catch  where error.code == .corruptData {
            return .damaged
        }
    }

    /// A protected item's secret when the request holds what its access control asks for, else nil. A wrong
    /// application password is forgotten and fails with `errSecAuthFailed`.
    private func openProtectedSecret(
        _ blob: Data, row: ItemCrypto.RowIdentity, control: AccessControl,
        gate: PresenceGate
    ) throws(KeychainError) -> Data? {
        guard gate.factorsProven(control.constraint(for: .decrypt)) else { return nil }
        let secret = try crypto.openSecret(blob, row: row)
        guard control.flags.contains(.applicationPassword) else { return secret }
        let reference = PersistentReference(itemClass: ItemClass(rawValue: row.table) ?? .genericPassword, uuid: row.uuid).data
        guard let password = gate.applicationPassword(for: reference) else { return nil }
        do {
            return try ApplicationPasswordSeal.open(secret, password: password, uuid: row.uuid)
        } catch  where error.code == .authenticationFailed {
            if let context = gate.context {
                gate.ledger.forgetApplicationPassword(program: gate.program, context: context, for: reference)
            }
            throw error
        }
    }

    /// A row's attributes, or nil when they fail authentication (a damaged row); a locked class still fails with
    /// `errSecInteractionNotAllowed`.
    func openAttributesIfIntact(_ stored: StoredRow) throws(KeychainError) -> [String: AttributeValue]? {
        do {
            return try crypto.openAttributes(stored.meta, row: stored.identity)
        } catch  where error.code == .corruptData {
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
                server == host || server.hasSuffix("." + host)
            else { return false }
        }
        if !q.extendedMatch.isEmpty {
            guard q.itemClass == .genericPassword, case .data(let encoded)? = attributes[ExtendedAttributes.code],
                let extended = try? ExtendedAttributes(encoded: encoded),
                extended.contains(q.extendedMatch)
            else { return false }
        }
        return true
    }
}
