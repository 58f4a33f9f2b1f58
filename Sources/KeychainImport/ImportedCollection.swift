import Foundation
import KeychainCore

/// What one file (or `pass` store) of another password store holds, read into the form the keychain's Secret
/// Service collections take: a collection's label, whether it is the source's default, its dates, and its items
/// (label, attributes, secret, content type, dates). ``ImportPlan`` sends them to ``SecretStore/importItems(_:)`` in
/// batches; importing the same file again adds nothing (an item with the same attributes and secret is skipped).
package struct ImportedCollection: Sendable, Hashable {
    /// The label of the collection the items go to (made when missing), unless ``isDefault``.
    package var label: String
    /// Whether the items go to the keychain's default collection (gnome-keyring's login keyring, KWallet's
    /// `kdewallet`).
    package var isDefault: Bool
    /// The source's dates, given to the collection when it is made.
    package var dates: ItemDates?
    /// The items.
    package var items: [SecretServiceImportItem]
    /// What the source holds that was not imported, each said in one line (a KeePass attachment, a value too
    /// long to be an attribute): shown to the person, never dropped silently.
    package var notImported: [String]

    /// A collection with these fields.
    package init(label: String, isDefault: Bool = false, dates: ItemDates? = nil, items: [SecretServiceImportItem] = [], notImported: [String] = []) {
        self.label = label
        self.isDefault = isDefault
        self.dates = dates
        self.items = items
        self.notImported = notImported
    }
}
