import Foundation
import KeychainCore

/// Sends ``ImportedCollection``s to the keychain in batches of the size one keychaind request carries, and adds up
/// what was done.
package enum ImportWriter {
    /// The most items in one batch.
    package static let itemsPerBatch = 100
    /// About the most bytes in one batch (a keychaind message holds at most 16 MiB); a bigger item goes alone.
    package static let bytesPerBatch = 12 << 20

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
        var batch: [SecretServiceImportItem] = []
        var bytes = 0
        var done = 0
        func flush() throws(KeychainError) {
            // An empty collection is still made, as in the source.
            guard !batch.isEmpty || done == 0 else { return }
            report.summary =
                report.summary
                + (try write(SecretServiceImportBatch(collectionLabel: collection.label, isDefault: collection.isDefault, collectionDates: collection.dates, items: batch)))
            done += batch.count
            progress(done)
            batch.removeAll(keepingCapacity: true)
            bytes = 0
        }
        for item in collection.items {
            if !batch.isEmpty, batch.count >= itemsPerBatch || bytes + item.approximateSize > bytesPerBatch { try flush() }
            batch.append(item)
            bytes += item.approximateSize
        }
        if !batch.isEmpty || collection.items.isEmpty { try flush() }
    }
}
