import Foundation
import KeychainCore

extension Keychain {
    // MARK: Writing

    /// Stores `value` as the UTF-8 text of the item `key`, adding the item or replacing its value.
    ///
    /// Replacing keeps the item's creation date and applies this keychain's ``label``, ``comment`` and
    /// ``accessibility`` when they are set.
    ///
    /// - Throws: `KeychainError`; for example `KeychainStatus/missingEntitlement` when the access group is
    ///   not the store's.
    public func set(_ value: String, for key: String) throws(KeychainError) {
        try set(Data(value.utf8), for: key)
    }

    /// Stores `value` as the secret of the item `key`, adding the item or replacing its value.
    ///
    /// Replacing keeps the item's creation date and applies this keychain's ``label``, ``comment`` and
    /// ``accessibility`` when they are set. When the key already has items in several of the store's access
    /// groups, the one ``data(for:)`` reads is the one replaced.
    ///
    /// - Throws: `KeychainError`; for example `KeychainStatus/missingEntitlement` when the access group is
    ///   not the store's.
    public func set(_ value: Data, for key: String) throws(KeychainError) {
        let store = try resolvedStore()
        var lastError = KeychainError(code: .internal, message: "The item could not be written.")
        // Another thread or process may add or remove the same item between the lookup and the write; the
        // engine reports that as a duplicate or a missing item, and the write is tried again.
        for _ in 0..<4 {
            if let existing = try findItem(key, in: store, withData: false) {
                var query = itemQuery(for: key)
                if let group = existing.attributes["agrp"] { query.attributes["agrp"] = group }
                do {
                    try store.connection.update(query, with: ItemChanges(attributes: writtenAttributes, data: value))
                    return
                } catch  where error.code == .itemNotFound {
                    lastError = error
                }
            } else {
                var query = itemQuery(for: key)
                query.attributes.merge(writtenAttributes) { _, new in new }
                query.valueData = value
                do {
                    _ = try store.connection.add(query)
                    return
                } catch  where error.code == .duplicateItem {
                    lastError = error
                }
            }
        }
        throw lastError
    }

