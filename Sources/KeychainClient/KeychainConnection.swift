import Foundation
import KeychainCore

/// A keychain this process can talk to: the one seam between the front ends (Keychain Services, KeychainKit,
/// the `security` tool, the git helper) and where the keys are.
///
/// There are two: ``InProcessKeychain``, the engine opened in this process, and ``DaemonKeychain``, keychaind
/// reached over its socket, which decides the caller's access groups itself from the kernel's view of the
/// process. ``KeychainConnector`` picks one from the environment; nothing else asks whether a daemon runs.
///
/// Calls block the calling thread (SQLite, the group commit's fsync, a socket round trip); every implementation
/// is safe to use from any thread.
package protocol KeychainConnection: Sendable {
    // MARK: Items

    /// Inserts the item `query` describes (Apple's `SecItemAdd`), returning it as stored.
    func add(_ query: ItemQuery) throws(KeychainError) -> FoundItem
    /// The items `query` matches (Apple's `SecItemCopyMatching`); `errSecItemNotFound` when none do. Token keys
    /// come back with their public key, never their private bytes.
    func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem]
    /// Applies `changes` to every item `query` matches (Apple's `SecItemUpdate`), in one transaction.
    func update(_ query: ItemQuery, with changes: ItemChanges) throws(KeychainError)
    /// Deletes every item `query` matches (Apple's `SecItemDelete`), returning how many.
    @discardableResult
    func delete(_ query: ItemQuery) throws(KeychainError) -> Int

    // MARK: Keys

    /// Creates or uses a key that never leaves the keychain; `authentication` carries the context whose proof a
    /// `.privateKeyUsage` key with constraints needs.
    func tokenKey(_ request: TokenKeyRequest, authentication: AuthenticationOptions) throws(KeychainError) -> TokenKeyResult

    // MARK: User presence

    /// Proves what `requirement` needs under `options`' context: the person is asked (through pinentry, by
    /// whoever holds the keys, naming this program as that side identified it) and the proof is kept for this
    /// program and context. Item calls that meet `errSecAuthNeeded` call this and retry (see
    /// ``KeychainConnection/withPresence(_:_:)``).
    func authenticate(_ requirement: PresenceRequirement, options: AuthenticationOptions) throws(KeychainError)
    /// Forgets this program's proofs under `context` (`LAContext.invalidate()`).
    func invalidate(context: AuthenticationContextID) throws(KeychainError)
    /// Forgets every proof held (`security authorize --reset`); returns how many contexts held one.
    @discardableResult
    func resetAuthorizations() throws(KeychainError) -> Int

    // MARK: Lock state and passcode

    /// The keychain's folder and lock state, and keychaind's view of the caller when it serves the keychain.
    func status() throws(KeychainError) -> ServiceStatus
    /// Locks the keychain: the whenUnlocked class keys are dropped from memory.
    func lock() throws(KeychainError)
    /// Unlocks the keychain with its passcode.
    func unlock(passcode: String) throws(KeychainError)
    /// Sets, changes or removes the passcode.
    func changePasscode(from old: String?, to new: String?) throws(KeychainError)

    // MARK: Backup

    /// A backup of every item, sealed under `password`, and what it holds; items that need the user's presence
    /// go in with the proof held under `authentication`'s context.
    func backup(password: String, authentication: AuthenticationOptions) throws(KeychainError) -> (data: Data, summary: BackupSummary)
    /// Merges a backup into the keychain: for each item, the newer copy wins.
    func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary

    // MARK: Verification

    /// Checks every stored item for damage (its row, sealed attributes, search index and sealed secret) and
    /// lists the damaged ones, never their contents. Through keychaind only its admin tool may ask.
    func verify() throws(KeychainError) -> KeychainIntegrityReport

    // MARK: Settings

    /// The keychain's lock settings; nil when none were ever set.
    func settings() throws(KeychainError) -> KeychainSettings?
    /// Replaces the keychain's lock settings.
    func setSettings(_ settings: KeychainSettings) throws(KeychainError)

    // MARK: Program registry

    /// The programs registered for access groups.
    func registeredPrograms() throws(KeychainError) -> [AppRegistration]
    /// Registers a program (replacing any registration of the same program).
    func register(_ program: AppRegistration) throws(KeychainError)
    /// Removes the registrations under a path, Flatpak app ID or snap name; returns how many.
    @discardableResult
    func unregisterProgram(named name: String) throws(KeychainError) -> Int

    // MARK: Programs' remembered permissions

    /// The remembered answers to "allow PROGRAM to use SUBJECT?" (`always` or `deny`), in the order they were made.
    /// Through keychaind only its admin tool may list them.
    func consents() throws(KeychainError) -> [ConsentDecision]
    /// Forgets the remembered answers for the program `name` names (an executable's path whatever its SHA-256, a
    /// Flatpak app ID or a snap name), only those about `subject` when given; returns how many. Through keychaind
    /// only its admin tool may revoke them.
    @discardableResult
    func revokeConsents(named name: String, subject: String?) throws(KeychainError) -> Int

    // MARK: Approvals from a terminal

    /// The requests keychaind holds until the person approves them from a terminal. A keychain opened in the calling
    /// process has none.
    func pendingApprovals() throws(KeychainError) -> [PendingApproval]
    /// Answers the waiting request `id`: keychaind asks for the keychain's passcode on this process's terminal first.
    func answerPending(id: UInt64, answer: ConsentAnswer) throws(KeychainError)

    // MARK: Import

    /// Adds items read from another Secret Service provider to the Secret Service collection `batch` names,
    /// keeping their dates and skipping those already there (``SecretStore/importItems(_:)``). Through keychaind
    /// only its admin tool may import.
    func importSecretServiceItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary

    // MARK: Sync

    /// Answers a command of the keychain's sync engine (``SyncCommand``: make or join an account, approve or remove
    /// a device, the status, a round now), from the engine that syncs this keychain: this process's, or keychaind's.
    /// Unlike the calls above it is asynchronous, since the engine's work is (the server's round trips, a whole
    /// round): in this process it runs on the engine's own lane, through keychaind on a thread that waits for the
    /// answer. Through keychaind only its admin tool may send anything but `.status`.
    func sync(_ command: SyncCommand) async throws(KeychainError) -> SyncReply
    /// Runs the sync engine's background work (a round at start when in an account, then on the server's push, after
    /// local writes and every poll interval) until the task is cancelled, when the engine runs in this process;
    /// through keychaind, which runs it itself, returns at once.
    func runSync() async

    // MARK: Keychains

    /// The same connection acting on the user's keychain `name` (macOS's `SecKeychainOpen`): item calls without a
    /// search list of their own search it alone and add to it, and lock, unlock, status, passcode, settings,
    /// verification and backup apply to it. Nothing is checked until a call is made (a missing keychain is then
    /// `errSecNoSuchKeychain`).
    func keychain(named name: KeychainName) -> any KeychainConnection
    /// The user's keychains, the search list and the default keychain.
    func keychains() throws(KeychainError) -> KeychainListing
    /// Makes a keychain beside the login keychain, protected by `passcode` when given (and then unlocked).
    /// Through keychaind only its admin tool may.
    func createKeychain(_ name: KeychainName, passcode: String?) throws(KeychainError)
    /// Deletes a keychain the user made, with its items. Through keychaind only its admin tool may.
    func deleteKeychain(_ name: KeychainName) throws(KeychainError)
    /// Replaces the search list, the default keychain or both (nil leaves one as it is). Through keychaind only its
    /// admin tool may.
    func setSearchList(_ names: [KeychainName]?, defaultKeychain: KeychainName?) throws(KeychainError)
}

extension KeychainConnection {
    /// Forgets every remembered answer for the program `name` names; returns how many.
    @discardableResult
    package func revokeConsents(named name: String) throws(KeychainError) -> Int {
        try revokeConsents(named: name, subject: nil)
    }
}

extension KeychainConnection {
    /// Creates or uses a key that never leaves the keychain, asking for presence when its access control needs it.
    package func tokenKey(_ request: TokenKeyRequest) throws(KeychainError) -> TokenKeyResult {
        try tokenKey(request, authentication: AuthenticationOptions())
    }

    /// A backup of every item, asking for presence when a protected item needs it.
    package func backup(password: String) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        try backup(password: password, authentication: AuthenticationOptions())
    }
}
