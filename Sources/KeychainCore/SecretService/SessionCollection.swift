import Foundation
import Synchronization

/// The `session` collection: items kept in keychaind's memory only (never written to disk), gone when keychaind
/// stops, as gnome-keyring's. Clients reach it at `/org/freedesktop/secrets/collection/session` or through the
/// `session` alias.
package final class SessionCollection: Sendable {
    /// Its identifier and alias.
    static let id = "session"
    /// Its access group (who may reach it is decided as for any collection of unregistered programs).
    static let group = SecretStore.groupPrefix + id
    /// The most items it holds, and the most secret bytes all together.
    static let maximumItems = 10_000
    static let maximumBytes = 64 << 20

    struct Entry: Sendable {
        var item: SecretItem
        var secret: Data
        var contentType: String
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// When it came to be (keychaind's start).
    let created = Date()
    /// Told of every change.
    private let observers = Mutex<[@Sendable (ItemChange.Kind, SecretItem) -> Void]>([])

    var collection: SecretCollection {
        SecretCollection(id: Self.id, label: "Session", group: Self.group, created: created, modified: created)
    }

    /// Calls `observer` after each change of an item (the provider reports them on the bus).
    package func observe(_ observer: @escaping @Sendable (ItemChange.Kind, SecretItem) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    private func tell(_ kind: ItemChange.Kind, _ item: SecretItem) {
        for observer in observers.withLock({ $0 }) { observer(kind, item) }
    }

    func items(matching: [String: String]) -> [SecretItem] {
        entries.withLock { $0.values.map(\.item) }.filter { item in matching.allSatisfy { item.attributes[$0.key] == $0.value } }
            .sorted { $0.id < $1.id }
    }

    func item(_ id: String) -> SecretItem? { entries.withLock { $0[id]?.item } }

    func secret(_ id: String) throws(KeychainError) -> (value: Data, contentType: String) {
        guard let entry = entries.withLock({ $0[id] }) else { throw KeychainError(code: .itemNotFound, message: "The item is gone.") }
        return (entry.secret, entry.contentType)
    }

    func create(
        id: String, label: String, attributes: [String: String], secret: Data, contentType: String,
        replace: Bool
    ) throws(KeychainError) -> (SecretItem, created: Bool) {
        let now = Date()
        let result: Result<(SecretItem, Bool), KeychainError> = entries.withLock { entries in
            if replace, let existing = entries.values.first(where: { $0.item.attributes == attributes }) {
                var entry = existing
                entry.item.label = label
                entry.item.modified = now
                entry.secret = secret
                entry.contentType = contentType
                entries[entry.item.id] = entry
                return .success((entry.item, false))
            }
            let bytes = entries.values.reduce(0) { $0 + $1.secret.count }
            guard entries.count < Self.maximumItems, bytes + secret.count <= Self.maximumBytes else {
                return .failure(
                    KeychainError(
                        code: .invalidParameter,
                        message: "The session collection holds at most \(Self.maximumItems) items and \(Self.maximumBytes >> 20) MiB of secrets. Delete some, or store them in the login collection."))
            }
            let item = SecretItem(collection: Self.id, id: id, label: label, attributes: attributes, created: now, modified: now)
            entries[id] = Entry(item: item, secret: secret, contentType: contentType)
            return .success((item, true))
        }
        let (item, created) = try result.get()
        tell(created ? .added : .updated, item)
        return (item, created)
    }

    func update(_ id: String, _ change: (inout Entry) -> Void) throws(KeychainError) {
        let updated: SecretItem? = entries.withLock { entries in
            guard var entry = entries[id] else { return nil }
            change(&entry)
            entry.item.modified = Date()
            entries[id] = entry
            return entry.item
        }
        guard let updated else { throw KeychainError(code: .itemNotFound, message: "The item is gone.") }
        tell(.updated, updated)
    }

    func delete(_ id: String) throws(KeychainError) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: id) }) else {
            throw KeychainError(code: .itemNotFound, message: "The item is gone.")
        }
        tell(.deleted, entry.item)
    }

    /// Empties it (what deleting the collection does: it exists for as long as keychaind runs).
    func removeAll() -> [SecretItem] {
        let removed = entries.withLock { entries in
            defer { entries.removeAll() }
            return Array(entries.values.map(\.item))
        }
        for item in removed { tell(.deleted, item) }
        return removed
    }
}
