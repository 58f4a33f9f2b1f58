import KeychainClient
import KeychainCore

extension KeychainStore {
    /// What ``verify()`` found: how many stored items were read, and which could not be.
    public struct VerifyReport: Sendable, Hashable {
        /// A stored item that cannot be read (its contents are never shown).
        public struct DamagedItem: Sendable, Hashable {
            /// The item's class.
            public let itemClass: KeychainItem.Class
            /// The item's row in its class's table.
            public let row: Int64
            /// What is wrong with it, in words.
            public let problem: String
        }

        /// Items read, damaged ones included.
        public let checked: Int
        /// The items that cannot be read; empty when every item is whole.
        public let damaged: [DamagedItem]
    }

    /// Reads every stored item and reports the damaged ones: malformed rows and attributes that fail
    /// authentication (a damaged or altered file). Nothing is changed; secrets are not opened, so a locked
    /// keychain can be checked. Through keychaind this is for the `security` tool installed beside it, after the
    /// passcode when one is set.
    ///
    /// A search that meets a damaged item fails with `KeychainStatus/decode` (a search for all matches skips it
    /// and logs how many it skipped), so a damaged item is reported, never silently lost.
    public func verify() throws(KeychainError) -> VerifyReport {
        let report = try connection.verify()
        return VerifyReport(checked: report.checked, damaged: report.damaged.map {
            VerifyReport.DamagedItem(itemClass: KeychainItem.Class(rawValue: $0.itemClass.rawValue) ?? .genericPassword, row: $0.rowid, problem: $0.problem)
        })
    }
}
