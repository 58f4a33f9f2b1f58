import Foundation

/// An item's creation and modification dates, kept as they were when an item made elsewhere is imported
/// (``KeychainEngine/add(_:caller:keepingDates:)``).
package struct ItemDates: Sendable, Hashable {
    /// When the item was created.
    package var created: Date
    /// When the item was last modified.
    package var modified: Date

    /// Dates `created` and `modified`.
    package init(created: Date, modified: Date) {
        self.created = created
        self.modified = modified
    }

    /// The earliest date kept: 1970-01-01, the Secret Service's epoch (its dates are unsigned seconds since then).
    package static let earliest = Date(timeIntervalSince1970: 0)
    /// The latest date kept: the start of the year 10000.
    package static let latest = Date(timeIntervalSince1970: 253_402_300_800)

    /// Whether both dates are between ``earliest`` and ``latest`` (a provider may say anything).
    package var isPlausible: Bool {
        (Self.earliest...Self.latest).contains(created) && (Self.earliest...Self.latest).contains(modified)
    }
}

/// One item read from another Secret Service provider (gnome-keyring, KeePassXC), to be added to a collection of
/// ours by ``SecretStore/importItems(_:)``.
package struct SecretServiceImportItem: Sendable, Hashable {
    /// Its label.
    package var label: String
    /// Its attributes, as the provider gave them.
    package var attributes: [String: String]
    /// Its secret.
    package var secret: Data
    /// The secret's content type (`text/plain`).
    package var contentType: String
    /// When it was created and last modified in the provider.
    package var dates: ItemDates

    /// An item with these fields.
    package init(label: String, attributes: [String: String], secret: Data, contentType: String, dates: ItemDates) {
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.contentType = contentType
        self.dates = dates
    }

    /// The largest secret imported: 12 MiB, so that an item with its label and attributes always fits in one
    /// keychaind message (at most 16 MiB).
    package static let maximumSecretLength = 12 << 20
    /// The longest label or content type imported, in UTF-8 bytes.
    package static let maximumLabelLength = 16_384

    /// About how many bytes this item takes in a keychaind message (to fill requests up to a budget).
    package var approximateSize: Int {
        64 + label.utf8.count + contentType.utf8.count + secret.count
            + attributes.reduce(0) { $0 + 8 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// Checks the bounds: the secret, label and content type, and the attributes as a keychain item takes them.
    package func validate() throws(KeychainError) {
        guard secret.count <= Self.maximumSecretLength else {
            throw .param("The secret is \(secret.count) bytes; at most \(Self.maximumSecretLength) are imported.")
        }
        guard label.utf8.count <= Self.maximumLabelLength, contentType.utf8.count <= Self.maximumLabelLength else {
            throw .param("The label or content type is longer than \(Self.maximumLabelLength) bytes.")
        }
        guard dates.isPlausible else {
            throw .param("The creation or modification date is before 1970 or after the year 9999.")
        }
        try ExtendedAttributes(attributes).validate()
    }
}

/// Items of one collection of another Secret Service provider: where they go and what they are. The unit of
/// ``SecretStore/importItems(_:)``, sent to keychaind in one request (`importSecretServiceItems`).
package struct SecretServiceImportBatch: Sendable, Hashable {
    /// The source collection's label: the items go to our collection with this label, made when missing.
    package var collectionLabel: String
    /// Whether the source collection is its default one (the `default` alias names it, or it is `login`): then the
    /// items go to our default collection, whatever its label.
    package var isDefault: Bool
    /// The source collection's dates, given to our collection when it is made for these items.
    package var collectionDates: ItemDates?
    /// The items.
    package var items: [SecretServiceImportItem]

    /// A batch with these fields.
    package init(collectionLabel: String, isDefault: Bool, collectionDates: ItemDates?, items: [SecretServiceImportItem]) {
        self.collectionLabel = collectionLabel
        self.isDefault = isDefault
        self.collectionDates = collectionDates
        self.items = items
    }

    /// The most items in one batch.
    package static let maximumItems = 1_000

    /// Checks what does not depend on the items (each item is checked by itself when added, so that one bad
    /// item does not keep the others out).
    package func validate() throws(KeychainError) {
        guard items.count <= Self.maximumItems else {
            throw .param("An import request carries at most \(Self.maximumItems) items; this one has \(items.count).")
        }
        guard collectionLabel.utf8.count <= SecretServiceImportItem.maximumLabelLength else {
            throw .param("The collection's label is longer than \(SecretServiceImportItem.maximumLabelLength) bytes.")
        }
        if let collectionDates, !collectionDates.isPlausible {
            throw .param("The collection's creation or modification date is before 1970 or after the year 9999.")
        }
    }
}

/// Gathers items into batches of the size one keychaind request carries: at most ``itemsPerBatch`` items and about
/// ``bytesPerBatch`` bytes (a keychaind message holds at most 16 MiB; a bigger item goes alone). Both imports use it:
/// from another provider on the bus and from other stores' files.
package struct SecretServiceImportBatcher: Sendable {
    /// The most items in one batch.
    package static let itemsPerBatch = 100
    /// About the most bytes in one batch.
    package static let bytesPerBatch = 12 << 20

    private var pending: [SecretServiceImportItem] = []
    private var bytes = 0

    /// An empty batcher.
    package init() {}

    /// Adds `item`; returns the batch to send first when `item` does not fit in it (nil while it does).
    package mutating func add(_ item: SecretServiceImportItem) -> [SecretServiceImportItem]? {
        var full: [SecretServiceImportItem]?
        if !pending.isEmpty, pending.count >= Self.itemsPerBatch || bytes + item.approximateSize > Self.bytesPerBatch { full = take() }
        pending.append(item)
        bytes += item.approximateSize
        return full
    }

    /// The items gathered since the last batch (empty when none), and a fresh start.
    package mutating func take() -> [SecretServiceImportItem] {
        defer {
            pending = []
            bytes = 0
        }
        return pending
    }
}

/// What ``SecretStore/importItems(_:)`` did with a batch.
package struct SecretServiceImportSummary: Sendable, Hashable {
    /// Items added.
    package var added: Int
    /// Items skipped because the collection already had one with the same attributes and secret.
    package var skipped: Int
    /// Items refused (a bound exceeded, attributes a keychain item cannot carry).
    package var failed: Int

    /// A summary with these counts.
    package init(added: Int = 0, skipped: Int = 0, failed: Int = 0) {
        self.added = added
        self.skipped = skipped
        self.failed = failed
    }

    /// The sum of two summaries.
    package static func + (lhs: Self, rhs: Self) -> Self {
        Self(added: lhs.added + rhs.added, skipped: lhs.skipped + rhs.skipped, failed: lhs.failed + rhs.failed)
    }
}
