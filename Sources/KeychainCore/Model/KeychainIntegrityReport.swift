import Foundation

/// What checking every stored item found (`security verify-keychain`): how many items are intact, how many
/// could not be checked because their class is locked, and each damaged one. Never holds an item's attributes
/// or secret.
package struct KeychainIntegrityReport: Sendable, Hashable {
    /// Items whose row, sealed attributes, search index and sealed secret all checked out.
    package var verified: Int
    /// Items of a locked protection class, which cannot be opened until the keychain is unlocked.
    package var notChecked: Int
    /// The damaged items, in class and row order.
    package var damaged: [DamagedItem]

    package init(verified: Int = 0, notChecked: Int = 0, damaged: [DamagedItem] = []) {
        self.verified = verified
        self.notChecked = notChecked
        self.damaged = damaged
    }
}

/// One damaged item: where it is stored and what is wrong with it, never its contents.
package struct DamagedItem: Sendable, Hashable {
    /// The item's class (its table).
    package var itemClass: ItemClass
    /// The item's SQLite rowid in its table.
    package var rowid: Int64
    /// The item's persistent reference, when its UUID column is readable.
    package var persistentRef: PersistentReference?
    /// What is wrong, in words (for example "its sealed attributes fail authentication").
    package var problem: String

    package init(itemClass: ItemClass, rowid: Int64, persistentRef: PersistentReference?, problem: String) {
        self.itemClass = itemClass
        self.rowid = rowid
        self.persistentRef = persistentRef
        self.problem = problem
    }
}
