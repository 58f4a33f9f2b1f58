import Foundation
import Synchronization
import Logging
import Crypto
import GRDB

/// The keychain engine shared by Keychain Services, KeychainKit and the `security` tool: it owns the
/// encrypted SQLite store and applies Apple's SecItem semantics to typed requests.
///
/// Thread-safe: one engine serves every thread of a process; several processes may open the same
/// keychain at once (SQLite WAL with full sync, immediate write transactions, a busy timeout).
package final class KeychainEngine: Sendable {
    package let location: KeychainLocation
    let pool: DatabasePool
    /// Every write goes through here, so concurrent writes share a commit.
    let writer: GroupCommitWriter
    /// The keybag file's identity when last looked at (see ``followKeybagChanges()``).
    let keybagStamp = Mutex<[Int]?>(nil)
    /// The class keys this process holds now (they change with lock, unlock and passcode changes).
    let keys: KeyState
    let logger: Logger
    let random: any RandomSource
    /// The time, injectable so passcode throttling can be tested without waiting.
    let now: @Sendable () -> Date

    /// The keys usable right now.
    var crypto: ItemCrypto { keys.crypto }

    /// Schema version of `keychain-2.db` (`PRAGMA user_version`).
    package static let schemaVersion = 1

    /// Opens (creating when missing) the keychain at `location`.
    package init(location: KeychainLocation, logger: Logger = Logger(label: "swift-keychain"),
                 random: any RandomSource = SystemRandom(), now: @escaping @Sendable () -> Date = { Date() }) throws(KeychainError) {
        self.location = location
        self.logger = logger
        self.random = random
        self.now = now
        try FileSystem.ensurePrivateDirectory(location.home)
        // Opening is serialized across processes: two first opens must not race to create the keybag or to
        // switch a new database to WAL.
        let (keybag, passcodeSet, pool) = try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            try KeychainEngine.open(location, random: random)
        }
        self.pool = pool
        writer = GroupCommitWriter(pool: pool)
        keys = KeyState(keybag: keybag, passcodeSet: passcodeSet, random: random)
        logger.debug("opened keychain", metadata: ["home": "\(location.home)"])
    }

    // MARK: Files

    static func open(_ location: KeychainLocation, random: any RandomSource) throws(KeychainError) -> (Keybag, Bool, DatabasePool) {
        let deviceKey = try KeychainEngine.loadOrCreateDeviceKey(location, random: random)
        let (keybag, passcodeSet) = try KeychainEngine.loadOrCreateKeybag(location, deviceKey: deviceKey, random: random)
        try FileSystem.createPrivateFile(location.databasePath)
        var config = Configuration()
        config.busyMode = .timeout(120)
        config.label = "keychain"
        config.maximumReaderCount = 4
        config.prepareDatabase { db in
            // Every acknowledged write is fsynced before the call returns.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            let pool = try DatabasePool(path: location.databasePath, configuration: config)
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try KeychainEngine.migrate(db)
                    return .commit
                }
            }
            return (keybag, passcodeSet, pool)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .notAvailable, message: "Cannot open the keychain database \(location.databasePath). If it is damaged, move it away (a new, empty keychain is created).", cause: DescribedError(error))
        }
    }


    static func loadOrCreateDeviceKey(_ location: KeychainLocation, random: any RandomSource) throws(KeychainError) -> SymmetricKey {
        for _ in 0 ..< 2 {
            if let bytes = try FileSystem.read(location.deviceKeyPath) {
                guard bytes.count == 32 else {
                    throw KeychainError(code: .corruptData, message: "\(location.deviceKeyPath) is not a device key (expected 32 bytes). Restore it from a backup.")
                }
                return SymmetricKey(data: bytes)
            }
            // A keybag without its device key can never be opened again: say so rather than start over.
            if FileManager.default.fileExists(atPath: location.keybagPath) {
                throw KeychainError(code: .notAvailable, message: "\(location.deviceKeyPath) is missing, and the keybag beside it cannot be opened without it. Restore device.key from a backup; to start an empty keychain instead, move the whole folder away.")
            }
            try FileSystem.writeAtomically(random.bytes(32), to: location.deviceKeyPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create \(location.deviceKeyPath).")
    }

    /// The keybag as this process first sees it ("boot"): with a passcode set, only `dk`/`dku` are unwrapped.
    static func loadOrCreateKeybag(_ location: KeychainLocation, deviceKey: SymmetricKey, random: any RandomSource) throws(KeychainError) -> (Keybag, Bool) {
        for _ in 0 ..< 2 {
            if let bytes = try FileSystem.read(location.keybagPath) {
                return (try Keybag.decode(bytes, deviceKey: deviceKey), try Keybag.header(bytes).passcode != nil)
            }
            // Items sealed under a lost keybag would silently vanish from every query: refuse instead.
            if let size = (try? FileManager.default.attributesOfItem(atPath: location.databasePath))?[.size] as? Int, size > 0 {
                throw KeychainError(code: .notAvailable, message: "\(location.keybagPath) is missing, and the items in keychain-2.db cannot be read without it. Restore the keybag from a backup; to start an empty keychain instead, move the whole folder away.")
            }
            let bag = Keybag.generate(random: random)
            try FileSystem.writeAtomically(bag.encode(deviceKey: deviceKey, random: random), to: location.keybagPath, exclusive: true)
        }
        throw KeychainError(code: .io, message: "Cannot create \(location.keybagPath).")
    }

    // MARK: Schema

    static func column(_ code: String) -> String { "\"h_\(code)\"" }

    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version == schemaVersion { return }
        guard version == 0 else {
            throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: "keychain-2.db has schema version \(version); this swift-keychain understands \(schemaVersion). Upgrade swift-keychain.")
        }
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
        try db.execute(sql: "PRAGMA user_version = \(schemaVersion)")
    }

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
    func visibleGroups(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [String]? {
        if let group = q.accessGroup {
            guard caller.allows(group) else { throw missingEntitlement(group, caller: caller) }
            return [group]
        }
        if caller.unrestricted { return nil }
        guard !caller.groups.isEmpty else { throw noEntitlements() }
        return caller.groups
    }

    func missingEntitlement(_ group: String, caller: AccessPolicy) -> KeychainError {
        KeychainError(code: .missingEntitlement, message: "This process is not entitled to access group '\(group)'; its groups are \(caller.groups). Add the group to 'keychain-access-groups' in the plist named by KEYCHAIN_ENTITLEMENTS.")
    }

    func noEntitlements() -> KeychainError {
        KeychainError(code: .missingEntitlement, message: "This process has no keychain access groups. Give it 'keychain-access-groups' or 'application-identifier' in the plist named by KEYCHAIN_ENTITLEMENTS.")
    }

    /// Reads the rows matching `q`, decrypting and verifying each; stops after `limit` matches.
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

    // MARK: Operations

    /// Inserts an item (Apple's `SecItemAdd`), returning it as stored.
    package func add(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> FoundItem {
        let cls = q.itemClass
        guard cls != .identity else { throw .param("Identities cannot be added by attributes.") }
        var attributes = q.attributes
        let group: String
        if let explicit = q.accessGroup {
            guard caller.allows(explicit) else { throw missingEntitlement(explicit, caller: caller) }
            group = explicit
        } else {
            guard let first = caller.defaultGroup else { throw noEntitlements() }
            group = first
        }
        attributes["agrp"] = .string(group)
        let protection = attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:))
            ?? cls.defaultAccessibility
        if protection == .whenPasscodeSetThisDeviceOnly, !keys.passcodeSet {
            throw KeychainError.noPasscodeForPasscodeOnlyItem
        }
        attributes["pdmn"] = .string(protection.rawValue)
        let sync = q.sync == .synchronizable
        attributes["sync"] = .int(sync ? 1 : 0)
        attributes["tomb"] = .int(0)
        for descriptor in cls.attributes where attributes[descriptor.code] == nil {
            if let value = descriptor.defaultValue, descriptor.primaryKey { attributes[descriptor.code] = value }
        }
        let timestamp = now()
        attributes["cdat"] = .date(timestamp)
        attributes["mdat"] = .date(timestamp)
        let row = try prepareInsert(cls, attributes: attributes, secret: q.valueData)
        let (sql, arguments, uuid) = (row.sql, row.arguments, row.uuid)
        let identity = row.identity
        try write { db in
            do {
                try db.cachedStatement(sql: sql).execute(arguments: arguments)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                // A tombstone (deleted synchronizable item) with the same key is silently replaced.
                let removed = try db.cachedStatement(sql: "DELETE FROM \"\(cls.table)\" WHERE pk = ? AND tomb = 1")
                try removed.execute(arguments: [identity.primaryKeyHash])
                guard db.changesCount > 0 else { throw KeychainError(code: .duplicateItem, message: "An item with the same primary key already exists in this access group. Update it with SecItemUpdate, or delete it first.") }
                try db.cachedStatement(sql: sql).execute(arguments: arguments)
            }
        }
        logger.debug("add", metadata: ["class": "\(cls.rawValue)"])
        return FoundItem(itemClass: cls, uuid: uuid, attributes: attributes, data: q.valueData)
    }

    /// An INSERT of a new row holding `attributes` (complete: group, protection, sync, dates) and `secret`.
    struct PreparedInsert {
        var sql: String
        var arguments: StatementArguments
        var uuid: Data
        var identity: ItemCrypto.RowIdentity
    }

    func prepareInsert(_ cls: ItemClass, attributes: [String: AttributeValue], secret data: Data?) throws(KeychainError) -> PreparedInsert {
        let protection = attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:)) ?? cls.defaultAccessibility
        let sync = attributes["sync"]?.intValue == 1
        let uuid = Data(random.bytes(ItemCrypto.uuidLength))
        let identity = identity(for: cls, uuid: uuid, attributes: attributes, protection: protection, sync: sync, tombstone: false)
        let meta = try crypto.sealAttributes(attributes, row: identity)
        let secret = try data.map { (data) throws(KeychainError) in try crypto.sealSecret(data, row: identity) }
        let hashes: [(String, Data)] = cls.attributes.compactMap { d in
            guard d.searchable, let v = attributes[d.code] else { return nil }
            return (d.code, crypto.attributeHash(table: cls.table, code: d.code, value: v))
        }
        let names = ["uuid", "pk", "sync", "tomb", "pdmn", "meta", "secret"] + hashes.map { KeychainEngine.column($0.0) }
        let sql = "INSERT INTO \"\(cls.table)\" (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ",")))"
        var args: [(any DatabaseValueConvertible)?] = [uuid, identity.primaryKeyHash, sync ? 1 : 0, 0, protection.rawValue, meta, secret]
        args += hashes.map { $0.1 }
        return PreparedInsert(sql: sql, arguments: StatementArguments(args), uuid: uuid, identity: identity)
    }

    /// Finds matching items (Apple's `SecItemCopyMatching`); throws `errSecItemNotFound` when none match. A token
    /// key's private bytes never leave: such keys come back with their public key instead.
    package func find(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [FoundItem] {
        try findStored(q, caller: caller).map { $0.leavingEngine() }
    }

    /// Finds matching items as stored, private key bytes included: for the engine's own use only.
    func findStored(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [FoundItem] {
        let groups = try visibleGroups(q, caller: caller)
        if q.itemClass == .identity {
            let identities = try read { db in try identityRows(db, q, groups: groups) }
            logger.debug("copy-matching", metadata: ["class": "idnt", "count": "\(identities.count)"])
            guard !identities.isEmpty else { throw .notFound() }
            return identities
        }
        let items = try read { db in
            try matchingRows(db, q, groups: groups, includeSecret: q.returns.data || (q.returns.ref && [.key, .certificate].contains(q.itemClass)), limit: q.limit.maximum).map(\.1)
        }
        logger.debug("copy-matching", metadata: ["class": "\(q.itemClass.rawValue)", "count": "\(items.count)"])
        guard !items.isEmpty else { throw .notFound() }
        return items
    }

    /// Updates every matching item (Apple's `SecItemUpdate`); the whole update is one transaction.
    package func update(_ q: ItemQuery, attributes changes: [String: AttributeValue], sync newSync: Bool?, data: Data?,
                        caller: AccessPolicy) throws(KeychainError) {
        let cls = q.itemClass
        if q.hasReturnKeys { throw .param("SecItemUpdate's query cannot contain kSecReturn… keys.") }
        if q.hasMatchKeys { throw .param("SecItemUpdate's query cannot contain kSecMatch… keys (not even kSecMatchLimit).") }
        if cls == .identity { throw .notFound("Identities cannot be updated yet.") }
        if case .string(let group)? = changes["agrp"], !caller.allows(group) { throw missingEntitlement(group, caller: caller) }
        if changes["pdmn"]?.stringValue == ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue, !keys.passcodeSet {
            throw KeychainError.noPasscodeForPasscodeOnlyItem
        }
        let groups = try visibleGroups(q, caller: caller)
        let count = try write { db in
            let rows = try matchingRows(db, q, groups: groups, includeSecret: true, limit: nil)
            guard !rows.isEmpty else { throw KeychainError.notFound() }
            let timestamp = now()
            for (stored, item) in rows {
                var attributes = item.attributes
                for (code, value) in changes { attributes[code] = value }
                let sync = newSync ?? stored.identity.sync
                attributes["sync"] = .int(sync ? 1 : 0)
                attributes["mdat"] = .date(timestamp)
                let protection = attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:)) ?? stored.identity.protection
                let identity = identity(for: cls, uuid: stored.identity.uuid, attributes: attributes, protection: protection, sync: sync, tombstone: false)
                let meta = try crypto.sealAttributes(attributes, row: identity)
                var secret = stored.secret
                if let data {
                    secret = try crypto.sealSecret(data, row: identity)
                } else if let old = stored.secret, protection != stored.identity.protection {
                    secret = try crypto.rewrapSecret(old, from: stored.identity, to: identity)
                }
                var sets = ["pk = ?", "sync = ?", "pdmn = ?", "meta = ?", "secret = ?"]
                var args: [(any DatabaseValueConvertible)?] = [identity.primaryKeyHash, sync ? 1 : 0, protection.rawValue, meta, secret]
                for d in cls.attributes where d.searchable {
                    sets.append("\(KeychainEngine.column(d.code)) = ?")
                    args.append(attributes[d.code].map { crypto.attributeHash(table: cls.table, code: d.code, value: $0) })
                }
                args.append(stored.rowid)
                do {
                    try db.cachedStatement(sql: "UPDATE \"\(cls.table)\" SET \(sets.joined(separator: ", ")) WHERE rowid = ?")
                        .execute(arguments: StatementArguments(args))
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    throw KeychainError(code: .duplicateItem, message: "The update would give an item the same primary key as another item; nothing was changed.")
                }
            }
            return rows.count
        }
        logger.debug("update", metadata: ["class": "\(cls.rawValue)", "count": "\(count)"])
    }

    /// Deletes every matching item (Apple's `SecItemDelete`), leaving tombstones for synchronizable ones.
    @discardableResult
    package func delete(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> Int {
        let cls = q.itemClass
        if q.hasMatchKeys { throw .param("SecItemDelete's query cannot contain kSecMatch… keys (not even kSecMatchLimit).") }
        if cls == .identity {
            // Deleting an identity deletes its certificate, then its key (Apple's "explode").
            var all = q
            all.limit = .all
            let identities = try find(all, caller: caller)
            for identity in identities {
                for (itemClass, uuid) in [(ItemClass.certificate, identity.uuid), (.key, identity.identityKey?.uuid)] {
                    guard let uuid else { continue }
                    var one = ItemQuery(itemClass: itemClass)
                    one.sync = .any
                    one.persistentRef = PersistentReference(itemClass: itemClass, uuid: uuid)
                    do {
                        _ = try delete(one, caller: caller)
                    } catch where error.code == .itemNotFound {
                        // Already gone (another identity shared this key).
                    }
                }
            }
            return identities.count
        }
        let groups = try visibleGroups(q, caller: caller)
        let count = try write { db in
            let rows = try matchingRows(db, q, groups: groups, includeSecret: false, limit: nil)
            guard !rows.isEmpty else { throw KeychainError.notFound() }
            for (stored, item) in rows {
                if stored.identity.sync {
                    var attributes = item.attributes
                    attributes["tomb"] = .int(1)
                    attributes["mdat"] = .date(now())
                    var identity = stored.identity
                    identity.tombstone = true
                    let meta = try crypto.sealAttributes(attributes, row: identity)
                    try db.cachedStatement(sql: "UPDATE \"\(cls.table)\" SET tomb = 1, meta = ?, secret = NULL WHERE rowid = ?")
                        .execute(arguments: [meta, stored.rowid])
                } else {
                    try db.cachedStatement(sql: "DELETE FROM \"\(cls.table)\" WHERE rowid = ?").execute(arguments: [stored.rowid])
                }
            }
            return rows.count
        }
        logger.debug("delete", metadata: ["class": "\(cls.rawValue)", "count": "\(count)"])
        return count
    }

    // MARK: Database access with error mapping

    /// Runs `body` on a reader connection outside any transaction: every read the engine makes is one SELECT
    /// (an identity's certificate and key are two, each checked on its own), which SQLite runs on one WAL
    /// snapshot, so an explicit `BEGIN`/`COMMIT` pair around it would only add two statements to each call.
    func read<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try pool.unsafeRead(body)
        } catch {
            throw mapError(error)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try writer.perform(body)
        } catch {
            throw mapError(error)
        }
    }

    func mapError(_ error: any Error) -> KeychainError {
        if let error = error as? KeychainError { return error }
        if let error = error as? DatabaseError {
            logger.error("database error", metadata: ["code": "\(error.resultCode.rawValue)"])
            switch error.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return KeychainError(code: .io, message: "The keychain database stayed busy too long; another process holds a long write. Try again.", cause: DescribedError(error))
            case .SQLITE_FULL:
                return KeychainError(code: .io, status: .diskFull, message: "The disk is full. Free some space and try again.", cause: DescribedError(error))
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return KeychainError(code: .notAvailable, message: "keychain-2.db is damaged. Restore it from a backup, or move it away to start a new keychain.", cause: DescribedError(error))
            default:
                return KeychainError(code: .io, message: "The keychain database failed (SQLite code \(error.resultCode.rawValue)). Check KEYCHAIN_HOME's disk and permissions.", cause: DescribedError(error))
            }
        }
        return KeychainError(code: .internal, message: "Unexpected failure.", cause: DescribedError(error))
    }
}

/// A sendable description of an underlying error. Database errors may quote SQL and its arguments, which
/// can contain hashes but never values; only the result code and message are kept.
package struct DescribedError: Error, Sendable, CustomStringConvertible {
    package let description: String
    init(_ error: any Error) {
        if let db = error as? DatabaseError {
            description = "SQLite error \(db.resultCode.rawValue): \(db.message ?? "")"
        } else {
            description = String(describing: type(of: error))
        }
    }
}

extension KeychainEngine {
    /// Write transactions committed by this engine and the writes they held (group commit puts several
    /// concurrent writes in one transaction).
    package var commitStatistics: (transactions: Int, writes: Int) { writer.statistics }

    /// Closes the database after the writes in progress: the WAL is checkpointed and the files released.
    /// The engine must not be used afterwards.
    package func close() throws(KeychainError) {
        do {
            try pool.close()
        } catch {
            throw mapError(error)
        }
    }
}