    /// Stores `value`, encoded as JSON, as the secret of the item `key`, adding the item or replacing its value.
    ///
    /// Read it back with ``value(_:for:)``. Strings and `Data` have their own overloads, which store them
    /// unencoded.
    ///
    /// - Throws: `KeychainError` with `KeychainError/Code/invalidParameter` when `value` cannot be encoded,
    ///   or any error of ``set(_:for:)-(Data,_)``.
    public func set<Value: Encodable>(_ value: Value, for key: String) throws(KeychainError) {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(value)
        } catch {
            throw KeychainError(
                code: .invalidParameter,
                message: "The value (a \(Value.self)) cannot be encoded as JSON. Check its Encodable conformance; non-finite floating-point numbers, for example, cannot be encoded.",
                cause: CodingFailure(error))
        }
        try set(data, for: key)
    }

    // MARK: Reading

    /// The secret of the item `key`, or `nil` when there is no such item.
    ///
    /// An item that has no secret (one added through Keychain Services without `kSecValueData`) reads as
    /// empty data.
    public func data(for key: String) throws(KeychainError) -> Data? {
        let store = try resolvedStore()
        guard let item = try findItem(key, in: store, withData: true) else { return nil }
        return item.data ?? Data()
    }

    /// The secret of the item `key` as UTF-8 text, or `nil` when there is no such item.
    ///
    /// - Throws: `KeychainError` with code `KeychainError/Code/corruptData` and status
    ///   `KeychainStatus/decode` (-26275) when the secret is not UTF-8 text; read such secrets with
    ///   ``data(for:)``.
    public func string(for key: String) throws(KeychainError) -> String? {
        guard let data = try data(for: key) else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw KeychainError(code: .corruptData, status: .decode, message: "The stored value is not UTF-8 text; read it with data(for:).")
        }
        return text
    }

    /// The secret of the item `key`, decoded from JSON as a `Value`, or `nil` when there is no such item.
    ///
    /// Reads what ``set(_:for:)-(Value,_)`` stored.
    ///
    /// - Throws: `KeychainError` with code `KeychainError/Code/corruptData` and status
    ///   `KeychainStatus/decode` (-26275) when the secret is not the JSON encoding of a `Value`.
    public func value<Value: Decodable>(_ type: Value.Type = Value.self, for key: String) throws(KeychainError) -> Value? {
        guard let data = try data(for: key) else { return nil }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw KeychainError(
                code: .corruptData, status: .decode, message: "The stored value is not the JSON encoding of a \(Value.self); read it with data(for:), or store it again.", cause: CodingFailure(error))
        }
    }

    /// The secret of the item `key` as UTF-8 text, or `nil` when there is no such item, the secret is not text,
    /// or the keychain fails.
    ///
    /// A subscript cannot throw, so this one turns every error into `nil`; use ``string(for:)`` to tell them
    /// apart.
    public subscript(key: String) -> String? {
        try? string(for: key)
    }

    /// The secret of the item `key`, or `nil` when there is no such item or the keychain fails.
    ///
    /// A subscript cannot throw, so this one turns every error into `nil`; use ``data(for:)`` to tell them
    /// apart.
    public subscript(data key: String) -> Data? {
        try? data(for: key)
    }

    /// Whether the item `key` exists. Its secret is not decrypted.
    public func contains(_ key: String) throws(KeychainError) -> Bool {
        try findItem(key, in: resolvedStore(), withData: false) != nil
    }

    /// The keys (accounts) of every item this keychain sees, without duplicates, sorted.
    ///
    /// An account stored as bytes that are not UTF-8 text (through Keychain Services, or `security -a`) is no
    /// `String` key and is not listed; `KeychainStore`'s item queries (``KeychainQuery`` with a
    /// ``KeychainItem/Value/data(_:)`` account) find and match such items.
    public func allKeys() throws(KeychainError) -> [String] {
        let store = try resolvedStore()
        var query = baseQuery()
        query.limit = .all
        query.returns.attributes = true
        let items: [FoundItem]
        do {
            items = try store.connection.find(query)
        } catch  where error.code == .itemNotFound {
            return []
        }
        return Set(items.compactMap { $0.attributes["acct"]?.stringValue }).sorted()
    }

    /// The attributes of the item `key`, or `nil` when there is no such item. Its secret is not decrypted.
    public func attributes(for key: String) throws(KeychainError) -> Attributes? {
        try findItem(key, in: resolvedStore(), withData: false).map(Attributes.init)
    }

    // MARK: Removing

    /// Removes the item `key`; does nothing when there is none.
    ///
    /// Without an ``accessGroup``, the key's items in every group of the store are removed.
    public func remove(_ key: String) throws(KeychainError) {
        try delete(itemQuery(for: key))
    }

    /// Removes every item this keychain sees: all keys of its service (or server), in its access group (or all
    /// the store's groups), local or synchronizable as configured. Does nothing when there are none.
    public func removeAll() throws(KeychainError) {
        try delete(baseQuery())
    }

    // MARK: Queries

    func resolvedStore() throws(KeychainError) -> KeychainStore {
        if let configurationError { throw configurationError }
        if let store { return store }
        return try KeychainStore.default
    }

    /// The query matching every item of this keychain.
    func baseQuery() -> ItemQuery {
        var query: ItemQuery
        if let server {
            query = ItemQuery(itemClass: .internetPassword)
            query.attributes["srvr"] = .string(server)
            query.attributes["ptcl"] = self.protocol.map { .string($0.rawValue) } ?? .int(0)
            query.attributes["port"] = .int(Int64(port ?? 0))
            query.attributes["path"] = .string(path ?? "")
            query.attributes["atyp"] = .string((authenticationType ?? .default).rawValue)
            query.attributes["sdmn"] = .string(securityDomain ?? "")
        } else {
            query = ItemQuery(itemClass: .genericPassword)
            query.attributes["svce"] = .string(service ?? "")
        }
        if let accessGroup { query.attributes["agrp"] = .string(accessGroup) }
        query.sync = isSynchronizable ? .synchronizable : .local
        query.authentication = authentication.options
        return query
    }

    /// The query matching the item `key`.
    func itemQuery(for key: String) -> ItemQuery {
        var query = baseQuery()
        query.attributes["acct"] = .string(key)
        return query
    }

    /// The attributes a write sets (add) or changes (update).
    var writtenAttributes: [String: AttributeValue] {
        var attributes: [String: AttributeValue] = [:]
        if let label { attributes["labl"] = .string(label) }
        if let comment { attributes["icmt"] = .string(comment) }
        if let trustedApplications { attributes[TrustedApplications.code] = KeychainTrustedApplication.attributeValue(trustedApplications) }
        if let accessControl {
            // The access control carries the accessibility (Apple refuses both).
            attributes["accc"] = accessControl.attributeValue
            attributes["pdmn"] = .string(accessControl.control.protection.rawValue)
        } else if let accessibility {
            attributes["pdmn"] = .string(accessibility.protectionClass.rawValue)
        }
        return attributes
    }

    func findItem(_ key: String, in store: KeychainStore, withData: Bool) throws(KeychainError) -> FoundItem? {
        var query = itemQuery(for: key)
        query.limit = .one
        query.returns.data = withData
        query.returns.attributes = true
        do {
            return try store.connection.find(query).first
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    func delete(_ query: ItemQuery) throws(KeychainError) {
        let store = try resolvedStore()
        do {
            try store.connection.delete(query)
        } catch  where error.code == .itemNotFound {
            return
        }
    }
}

/// Why a value could not be encoded or decoded as JSON, without any of the value's content (which may be
/// secret).
struct CodingFailure: Error, Sendable, CustomStringConvertible {
    let description: String

    init(_ error: any Error) {
        if let error = error as? DecodingError {
            switch error {
            case .typeMismatch(let type, _): description = "type mismatch: expected \(type)"
            case .valueNotFound(let type, _): description = "missing value of type \(type)"
            case .keyNotFound(let key, _): description = "missing key '\(key.stringValue)'"
            case .dataCorrupted: description = "not valid JSON"
            @unknown default: description = "DecodingError"
            }
        } else if error is EncodingError {
            description = "invalid value for JSON"
        } else {
            description = String(describing: type(of: error))
        }
    }
}
