import Foundation
import KeychainCore

extension KeychainStore {
    /// A backup of the whole keychain, and what it holds.
    public struct Backup: Sendable {
        /// The backup file's bytes, sealed under the backup password.
        public let data: Data
        /// How many items it holds.
        public let itemCount: Int
        /// How many of those are ThisDeviceOnly items, restorable only on this machine.
        public let thisDeviceOnlyCount: Int
        /// How many WhenPasscodeSetThisDeviceOnly items were left out (they are never backed up).
        public let skippedPasscodeOnlyCount: Int
    }

    /// What a restore did.
    public struct RestoreResult: Sendable, Hashable {
        /// Items the keychain did not have.
        public let added: Int
        /// Items replaced because the backup's copy was newer.
        public let replaced: Int
        /// Items kept because the keychain's copy was as new or newer.
        public let keptNewer: Int
        /// ThisDeviceOnly items skipped because the backup was made on another machine.
        public let skippedFromOtherDevice: Int
    }

    /// Backs up every item (every access group) into one file sealed under `password`.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/interactionNotAllowed` while the keychain is locked.
    public func backup(password: String) throws(KeychainError) -> Backup {
        let (data, summary) = try connection.backup(password: password)
        return Backup(
            data: data, itemCount: summary.items, thisDeviceOnlyCount: summary.thisDeviceOnly,
            skippedPasscodeOnlyCount: summary.skippedPasscodeOnly)
    }

    /// Merges a backup into the keychain: for each item, the newer copy wins.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/authFailed` for a wrong password or a damaged backup,
    ///   and nothing is changed.
    public func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreResult {
        let s = try connection.restore(backup, password: password)
        return RestoreResult(added: s.added, replaced: s.replaced, keptNewer: s.keptNewer, skippedFromOtherDevice: s.skippedOtherDevice)
    }
}
