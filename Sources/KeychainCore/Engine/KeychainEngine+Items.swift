import Foundation
import Crypto
import GRDB
import Logging
import Synchronization

/// Apple's four item operations on typed queries: add, find, update, delete.
extension KeychainEngine {
    // MARK: Operations

    /// Inserts an item (Apple's `SecItemAdd`), returning it as stored.
    ///
    /// - Parameters:
    ///   - q: The item to add.
    ///   - caller: The access groups the caller acts as.
    ///   - keepingDates: The creation and modification dates to store instead of now. Only an import of items
    ///     made elsewhere passes them (``SecretStore/importItems(_:)``); no request a client sends can.
    package func add(_ q: ItemQuery, caller: AccessPolicy, keepingDates: ItemDates? = nil) throws(KeychainError) -> FoundItem {
        let cls = q.itemClass
        guard cls != .identity else { throw .param("Identities cannot be added by attributes.") }
        try refuseTokenGroupWrite(q)
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
        if attributes[TrustedApplications.code]?.stringValue == "" { attributes[TrustedApplications.code] = nil }
        let protection =
            attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:))
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
        attributes["cdat"] = .date(keepingDates?.created ?? timestamp)
        attributes["mdat"] = .date(keepingDates?.modified ?? timestamp)
        let applicationPassword = try applicationPasswordForAdd(attributes, sync: sync, caller: caller, options: q.authentication)
        let row = try prepareInsert(cls, attributes: attributes, secret: q.valueData, applicationPassword: applicationPassword)
        let identity = row.identity
        let uuid = try write { db in
            do {
                try row.insert(db)
                return row.uuid
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                // A tombstone (a deleted synchronizable item) with the same key is replaced, and the new item takes
                // its identity: to sync it is that item, deleted and then written again — so the deletion and the
                // new content travel as two changes of one item, each with its own time, and a change another
                // device made meanwhile is weighed against both (not against a deletion dated at upload).
                let tombstone = try Data.fetchOne(
                    db, sql: "SELECT uuid FROM \"\(cls.table)\" WHERE pk = ? AND tomb = 1",
                    arguments: [identity.primaryKeyHash])
                guard let tombstone else {
                    throw KeychainError(code: .duplicateItem, message: "An item with the same primary key already exists in this access group. Update it with SecItemUpdate, or delete it first.")
                }
                try db.cachedStatement(sql: "DELETE FROM \"\(cls.table)\" WHERE pk = ? AND tomb = 1").execute(arguments: [identity.primaryKeyHash])
                let again = try prepareInsert(
                    cls, attributes: attributes, secret: q.valueData, applicationPassword: applicationPassword,
                    uuid: tombstone)
                try again.insert(db)
                return again.uuid
            }
        }
        logger.debug("add", metadata: ["class": "\(cls.rawValue)"])
        changeObservers.notify([ItemChange(kind: .added, itemClass: cls, attributes: attributes)])
        return FoundItem(itemClass: cls, uuid: uuid, attributes: attributes, data: q.valueData)
    }

    /// An INSERT of a new row holding `attributes` (complete: group, protection, sync, dates) and `secret`.
    struct PreparedInsert {
        var sql: String
        var arguments: StatementArguments
        var uuid: Data
        var identity: ItemCrypto.RowIdentity
        /// The keyed hashes of the item's free-form attributes, for ``ExtendedAttributes/indexTable``.
        var extendedHashes: [Data]
        /// The keyed hashes of the item's trusted applications, for ``TrustedApplications/indexTable``.
        var trustedHashes: [Data] = []

        /// Inserts the row, then its free-form attributes' and trusted applications' index rows.
        func insert(_ db: Database) throws {
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            guard !extendedHashes.isEmpty || !trustedHashes.isEmpty else { return }
            let item = db.lastInsertedRowID
            if !extendedHashes.isEmpty {
                try KeychainEngine.indexExtendedAttributes(db, item: item, hashes: extendedHashes)
            }
            if !trustedHashes.isEmpty {
                try KeychainEngine.indexTrustedApplications(db, table: identity.table, item: item, hashes: trustedHashes)
            }
        }
    }

    /// Replaces the index rows of `item`'s trusted applications (in class table `table`) with `hashes`.
    static func indexTrustedApplications(_ db: Database, table: String, item: Int64, hashes: [Data], replacing: Bool = false) throws {
        let index = TrustedApplications.indexTable
        if replacing {
            try db.cachedStatement(sql: "DELETE FROM \"\(index)\" WHERE tbl = ? AND item = ?").execute(arguments: [table, item])
        }
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \"\(index)\" (tbl, h, item) VALUES (?, ?, ?)")
        for hash in hashes { try statement.execute(arguments: [table, hash, item]) }
    }

    /// The keyed hash of a trusted-application term in `cls`'s table: what an item's list is indexed by, and what a
    /// caller's terms are looked up as.
    func trustedHash(_ cls: ItemClass, _ term: String) -> Data {
        crypto.trustedApplicationHash(table: cls.table, term: term)
    }

    /// The keyed hashes of the trusted applications among `attributes` (none without a list; `errSecParam` for a
    /// malformed one).
    func trustedHashes(_ cls: ItemClass, _ attributes: [String: AttributeValue]) throws(KeychainError) -> [Data] {
        guard let value = attributes[TrustedApplications.code] else { return [] }
        guard case .string(let joined) = value else {
            throw .param("The trusted applications (xtap) must be given as a list of strings.")
        }
        let list = try TrustedApplications(joined.split(separator: "\n").map(String.init))
        return list.terms.map { trustedHash(cls, $0) }
    }

    /// Replaces the index rows of `item`'s free-form attributes with `hashes`.
    static func indexExtendedAttributes(_ db: Database, item: Int64, hashes: [Data], replacing: Bool = false) throws {
        let table = ExtendedAttributes.indexTable
        if replacing {
            try db.cachedStatement(sql: "DELETE FROM \"\(table)\" WHERE item = ?").execute(arguments: [item])
        }
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \"\(table)\" (h, item) VALUES (?, ?)")
        for hash in hashes { try statement.execute(arguments: [hash, item]) }
    }

    /// The keyed hashes of the free-form attributes among `attributes` (none for other classes), after checking
    /// them (`errSecParam` for a malformed or over-large set).
    func extendedHashes(_ cls: ItemClass, _ attributes: [String: AttributeValue]) throws(KeychainError) -> [Data] {
        guard cls == .genericPassword, let value = attributes[ExtendedAttributes.code] else { return [] }
        guard case .data(let encoded) = value else {
            throw .param("The free-form attributes (xatr) must be given in their encoded form.")
        }
        let extended: ExtendedAttributes
        do {
            extended = try ExtendedAttributes(encoded: encoded)
        } catch {
            throw .param("The free-form attributes (xatr) are not in their encoded form.")
        }
        try extended.validate()
        return extended.values.map { name, value in
            crypto.attributeHash(
                table: cls.table, code: ExtendedAttributes.code,
                value: ExtendedAttributes.indexTerm(name: name, value: value))
        }
    }

    /// Checks a new item's access control (Apple's rules for adding), and returns the application password its
    /// secret is to be sealed under when it asks for one: given with the request, or proven under its context;
    /// without one the add fails with `errSecAuthNeeded`, for the client to ask the person.
    func applicationPasswordForAdd(
        _ attributes: [String: AttributeValue], sync: Bool, caller: AccessPolicy,
        options: AuthenticationOptions
    ) throws(KeychainError) -> Data? {
        guard let control = Self.accessControl(attributes) else { return nil }
        if control.flags.contains(.privateKeyUsage) && !TokenKeys.isTokenKey(attributes) {
            throw .param("kSecAccessControlPrivateKeyUsage applies to a private key kept by the keychain (kSecAttrTokenID), whose use it guards.")
        }
        if sync && control.isProtected {
            throw .param("An item with an access control that needs the user's presence cannot be synchronizable.")
        }
        guard control.flags.contains(.applicationPassword) else { return nil }
        if let password = presenceGate(options, caller: caller).applicationPassword(for: nil) { return password }
        throw Self.presenceNeeded([
            PresenceRequirement(
                item: nil, itemDescription: Self.promptName(attributes),
                operation: .decrypt, accessControl: control)
        ])
    }

    /// `uuid` is the item's identity when it takes a deleted item's place; a new random one otherwise.
    func prepareInsert(
        _ cls: ItemClass, attributes: [String: AttributeValue], secret data: Data?,
        applicationPassword: Data? = nil, uuid given: Data? = nil
    ) throws(KeychainError) -> PreparedInsert {
        let protection = attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:)) ?? cls.defaultAccessibility
        let sync = attributes["sync"]?.intValue == 1
        let uuid = given ?? Data(random.bytes(ItemCrypto.uuidLength))
        let identity = identity(for: cls, uuid: uuid, attributes: attributes, protection: protection, sync: sync, tombstone: false)
        let meta = try crypto.sealAttributes(attributes, row: identity)
        var inner = data
        if let applicationPassword {
            inner = try ApplicationPasswordSeal.seal(
                data ?? Data(), password: applicationPassword, uuid: uuid,
                log2N: passcodePolicy.minimumLog2N, random: random)
        }
        let secret = try inner.map { (data) throws(KeychainError) in try crypto.sealSecret(data, row: identity) }
        let extended = try extendedHashes(cls, attributes)
        let trusted = try trustedHashes(cls, attributes)
        let hashes: [(String, Data)] = cls.attributes.compactMap { d in
            guard d.searchable, let v = attributes[d.code] else { return nil }
            return (d.code, crypto.attributeHash(table: cls.table, code: d.code, value: v))
        }
        let names = ["uuid", "pk", "sync", "tomb", "pdmn", "meta", "secret"] + hashes.map { KeychainEngine.column($0.0) }
        let sql = "INSERT INTO \"\(cls.table)\" (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ",")))"
        var args: [(any DatabaseValueConvertible)?] = [uuid, identity.primaryKeyHash, sync ? 1 : 0, 0, protection.rawValue, meta, secret]
        args += hashes.map { $0.1 }
        return PreparedInsert(
            sql: sql, arguments: StatementArguments(args), uuid: uuid, identity: identity,
            extendedHashes: extended, trustedHashes: trusted)
    }

    /// Finds matching items (Apple's `SecItemCopyMatching`); throws `errSecItemNotFound` when none match. A token
    /// key's private bytes never leave: such keys come back with their public key instead. A damaged item the
    /// query meets gives `errSecDecode`; with `kSecMatchLimitAll` it is skipped and counted in the log, and the
    /// query fails with `errSecDecode` only when no intact item matched (see ``DamagedRowPolicy``).
    ///
    /// Then, for a caller that sees `com.apple.token`, the keys, certificates and identities of the PKCS#11 tokens
    /// present (see `KeychainEngine+PKCS11.swift`), while the limit allows.
    package func find(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [FoundItem] {
        let stored: [FoundItem]
        do {
            stored = try findStored(q, caller: caller, gate: presenceGate(q.authentication, caller: caller)).map { $0.leavingEngine() }
        } catch  where error.code == .itemNotFound && tokenItemsApply(q, caller: caller) {
            stored = []
        }
        if let limit = q.limit.maximum, stored.count >= limit { return stored }
        let found = stored + tokenItems(q, caller: caller)
        guard !found.isEmpty else { throw .notFound() }
        if let limit = q.limit.maximum { return Array(found.prefix(limit)) }
        return found
    }

    /// Finds matching items as stored, private key bytes included: for the engine's own use only. Without a
    /// `gate`, protected secrets are returned as stored (see ``matchingRows(_:_:groups:trusted:includeSecret:limit:damaged:onlyMatched:gate:)``).
    func findStored(_ q: ItemQuery, caller: AccessPolicy, gate: PresenceGate? = nil) throws(KeychainError) -> [FoundItem] {
        let groups = try visibleGroups(q, caller: caller)
        if q.itemClass == .identity {
            let identities = try read { db in try identityRows(db, q, groups: groups, gate: gate) }
            logger.debug("copy-matching", metadata: ["class": "idnt", "count": "\(identities.count)"])
            guard !identities.isEmpty else { throw .notFound() }
            return identities
        }
        // Only a password's data (and perhaps its persistent reference) asked for: its other attributes need not be
        // decoded. (Keys and certificates always are: whether a key is a token key, which never leaves, is read from
        // them; and a query with no return keys gets every attribute, for the engine's own callers.)
        let onlyMatched =
            q.returns.data && !q.returns.attributes && !q.returns.ref
            && [.genericPassword, .internetPassword].contains(q.itemClass)
        let includeSecret = q.returns.data || (q.returns.ref && [.key, .certificate].contains(q.itemClass))
        // The items the caller's groups hold first; then, while the limit allows, those it is a trusted application
        // of (outside its groups): a program's own items always come before those it was given.
        let trusted = groups != nil && q.accessGroup == nil ? caller.trustedAs : []
        let items = try read { db in
            try matchingRows(
                db, q, groups: groups, trusted: trusted, includeSecret: includeSecret, limit: q.limit.maximum,
                damaged: .forQuery(q), onlyMatched: onlyMatched, gate: gate
            ).map { $0.1 }
        }
        logger.debug("copy-matching", metadata: ["class": "\(q.itemClass.rawValue)", "count": "\(items.count)"])
        guard !items.isEmpty else { throw .notFound() }
        return items
    }

    /// Updates every matching item (Apple's `SecItemUpdate`); the whole update is one transaction.
    package func update(
        _ q: ItemQuery, attributes changes: [String: AttributeValue], sync newSync: Bool?, data: Data?,
        caller: AccessPolicy
    ) throws(KeychainError) {
        let cls = q.itemClass
        if q.hasReturnKeys { throw .param("SecItemUpdate's query cannot contain kSecReturn… keys.") }
        try refuseTokenGroupWrite(q)
        if q.hasMatchKeys { throw .param("SecItemUpdate's query cannot contain kSecMatch… keys (not even kSecMatchLimit).") }
        if cls == .identity { throw .notFound("Identities cannot be updated yet.") }
        if case .string(let group)? = changes["agrp"], !caller.allows(group) { throw missingEntitlement(group, caller: caller) }
        if changes["pdmn"]?.stringValue == ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue, !keys.passcodeSet {
            throw KeychainError.noPasscodeForPasscodeOnlyItem
        }
        let groups = try visibleGroups(q, caller: caller)
        let gate = presenceGate(q.authentication, caller: caller)
        // Only generic passwords have free-form attributes: another class's rowid would name some generic password's
        // index rows, which re-indexing would replace.
        let newExtended: [Data]? =
            cls != .genericPassword || changes[ExtendedAttributes.code] == nil
            ? nil : try extendedHashes(cls, changes)
        // A new list of trusted applications (an empty one removes the list): only the item's owners reach it, since
        // an update is confined to the caller's own groups.
        let newTrusted: [Data]? = changes[TrustedApplications.code] == nil ? nil : try trustedHashes(cls, changes)
        let newControl = changes["accc"].flatMap { value -> AccessControl? in
            guard case .data(let bytes) = value else { return nil }
            return AccessControl(encoded: bytes)
        }
        let observed = changeObservers.isObserved
        let changed = Mutex<[ItemChange]>([])
        let count = try write { db in
            changed.withLock { $0 = [] }
            let rows = try matchingRows(db, q, groups: groups, includeSecret: true, limit: nil, damaged: .skipUnlessNoneIntact)
            guard !rows.isEmpty else { throw KeychainError.notFound() }
            // An item whose secret needs presence is changed only with the proof (Apple decrypts the item to
            // update it): otherwise an update could strip its access control.
            var needed: [PresenceRequirement] = []
            for (_, item) in rows {
                guard let control = Self.accessControl(item.attributes) else { continue }
                if !gate.factorsProven(control.constraint(for: .decrypt)), let requirement = Self.requirement(item, .decrypt) {
                    needed.append(requirement)
                }
            }
            if !needed.isEmpty { throw Self.presenceNeeded(Array(needed.prefix(Self.maximumRequirements))) }
            let timestamp = now()
            for (stored, item) in rows {
                let oldControl = Self.accessControl(item.attributes)
                if oldControl != nil, newControl == nil, changes["pdmn"] != nil {
                    throw KeychainError.param("The item has an access control: change its accessibility with a new kSecAttrAccessControl, not kSecAttrAccessible.")
                }
                let passwordBefore = oldControl?.flags.contains(.applicationPassword) ?? false
                let passwordAfter = (newControl ?? oldControl)?.flags.contains(.applicationPassword) ?? false
                if passwordBefore != passwordAfter {
                    throw KeychainError.param("An update cannot add or remove kSecAccessControlApplicationPassword: delete the item and add it again.")
                }
                if let newControl, newControl.flags.contains(.privateKeyUsage), !TokenKeys.isTokenKey(item.attributes) {
                    throw KeychainError.param("kSecAccessControlPrivateKeyUsage applies to a private key kept by the keychain (kSecAttrTokenID).")
                }
                if (newSync ?? stored.identity.sync), (newControl ?? oldControl)?.isProtected == true {
                    throw KeychainError.param("An item with an access control that needs the user's presence cannot be synchronizable.")
                }
                var newSecret = data
                if let data, let control = newControl ?? oldControl, control.flags.contains(.applicationPassword) {
                    guard let password = gate.applicationPassword(for: item.persistentRef.data) else {
                        throw Self.presenceNeeded([
                            PresenceRequirement(
                                item: item.persistentRef, itemDescription: Self.promptName(item.attributes),
                                operation: .decrypt, accessControl: control)
                        ])
                    }
                    newSecret = try ApplicationPasswordSeal.seal(
                        data, password: password, uuid: stored.identity.uuid,
                        log2N: passcodePolicy.minimumLog2N, random: random)
                }
                var attributes = item.attributes
                for (code, value) in changes { attributes[code] = value }
                if attributes[TrustedApplications.code]?.stringValue == "" { attributes[TrustedApplications.code] = nil }
                let sync = newSync ?? stored.identity.sync
                attributes["sync"] = .int(sync ? 1 : 0)
                attributes["mdat"] = .date(timestamp)
                let protection = attributes["pdmn"].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:)) ?? stored.identity.protection
                let identity = identity(for: cls, uuid: stored.identity.uuid, attributes: attributes, protection: protection, sync: sync, tombstone: false)
                let meta = try crypto.sealAttributes(attributes, row: identity)
                var secret = stored.secret
                if let newSecret {
                    secret = try crypto.sealSecret(newSecret, row: identity)
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
                let sql = "UPDATE \"\(cls.table)\" SET \(sets.joined(separator: ", ")) WHERE rowid = ?"
                do {
                    try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(args))
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    // As on add, a tombstone (a deleted synchronizable twin) with the new key is replaced.
                    try db.cachedStatement(sql: "DELETE FROM \"\(cls.table)\" WHERE pk = ? AND tomb = 1")
                        .execute(arguments: [identity.primaryKeyHash])
                    guard db.changesCount > 0 else {
                        throw KeychainError(code: .duplicateItem, message: "The update would give an item the same primary key as another item; nothing was changed.")
                    }
                    // A statement that failed reports its failure again when reused: the retry is a new one.
                    try db.makeStatement(sql: sql).execute(arguments: StatementArguments(args))
                }
                if let newExtended {
                    try KeychainEngine.indexExtendedAttributes(db, item: stored.rowid, hashes: newExtended, replacing: true)
                }
                if let newTrusted {
                    try KeychainEngine.indexTrustedApplications(db, table: cls.table, item: stored.rowid, hashes: newTrusted, replacing: true)
                }
                if observed { changed.withLock { $0.append(ItemChange(kind: .updated, itemClass: cls, attributes: attributes)) } }
            }
            return rows.count
        }
        logger.debug("update", metadata: ["class": "\(cls.rawValue)", "count": "\(count)"])
        changeObservers.notify(changed.withLock { $0 })
    }

    /// Deletes every matching item (Apple's `SecItemDelete`), leaving tombstones for synchronizable ones.
    @discardableResult
    package func delete(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> Int {
        let cls = q.itemClass
        if q.hasMatchKeys { throw .param("SecItemDelete deletes every match: its query cannot contain kSecMatch… keys, and kSecMatchLimit only as kSecMatchLimitAll.") }
        try refuseTokenGroupWrite(q)
        if cls == .identity {
            // Deleting an identity deletes its certificate, then its key (Apple's "explode").
            var all = q
            all.limit = .all
            let identities = try findStored(all, caller: caller)
            for identity in identities {
                for (itemClass, uuid) in [(ItemClass.certificate, identity.uuid), (.key, identity.identityKey?.uuid)] {
                    guard let uuid else { continue }
                    var one = ItemQuery(itemClass: itemClass)
                    one.sync = .any
                    one.persistentRef = PersistentReference(itemClass: itemClass, uuid: uuid)
                    do {
                        _ = try delete(one, caller: caller)
                    } catch  where error.code == .itemNotFound {
                        // Already gone (another identity shared this key).
                    }
                }
            }
            return identities.count
        }
        let groups = try visibleGroups(q, caller: caller)
        let observed = changeObservers.isObserved
        let deleted = Mutex<[ItemChange]>([])
        let count = try write { db in
            let rows = try matchingRows(db, q, groups: groups, includeSecret: false, limit: nil, damaged: .skipUnlessNoneIntact)
            guard !rows.isEmpty else { throw KeychainError.notFound() }
            if observed { deleted.withLock { $0 = rows.map { ItemChange(kind: .deleted, itemClass: cls, attributes: $0.1.attributes) } } }
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
        changeObservers.notify(deleted.withLock { $0 })
        return count
    }
}
