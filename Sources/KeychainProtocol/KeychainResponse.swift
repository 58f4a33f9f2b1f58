import Foundation
import KeychainCore

/// keychaind's answer to one ``KeychainRequest``.
package enum KeychainResponse: Sendable {
    /// Done, nothing to return.
    case done
    /// The item an add stored.
    case item(FoundItem)
    /// The items a find matched.
    case items([FoundItem])
    /// How many items or programs a request affected.
    case count(Int)
    /// A token key's result, or its created key.
    case tokenKey(TokenKeyResult)
    /// The keychain's status.
    case status(ServiceStatus)
    /// A backup's bytes and what it holds.
    case backup(Data, BackupSummary)
    /// What a restore did.
    case restored(RestoreSummary)
    /// The keychain's lock settings; nil when none were ever set.
    case settings(KeychainSettings?)
    /// The registered programs.
    case programs([AppRegistration])
    /// What checking every stored item found.
    case verification(KeychainIntegrityReport)
    /// The remembered answers to "allow PROGRAM to use SUBJECT?".
    case consents([ConsentDecision])
    /// The requests waiting for the person's approval.
    case pendingApprovals([PendingApproval])
    /// What an import of Secret Service items did.
    case importSummary(SecretServiceImportSummary)
    /// The sync engine's answer to a sync command.
    case sync(SyncReply)
    /// The user's keychains, search list and default keychain.
    case keychains(KeychainListing)
    /// The request failed: the error's code, `OSStatus` and message as keychaind reported them.
    case failure(KeychainError)
}
