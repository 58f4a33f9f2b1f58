import Foundation
import KeychainCore

extension KeychainStore {
    /// Adds items read from another Secret Service provider to the keychain's Secret Service collection the batch
    /// names (`security import-secret-service`): keychaind's when it serves the keychain (only its admin tool may
    /// import), else the engine opened in this process. Items the collection already has with the same attributes
    /// and secret are skipped.
    ///
    /// - Parameter batch: The items of one source collection, and where they go.
    /// - Returns: How many items were added, skipped and refused.
    /// - Throws: `KeychainError` when the keychain is locked or cannot be written, or keychaind refuses the caller.
    package func importSecretServiceItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary {
        try connection.importSecretServiceItems(batch)
    }
}
