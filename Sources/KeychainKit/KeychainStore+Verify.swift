import Foundation
import KeychainCore

extension KeychainStore {
    /// What ``verify()`` found: how many items are intact, how many could not be checked, and each damaged one.
    public struct Verification: Sendable, Hashable {
        /// Items whose stored row, sealed attributes, search index and sealed secret all checked out.
        public let verifiedCount: Int
        /// Items of a locked protection class, which can be checked once the keychain is unlocked.
        public let notCheckedCount: Int
        /// The damaged items, in class and row order. Empty when the keychain is intact.
        public let damagedItems: [DamagedItem]

        /// Whether no item is damaged.
        public var isIntact: Bool { damagedItems.isEmpty }
    }

    /// One damaged item: where it is stored and what is wrong with it. It never carries the item's attributes
    /// or secret (a damaged item's cannot be trusted anyway).
    public struct DamagedItem: Sendable, Hashable {
        /// The item's class.
        public let itemClass: KeychainItem.Class
        /// The item's row number in its class's table of `keychain-2.db`.
        public let rowID: Int64
        /// The item's persistent reference (``KeychainItem/persistentReference``), when its stored UUID is
        /// readable; a query with it finds the item once it is repaired.
        public let persistentReference: Data?
        /// What is wrong, in words: a malformed column, sealed attributes or a secret that fail authentication
        /// (a flipped byte, a truncated blob, a row changed by hand), or a search index that no longer matches.
        public let problem: String
    }

    /// Checks every stored item (every access group, deleted synchronizable items' tombstones included) for
    /// damage, changing nothing.
    ///
    /// A query that meets a damaged item fails with `KeychainStatus/decode` (`errSecDecode`) rather than
    /// pretending the item is not there; this lists such items so they can be restored from a backup
    /// (``restore(_:password:)`` replaces a damaged item with the backup's copy). Through keychaind only its
    /// admin tool may ask.
    ///
    /// - Throws: `KeychainError` when the keychain cannot be read, or keychaind refuses the caller.
    public func verify() throws(KeychainError) -> Verification {
        let report = try connection.verify()
        return Verification(
            verifiedCount: report.verified, notCheckedCount: report.notChecked,
            damagedItems: report.damaged.map { item in
                DamagedItem(
                    itemClass: KeychainItem.Class(rawValue: item.itemClass.rawValue) ?? .genericPassword,
                    rowID: item.rowid, persistentReference: item.persistentRef?.data, problem: item.problem)
            })
    }
}
