import Foundation
import KeychainCore

/// What stopped an import: the source could not be read, or the keychain refused a batch.
package enum SecretServiceImportFailure: Error, Sendable {
    /// Reading the source provider failed.
    case source(SecretServiceImportError)
    /// The keychain refused a batch (locked, not writable, keychaind refused the caller).
    case keychain(KeychainError)
}

/// What an import did, for its summary line.
package struct SecretServiceImportReport: Sendable, Hashable {
    /// Items added, skipped as already present, and failed (could not be read, or refused by the keychain).
    package var summary = SecretServiceImportSummary()
    /// The collections items were read from (empty ones are not counted, and not made in the keychain).
    package var collections = 0
    /// The labels of the collections left out because they stayed locked (the unlock prompt was dismissed).
    package var lockedCollections: [String] = []
    /// Whether secrets travelled in the clear (the provider does not do `dh-ietf1024-sha256-aes128-cbc-pkcs7`).
    package var plain = false

    /// An empty report.
    package init() {}
}

/// `security import-secret-service`'s work: reads every item of every collection of the Secret Service provider
/// at a ``SecretServiceSource`` and hands them, in the batches ``SecretServiceImportBatcher`` makes, to a writer (the keychain's ``SecretStore/importItems(_:)``, in this process or
/// through keychaind).
package enum SecretServiceImporter {
    /// The most items whose secrets are asked for in one `GetSecrets`.
    package static let itemsPerRead = 25

    /// Where an import is, for a progress line.
    package struct Progress: Sendable, Hashable {
        /// Items read and written so far.
        package var done: Int
        /// Items to import in all.
        package var total: Int
        /// The label of the collection being read.
        package var collection: String
    }

    /// Imports everything `source` provides.
    ///
    /// - Parameters:
    ///   - source: The provider to read, checked (``SecretServiceSource/refuseKeychaind()``) and with a session
    ///     opened here.
    ///   - progress: Called after each batch.
    ///   - write: Adds one batch to the keychain.
    /// - Returns: What was done.
    /// - Throws: ``SecretServiceImportFailure``; batches written before stay written (an import run again skips
    ///   them).
    package static func run(
        from source: SecretServiceSource, progress: (Progress) -> Void,
        write: (SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary
    ) throws(SecretServiceImportFailure) -> SecretServiceImportReport {
        var report = SecretServiceImportReport()
        var plan: [(collection: SecretServiceSourceCollection, items: [String])] = []
        do {
            try source.refuseKeychaind()
            try source.openSession()
            report.plain = source.isPlain
            for collection in try source.collections() {
                if collection.locked, try !source.unlock(collection) {
                    report.lockedCollections.append(collection.label)
                    continue
                }
                let items = try source.itemPaths(of: collection)
                if !items.isEmpty { plan.append((collection, items)) }
            }
        } catch {
            throw .source(error)
        }
        defer { source.closeSession() }
        let total = plan.reduce(0) { $0 + $1.items.count }
        var done = 0
        for (collection, paths) in plan {
            report.collections += 1
            var batcher = SecretServiceImportBatcher()
            func send(_ items: [SecretServiceImportItem]) throws(SecretServiceImportFailure) {
                guard !items.isEmpty else { return }
                let batch = SecretServiceImportBatch(
                    collectionLabel: collection.label, isDefault: collection.isDefault,
                    collectionDates: collection.dates, items: items)
                do {
                    report.summary = report.summary + (try write(batch))
                } catch {
                    throw .keychain(error)
                }
                done += items.count
                progress(Progress(done: done, total: total, collection: collection.label))
            }
            var start = 0
            while start < paths.count {
                let chunk = Array(paths[start..<min(start + itemsPerRead, paths.count)])
                start += chunk.count
                let read: (items: [SecretServiceImportItem], failed: Int)
                do {
                    read = try source.readItems(chunk)
                } catch {
                    throw .source(error)
                }
                report.summary.failed += read.failed
                done += read.failed
                for item in read.items {
                    if let full = batcher.add(item) { try send(full) }
                }
            }
            try send(batcher.take())
        }
        return report
    }
}
