import Crypto
import Foundation
import Synchronization

/// A Secret Service collection as stored: its identifier (the last element of its object path), label, the access
/// group its items live in, and its dates.
package struct SecretCollection: Sendable, Hashable {
    /// The identifier in its object path (`login`).
    package var id: String
    /// The label people see.
    package var label: String
    /// The access group of its items (and who may reach it: see ``SecretServiceAccess``).
    package var group: String
    /// When it was created.
    package var created: Date
    /// When its label last changed.
    package var modified: Date

    /// The object path.
    package var path: String { SecretObjectPath.collection(id) }
}

/// A Secret Service item as stored: a generic password of its collection's access group.
package struct SecretItem: Sendable, Hashable {
    /// The collection's identifier.
    package var collection: String
    /// The identifier in its object path.
    package var id: String
    /// The label people see.
    package var label: String
    /// The application's free-form attributes, as given.
    package var attributes: [String: String]
    /// When it was created.
    package var created: Date
    /// When it was last modified.
    package var modified: Date

    /// The object path.
    package var path: String { SecretObjectPath.item(collection, id) }
}

/// The Secret Service's collections, aliases and items, kept as keychain items in the engine.
///
/// - A collection is a generic password in the reserved access group ``metadataGroup``, service `collection`,
///   account its identifier, label its label, and its items' access group as its generic attribute (`gena`).
/// - An alias is one there too: service `alias`, account the alias, generic attribute the collection's identifier.
/// - An item is a generic password in its collection's group: service `secret-service:COLLECTION`, account its
///   identifier (16 hex digits), label its label, free-form attributes ``ExtendedAttributes`` (searched through
///   their blind index), the content type in `xcty` and the secret as the item's data. `security dump-keychain`
///   and the Swift API see it like any other item.
///
/// Every call runs as the engine's unrestricted caller: who may reach which collection is decided before, by
/// ``SecretServiceAccess``.
package struct SecretStore: Sendable {
    /// The access group of collection and alias records; no program is given it.
    package static let metadataGroup = "keychain.secret-service"
    /// The prefix of the access groups of collections created by programs that are not registered.
    package static let groupPrefix = "org.freedesktop.secrets."
    /// The default collection's identifier and label.
    package static let loginID = "login"
    /// The most collections kept.
    package static let maximumCollections = 256

    /// The engine.
    package let engine: KeychainEngine
    /// Where identifiers and secrets made here get their random bytes.
    let random: @Sendable (Int) -> [UInt8]
    /// The collections and aliases as last read, dropped by every change made through a store over this engine.
    /// (Their records are in a group no program is given; only the admin tool, with every group, could change them
    /// otherwise, and a change it makes through item calls is seen after keychaind restarts.)
    private var metadata: MetadataCache { engine.secretServiceMetadata }
    /// The `session` collection, kept in memory; one per engine.
    package var session: SessionCollection { engine.secretServiceSession }

    /// The collections and aliases as last read; one per engine.
    final class MetadataCache: Sendable {
        let state = Mutex<(collections: [SecretCollection]?, aliases: [String: String]?)>((nil, nil))
        func invalidate() { state.withLock { $0 = (nil, nil) } }
    }

    /// The identifiers of the items each search of a collection found, while nothing was written since: a search
    /// by attributes otherwise costs blind-index hashes, several index lookups and decrypting each match, for an
    /// answer that changes only with a write. One per engine. Valid while the engine's write generation and the
    /// database's write-ahead log are as they were when it was filled (the log catches another process writing
    /// the same keychain, which keychaind does not expect); used only while the keychain is unlocked, emptied
    /// when it is not. Keys are SHA-256 digests of the collection and the attributes, never the attributes.
    final class SearchCache: Sendable {
        struct State {
            /// When the entries were valid: the write generation and the log's stamp.
            var validity: (generation: UInt64, log: FileStamp?)?
            /// Item identifiers by search digest.
            var entries: [Data: [String]] = [:]
        }
        let state = Mutex(State())
        /// The most searches kept; past it, the cache starts again.
        static let maximumEntries = 4_096
    }

    /// A store over `engine`.
    package init(engine: KeychainEngine, random: @escaping @Sendable (Int) -> [UInt8] = SecretStore.systemRandom) {
        self.engine = engine
        self.random = random
    }

    /// Random bytes from the kernel.
    package static func systemRandom(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The engine's unrestricted caller, as which every call of the store runs.
    var everything: AccessPolicy { AccessPolicy(groups: [Self.metadataGroup, "*"]) }

    /// A generic password query for `group`, `service` and, when given, `account`.
    func query(group: String, service: String, account: String? = nil) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string(group)
        q.attributes["svce"] = .string(service)
        if let account { q.attributes["acct"] = .string(account) }
        return q
    }

    /// A new collection or alias record: readable while the keychain is locked (labels and identifiers only), so
    /// that a locked collection can still be listed and unlocked.
    private func record(service: String, account: String) -> ItemQuery {
        var q = query(group: Self.metadataGroup, service: service, account: account)
        q.attributes["pdmn"] = .string(ProtectionClass.always.rawValue)
        return q
    }

    /// The service (`svce`) of a collection's items is this prefix and the collection's identifier.
    package static let itemServicePrefix = "secret-service:"

    private static func itemService(_ collection: String) -> String { itemServicePrefix + collection }

    // MARK: Collections

    /// Every collection, the default one (`login`) made first when there is none.
    package func collections() throws(KeychainError) -> [SecretCollection] {
        if let cached = metadata.state.withLock({ $0.collections }) { return cached + [session.collection] }
        var q = query(group: Self.metadataGroup, service: "collection")
        q.limit = .all
        q.returns.attributes = true
        var found: [SecretCollection]
        do {
            found = try engine.find(q, caller: everything).compactMap(Self.collection(from:))
        } catch  where error.code == .itemNotFound {
            found = []
        }
        if found.isEmpty {
            let login = try createCollection(label: "Login", id: Self.loginID, group: Self.groupPrefix + Self.loginID)
            try setAlias("default", to: login.id)
            found = [login]
        }
        let sorted = found.filter { $0.id != SessionCollection.id }.sorted { $0.id < $1.id }
        metadata.state.withLock { $0.collections = sorted }
        return sorted + [session.collection]
    }

    /// The collection named `id`, or nil.
    package func collection(id: String) throws(KeychainError) -> SecretCollection? {
        try collections().first { $0.id == id }
    }

    /// Whether `collection` is the in-memory `session` collection.
    func inMemory(_ collection: SecretCollection) -> Bool { collection.id == SessionCollection.id }

    private static func collection(from item: FoundItem) -> SecretCollection? {
        guard let id = item.attributes["acct"]?.stringValue, let group = item.attributes["gena"]?.stringValue,
            case .date(let created)? = item.attributes["cdat"], case .date(let modified)? = item.attributes["mdat"]
        else { return nil }
        return SecretCollection(
            id: id, label: item.attributes["labl"]?.stringValue ?? id, group: group,
            created: created, modified: modified)
    }

    /// Makes a collection labelled `label` whose items go to `group` (the identifier made from the label, unique,
    /// unless `id` is given).
    /// `dates` are the collection's dates when it is imported from another provider (now otherwise).
    package func createCollection(
        label: String, id: String? = nil, group: String? = nil,
        dates: ItemDates? = nil
    ) throws(KeychainError) -> SecretCollection {
        var existing: Set<String> = []
        if id == nil {
            existing = Set(try collections().map(\.id))
            guard existing.count < Self.maximumCollections else {
                throw KeychainError(code: .invalidParameter, message: "At most \(Self.maximumCollections) collections are kept. Delete one first.")
            }
        }
        var chosen = id ?? SecretObjectPath.element(fromLabel: label, fallback: "collection")
        if id == nil, existing.contains(chosen) || chosen == SessionCollection.id {
            var n = 1
            while existing.contains("\(chosen)_\(n)") { n += 1 }
            chosen = "\(chosen)_\(n)"
        }
        var q = record(service: "collection", account: chosen)
        q.attributes["labl"] = .string(label)
        q.attributes["gena"] = .string(group ?? Self.groupPrefix + chosen)
        metadata.invalidate()
        let item = try engine.add(q, caller: everything, keepingDates: dates)
        metadata.invalidate()
        guard let made = Self.collection(from: item) else {
            throw KeychainError(code: .internal, message: "A new collection's record could not be read back.")
        }
        return made
    }

    /// Relabels collection `id`.
    package func setLabel(_ label: String, ofCollection id: String) throws(KeychainError) {
        guard id != SessionCollection.id else {
            throw KeychainError(code: .invalidParameter, message: "The session collection keeps its label.")
        }
        defer { metadata.invalidate() }
        try engine.update(
            query(group: Self.metadataGroup, service: "collection", account: id),
            attributes: ["labl": .string(label)], sync: nil, data: nil, caller: everything)
    }

    /// Deletes collection `id`, its items, and the aliases that named it; returns the items deleted.
    package func deleteCollection(_ collection: SecretCollection) throws(KeychainError) -> [SecretItem] {
        if inMemory(collection) { return session.removeAll() }
        defer { metadata.invalidate() }
        let items = try self.items(in: collection)
        do {
            var q = query(group: collection.group, service: Self.itemService(collection.id))
            q.limit = .all
            _ = try engine.delete(q, caller: everything)
        } catch  where error.code == .itemNotFound {}
        for (alias, target) in try aliases() where target == collection.id {
            try setAlias(alias, to: nil)
        }
        _ = try engine.delete(query(group: Self.metadataGroup, service: "collection", account: collection.id), caller: everything)
        return items
    }

    // MARK: Aliases

    /// Every alias and the collection it names.
    package func aliases() throws(KeychainError) -> [String: String] {
        if let cached = metadata.state.withLock({ $0.aliases }) { return cached }
        var q = query(group: Self.metadataGroup, service: "alias")
        q.limit = .all
        q.returns.attributes = true
        do {
            var out: [String: String] = [:]
            for item in try engine.find(q, caller: everything) {
                if let alias = item.attributes["acct"]?.stringValue, let target = item.attributes["gena"]?.stringValue {
                    out[alias] = target
                }
            }
            metadata.state.withLock { $0.aliases = out }
            return out
        } catch  where error.code == .itemNotFound {
            return [:]
        }
    }

    /// The collection `alias` names, or nil.
    package func resolve(alias: String) throws(KeychainError) -> String? {
        if alias == SessionCollection.id { return SessionCollection.id }
        if alias == "default" { _ = try collections() }
        return try aliases()[alias]
    }

    /// Points `alias` at collection `id`, or removes it (nil).
    package func setAlias(_ alias: String, to id: String?) throws(KeychainError) {
        defer { metadata.invalidate() }
        let q = query(group: Self.metadataGroup, service: "alias", account: alias)
        do {
            _ = try engine.delete(q, caller: everything)
        } catch  where error.code == .itemNotFound {}
        guard let id else { return }
        var add = record(service: "alias", account: alias)
        add.attributes["gena"] = .string(id)
        _ = try engine.add(add, caller: everything)
    }

    // MARK: Items

    private static func item(from found: FoundItem, collection: String) -> SecretItem? {
        guard let id = found.attributes["acct"]?.stringValue,
            case .date(let created)? = found.attributes["cdat"], case .date(let modified)? = found.attributes["mdat"]
        else { return nil }
        var attributes: [String: String] = [:]
        if case .data(let encoded)? = found.attributes[ExtendedAttributes.code] {
            guard let decoded = try? ExtendedAttributes(encoded: encoded) else { return nil }
            attributes = decoded.values
        }
        return SecretItem(
            collection: collection, id: id, label: found.attributes["labl"]?.stringValue ?? "",
            attributes: attributes, created: created, modified: modified)
    }

    /// The items of `collection` whose attributes include every pair of `matching` (all of them when empty).
    package func items(in collection: SecretCollection, matching: [String: String] = [:]) throws(KeychainError) -> [SecretItem] {
        if inMemory(collection) { return session.items(matching: matching) }
        if let kept = lockedSnapshot(of: collection) { return kept.items(matching: matching) }
        var q = query(group: collection.group, service: Self.itemService(collection.id))
        q.limit = .all
        q.returns.attributes = true
        q.extendedMatch = matching
        do {
            return try engine.find(q, caller: everything).compactMap { Self.item(from: $0, collection: collection.id) }
        } catch  where error.code == .itemNotFound {
            return []
        }
    }

    /// The identifiers of `collection`'s items whose attributes include `matching` (every item for none), as
    /// ``items(in:matching:)`` finds them, answered from ``SearchCache`` when nothing was written since.
    package func itemIDs(in collection: SecretCollection, matching: [String: String]) throws(KeychainError) -> [String] {
        if inMemory(collection) { return session.items(matching: matching).map(\.id) }
        let cache = engine.secretServiceSearches
        let state = engine.lockState
        guard state == .unlocked || state == .noPasscode else {
            cache.state.withLock { $0 = SearchCache.State() }
            return try items(in: collection, matching: matching).map(\.id)
        }
        // Read before searching: a write that ends meanwhile changes it, and the answer is not kept.
        let validity = (generation: engine.writeGeneration, log: FileStamp(path: engine.location.databasePath + "-wal"))
        var key = SHA256()
        key.update(data: Data(collection.id.utf8))
        for (name, value) in matching.sorted(by: { $0.key < $1.key }) {
            for text in [name, value] {
                withUnsafeBytes(of: UInt32(text.utf8.count).bigEndian) { key.update(bufferPointer: $0) }
                key.update(data: Data(text.utf8))
            }
        }
        let digest = Data(key.finalize())
        let cached = cache.state.withLock { state -> [String]? in
            guard let valid = state.validity, valid.generation == validity.generation, valid.log == validity.log else {
                state = SearchCache.State()
                return nil
            }
            return state.entries[digest]
        }
        if let cached { return cached }
        // Copied after the search, in one run of allocations: the strings the search decoded lie scattered among
        // its freed temporaries, and kept in the cache each would pin a page of them (20 MiB for 10,000 items).
        let ids = try items(in: collection, matching: matching).map { String(decoding: Array($0.id.utf8), as: UTF8.self) }
        cache.state.withLock { state in
            if state.validity == nil {
                state.validity = validity
            } else if let valid = state.validity, valid.generation != validity.generation || valid.log != validity.log {
                return
            }
            if state.entries.count >= SearchCache.maximumEntries { state.entries.removeAll() }
            state.entries[digest] = ids
        }
        return ids
    }

    /// Item `id` of `collection`, or nil.
    package func item(_ id: String, in collection: SecretCollection) throws(KeychainError) -> SecretItem? {
        if inMemory(collection) { return session.item(id) }
        if let kept = lockedSnapshot(of: collection) { return kept.item(id) }
        var q = query(group: collection.group, service: Self.itemService(collection.id), account: id)
        q.returns.attributes = true
        do {
            return try engine.find(q, caller: everything).first.flatMap { Self.item(from: $0, collection: collection.id) }
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    /// The secret of item `id` and its content type.
    package func secret(of id: String, in collection: SecretCollection) throws(KeychainError) -> (value: Data, contentType: String) {
        if inMemory(collection) { return try session.secret(id) }
        var q = query(group: collection.group, service: Self.itemService(collection.id), account: id)
        q.returns.data = true
        q.returns.attributes = true
        guard let found = try engine.find(q, caller: everything).first else {
            throw KeychainError(code: .itemNotFound, message: "The item is gone.")
        }
        return (found.data ?? Data(), found.attributes["xcty"]?.stringValue ?? "text/plain")
    }

    /// Adds an item to `collection`, or with `replace`, replaces the secret and label of the item whose attributes
    /// are exactly `attributes` (the spec's CreateItem). Returns the item and whether it was new.
    package func createItem(
        in collection: SecretCollection, label: String, attributes: [String: String],
        secret: Data, contentType: String, replace: Bool
    ) throws(KeychainError) -> (SecretItem, created: Bool) {
        let extended = ExtendedAttributes(attributes)
        try extended.validate()
        if inMemory(collection) {
            let id = random(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
            return try session.create(id: id, label: label, attributes: attributes, secret: secret, contentType: contentType, replace: replace)
        }
        if replace, let existing = try items(in: collection, matching: attributes).first(where: { $0.attributes == attributes }) {
            try engine.update(
                query(group: collection.group, service: Self.itemService(collection.id), account: existing.id),
                attributes: ["labl": .string(label), "xcty": .string(contentType)], sync: nil, data: secret,
                caller: everything)
            return (try item(existing.id, in: collection) ?? existing, false)
        }
        return (try addItem(to: collection, label: label, extended: extended, secret: secret, contentType: contentType), true)
    }

    /// Adds an item with a new identifier; `dates` are kept instead of now when given (an import).
    private func addItem(
        to collection: SecretCollection, label: String, extended: ExtendedAttributes, secret: Data,
        contentType: String, dates: ItemDates? = nil
    ) throws(KeychainError) -> SecretItem {
        let id = random(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        var q = query(group: collection.group, service: Self.itemService(collection.id), account: id)
        q.attributes["labl"] = .string(label)
        q.attributes[ExtendedAttributes.code] = .data(extended.encoded)
        q.attributes["xcty"] = .string(contentType)
        q.valueData = secret
        let found = try engine.add(q, caller: everything, keepingDates: dates)
        guard let made = Self.item(from: found, collection: collection.id) else {
            throw KeychainError(code: .internal, message: "A new item could not be read back.")
        }
        return made
    }

    // MARK: Import

    /// Adds items read from another Secret Service provider (`security import-secret-service`), keeping their
    /// labels, attributes, content types, secrets and dates.
    ///
    /// The items go to our default collection (the one `default` names, `login` unless changed) when the batch
    /// comes from the source's default collection, else to the first of ours labelled like the source's (by
    /// identifier), made with the source's label and dates when there is none. An item the collection already has
    /// with exactly the same attributes and secret is skipped, so importing twice adds nothing. An item that
    /// exceeds a bound or whose attributes a keychain item cannot carry counts as failed and keeps no other out;
    /// any other error (the keychain is locked, the disk is full) stops the batch and is thrown.
    ///
    /// - Parameter batch: The items of one source collection.
    /// - Returns: How many were added, skipped and refused.
    /// - Throws: `KeychainError` from ``SecretServiceImportBatch/validate()`` or the engine.
    package func importItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary {
        try batch.validate()
        let collection = try importTarget(for: batch)
        var summary = SecretServiceImportSummary()
        for record in batch.items {
            do throws(KeychainError) {
                try record.validate()
            } catch {
                summary.failed += 1
                continue
            }
            let candidates = try items(in: collection, matching: record.attributes).filter { $0.attributes == record.attributes }
            var present = false
            for candidate in candidates where try secret(of: candidate.id, in: collection).value == record.secret {
                present = true
                break
            }
            if present {
                summary.skipped += 1
                continue
            }
            _ = try addItem(
                to: collection, label: record.label, extended: ExtendedAttributes(record.attributes),
                secret: record.secret, contentType: record.contentType, dates: record.dates)
            summary.added += 1
        }
        return summary
    }

    /// The collection a batch goes to (see ``importItems(_:)``), made when missing.
    private func importTarget(for batch: SecretServiceImportBatch) throws(KeychainError) -> SecretCollection {
        let all = try collections()
        if batch.isDefault {
            let id = try resolve(alias: "default") ?? Self.loginID
            if let found = all.first(where: { $0.id == id }) { return found }
        }
        if let found = all.first(where: { $0.label == batch.collectionLabel }) { return found }
        return try createCollection(label: batch.collectionLabel, dates: batch.collectionDates)
    }

    /// Changes item `id`'s secret and content type.
    package func setSecret(_ secret: Data, contentType: String, of id: String, in collection: SecretCollection) throws(KeychainError) {
        if inMemory(collection) {
            return try session.update(id) {
                $0.secret = secret; $0.contentType = contentType
            }
        }
        try engine.update(
            query(group: collection.group, service: Self.itemService(collection.id), account: id),
            attributes: ["xcty": .string(contentType)], sync: nil, data: secret, caller: everything)
    }

    /// Changes item `id`'s label.
    package func setLabel(_ label: String, ofItem id: String, in collection: SecretCollection) throws(KeychainError) {
        if inMemory(collection) { return try session.update(id) { $0.item.label = label } }
        try engine.update(
            query(group: collection.group, service: Self.itemService(collection.id), account: id),
            attributes: ["labl": .string(label)], sync: nil, data: nil, caller: everything)
    }

    /// Replaces item `id`'s free-form attributes.
    package func setAttributes(_ attributes: [String: String], ofItem id: String, in collection: SecretCollection) throws(KeychainError) {
        let extended = ExtendedAttributes(attributes)
        try extended.validate()
        if inMemory(collection) { return try session.update(id) { $0.item.attributes = attributes } }
        try engine.update(
            query(group: collection.group, service: Self.itemService(collection.id), account: id),
            attributes: [ExtendedAttributes.code: .data(extended.encoded)], sync: nil, data: nil, caller: everything)
    }

    /// Deletes item `id`.
    package func deleteItem(_ id: String, in collection: SecretCollection) throws(KeychainError) {
        if inMemory(collection) { return try session.delete(id) }
        _ = try engine.delete(query(group: collection.group, service: Self.itemService(collection.id), account: id), caller: everything)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
