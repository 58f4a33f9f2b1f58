import Foundation
import KeychainCore

/// Sends ``ImportedCollection``s to the keychain in batches of the size one keychaind request carries
/// (``SecretServiceImportBatcher``), and adds up what was done.
package enum ImportWriter {
    /// What an import did.
    package struct Report: Sendable, Hashable {
        /// Items added, skipped (already there) and refused (over a bound).
        package var summary = SecretServiceImportSummary()
        /// Collections read.
        package var collections = 0
        /// What the sources hold that was not imported (``ImportedCollection/notImported``), prefixed by the source.
        package var notImported: [String] = []

        /// An empty report.
        package init() {}
    }

    /// Writes `collection` with `write` (one call per batch), calling `progress` after each batch with the items
    /// done so far. Batches written before a failure stay written; an import run again skips them.
    package static func write(
        _ collection: ImportedCollection, into report: inout Report,
        write: (SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary,
        progress: (Int) -> Void = { _ in }
    ) throws(KeychainError) {
        report.collections += 1
        report.notImported += collection.notImported.map { "\(collection.label): \($0)" }
        var batcher = SecretServiceImportBatcher()
        var done = 0
        func send(_ items: [SecretServiceImportItem]) throws(KeychainError) {
            report.summary =
                report.summary
                + (try write(SecretServiceImportBatch(collectionLabel: collection.label, isDefault: collection.isDefault, collectionDates: collection.dates, items: items)))
            done += items.count
            progress(done)
        }
        for item in collection.items {
            if let full = batcher.add(item) { try send(full) }
        }
        // The last batch; an empty collection is still sent (with no items), so that it is made as in the source.
        try send(batcher.take())
    }
}
