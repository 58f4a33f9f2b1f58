import Foundation
import KeychainCore

/// Everything a client can ask keychaind, with typed payloads.
///
/// Item requests carry the caller's `claim`: the access groups it asks to act as (its entitlements file), which
/// keychaind grants only when the kernel-identified program is registered for them; nil asks for everything the
/// program has. Nothing else a client says about itself is believed.
package indirect enum KeychainRequest: Sendable, Hashable {
    /// `SecItemAdd`: insert the item `query` describes.
    case add(ItemQuery, claim: [String]?)
    /// `SecItemCopyMatching`: the items `query` matches.
    case find(ItemQuery, claim: [String]?)
    /// `SecItemUpdate`: apply `changes` to every item `query` matches.
    case update(ItemQuery, ItemChanges, claim: [String]?)
    /// `SecItemDelete`: remove every item `query` matches.
    case delete(ItemQuery, claim: [String]?)
    /// Create or use a key that never leaves keychaind; `authentication` carries the context whose proof of
    /// presence a `.privateKeyUsage` key needs.
    case tokenKey(TokenKeyRequest, claim: [String]?, authentication: AuthenticationOptions = AuthenticationOptions())
    /// The keychain's folder and lock state, and how keychaind sees the caller.
    case status
    /// Lock the keychain.
    case lock
    /// Unlock the keychain; from the admin tool this also authenticates its connection.
    case unlock(passcode: String)
    /// Set, change or remove the passcode (admin tool only).
    case changePasscode(old: String?, new: String?)
    /// A backup of every item, sealed under `password` (admin tool only); `authentication` carries the context
    /// whose proof lets items that need presence in.
    case backup(password: String, authentication: AuthenticationOptions = AuthenticationOptions())
    /// Merge a backup into the keychain (admin tool only).
    case restore(Data, password: String)
    /// The keychain's lock settings.
    case settings
    /// Replace the keychain's lock settings (admin tool only).
    case setSettings(KeychainSettings)
    /// Register a program for access groups (admin tool only).
    case registerProgram(AppRegistration)
    /// The registered programs (admin tool only).
    case listPrograms
    /// Unregister the programs registered under a path, Flatpak app ID or snap name (admin tool only).
    case unregisterProgram(String)
    /// Check every stored item for damage (admin tool only).
    case verify
    /// Prove what `requirement` needs under `options`' context: keychaind asks the person (naming the program as
    /// it identified it) and keeps the proof for this program and context.
    case authenticate(PresenceRequirement, AuthenticationOptions)
    /// Forget this program's proofs under a context (`LAContext.invalidate()`).
    case invalidateContext(AuthenticationContextID)
    /// Forget every proof keychaind holds (admin tool only; `security authorize --reset`).
    case resetAuthorizations
    /// The remembered answers to "allow PROGRAM to use SUBJECT?" (admin tool only).
    case listConsents
    /// Forget the remembered answers for the program a path, Flatpak app ID or snap name names, only those about
    /// `subject` when given (admin tool only).
    case revokeConsents(String, subject: String?)
    /// The requests waiting for the person's approval from a terminal (`security approve`).
    case pendingApprovals
    /// Answers a waiting request (`security approve ID`): keychaind first asks for the keychain's passcode on the
    /// asking program's terminal.
    case answerPending(id: UInt64, answer: ConsentAnswer)
    /// Add items read from another Secret Service provider to the collection the batch names, keeping their
    /// dates; items already there with the same attributes and secret are skipped (admin tool only;
    /// `security import-secret-service`).
    case importSecretServiceItems(SecretServiceImportBatch)
    /// A command for the keychain's sync engine, which keychaind runs (`security sync`, KeychainKit's sync API).
    /// Only its admin tool may manage the account, devices and rounds; any caller may ask for the status.
    case sync(SyncCommand)
    /// `request` for the keychains `names` rather than the user's search list (item calls: `kSecMatchSearchList`,
    /// `kSecUseKeychain`) or the login keychain (lock, unlock, status, passcode, settings, verify: one name).
    /// `request` is never itself one of these.
    case onKeychains([KeychainName], KeychainRequest)
    /// The user's keychains, search list and default keychain (`security list-keychains`).
    case listKeychains
    /// Make a keychain beside the login keychain, with a passcode when given (admin tool only;
    /// `security create-keychain`).
    case createKeychain(KeychainName, passcode: String?)
    /// Delete a keychain the user made (admin tool only; `security delete-keychain`).
    case deleteKeychain(KeychainName)
    /// Replace the search list, the default keychain or both; nil leaves one as it is (admin tool only;
    /// `security list-keychains -s`, `security default-keychain -s`).
    case setSearchList([KeychainName]?, defaultKeychain: KeychainName?)

    /// The request's name in logs (never its payload).
    package var name: String {
        switch self {
        case .add: "add"
        case .find: "find"
        case .update: "update"
        case .delete: "delete"
        case .tokenKey: "tokenKey"
        case .status: "status"
        case .lock: "lock"
        case .unlock: "unlock"
        case .changePasscode: "changePasscode"
        case .backup: "backup"
        case .restore: "restore"
        case .settings: "settings"
        case .setSettings: "setSettings"
        case .registerProgram: "registerProgram"
        case .listPrograms: "listPrograms"
        case .unregisterProgram: "unregisterProgram"
        case .verify: "verify"
        case .authenticate: "authenticate"
        case .invalidateContext: "invalidateContext"
        case .resetAuthorizations: "resetAuthorizations"
        case .listConsents: "listConsents"
        case .revokeConsents: "revokeConsents"
        case .pendingApprovals: "pendingApprovals"
        case .answerPending: "answerPending"
        case .importSecretServiceItems: "importSecretServiceItems"
        case .sync: "sync"
        case .onKeychains(_, let request): request.name
        case .listKeychains: "listKeychains"
        case .createKeychain: "createKeychain"
        case .deleteKeychain: "deleteKeychain"
        case .setSearchList: "setSearchList"
        }
    }
}
