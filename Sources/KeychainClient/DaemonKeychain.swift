import Foundation
import KeychainCore
import KeychainProtocol

/// The keychain keychaind serves, reached over its Unix socket. keychaind decides the caller's access groups from
/// the kernel's view of this process; `claim` can only narrow them.
package struct DaemonKeychain: KeychainConnection {
    /// The connection pool to keychaind.
    package let client: DaemonClient
    /// The access groups item calls ask for (the caller's entitlements file); nil asks for all the program has.
    package let claim: [String]?
    /// The keychain calls act on (see ``KeychainConnection/keychain(named:)``); nil: the user's search list for
    /// item calls, the login keychain for the rest.
    package let target: KeychainName?

    package init(client: DaemonClient, claim: [String]?, target: KeychainName? = nil) {
        self.client = client
        self.claim = claim
        self.target = target
    }

    /// Sends `request` for `keychains` (an item call's search list or keychain), else for ``target``.
    private func call(_ request: KeychainRequest, for keychains: [KeychainName]? = nil) throws(KeychainError) -> KeychainResponse {
        guard let names = keychains ?? target.map({ [$0] }) else { return try client.call(request) }
        return try client.call(.onKeychains(names, request))
    }

    /// A response keychaind should not have given to this request.
    private func unexpected(_ response: KeychainResponse, _ request: String) -> KeychainError {
        KeychainError(code: .internal, message: "keychaind answered a \(request) request with something else. Install keychaind and this program from the same release.")
    }

    package func add(_ query: ItemQuery) throws(KeychainError) -> FoundItem {
        try withPresence(query.authentication) { (options) throws(KeychainError) in
            let response = try call(.add(query.authenticated(options), claim: claim), for: query.keychains)
            guard case .item(let item) = response else { throw unexpected(response, "add") }
            return item
        }
    }

    package func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        try withPresence(query.authentication) { (options) throws(KeychainError) in
            let response = try call(.find(query.authenticated(options), claim: claim), for: query.keychains)
            guard case .items(let items) = response else { throw unexpected(response, "find") }
            return items
        }
    }

    package func update(_ query: ItemQuery, with changes: ItemChanges) throws(KeychainError) {
        try withPresence(query.authentication) { (options) throws(KeychainError) in
            try expectDone(.update(query.authenticated(options), changes, claim: claim), for: query.keychains)
        }
    }

    @discardableResult
    package func delete(_ query: ItemQuery) throws(KeychainError) -> Int {
        try expectCount(.delete(query, claim: claim), for: query.keychains)
    }

    package func tokenKey(_ request: TokenKeyRequest, authentication: AuthenticationOptions) throws(KeychainError) -> TokenKeyResult {
        try withPresence(authentication) { (options) throws(KeychainError) in
            let response = try call(.tokenKey(request, claim: claim, authentication: options), for: request.keychains)
            guard case .tokenKey(let result) = response else { throw unexpected(response, "token key") }
            return result
        }
    }

    package func authenticate(_ requirement: PresenceRequirement, options: AuthenticationOptions) throws(KeychainError) {
        try expectLoginDone(.authenticate(requirement, options))
    }

    package func invalidate(context: AuthenticationContextID) throws(KeychainError) {
        try expectLoginDone(.invalidateContext(context))
    }

    @discardableResult
    package func resetAuthorizations() throws(KeychainError) -> Int {
        try expectLoginCount(.resetAuthorizations)
    }

    package func status() throws(KeychainError) -> ServiceStatus {
        let response = try call(.status)
        guard case .status(let status) = response else { throw unexpected(response, "status") }
        return status
    }

    package func lock() throws(KeychainError) { try expectDone(.lock) }

    package func unlock(passcode: String) throws(KeychainError) { try expectDone(.unlock(passcode: passcode)) }

    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        try expectDone(.changePasscode(old: old, new: new))
    }

    package func backup(password: String, authentication: AuthenticationOptions) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        try withPresence(authentication) { (options) throws(KeychainError) in
            let response = try call(.backup(password: password, authentication: options))
            guard case .backup(let data, let summary) = response else { throw unexpected(response, "backup") }
            return (data, summary)
        }
    }

    package func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary {
        let response = try call(.restore(backup, password: password))
        guard case .restored(let summary) = response else { throw unexpected(response, "restore") }
        return summary
    }

    package func verify() throws(KeychainError) -> KeychainIntegrityReport {
        let response = try call(.verify)
        guard case .verification(let report) = response else { throw unexpected(response, "verify") }
        return report
    }

    package func settings() throws(KeychainError) -> KeychainSettings? {
        let response = try call(.settings)
        guard case .settings(let settings) = response else { throw unexpected(response, "settings") }
        return settings
    }

    package func setSettings(_ settings: KeychainSettings) throws(KeychainError) {
        try expectDone(.setSettings(settings))
    }

    package func registeredPrograms() throws(KeychainError) -> [AppRegistration] {
        let response = try client.call(.listPrograms)
        guard case .programs(let entries) = response else { throw unexpected(response, "program list") }
        return entries
    }

    package func register(_ program: AppRegistration) throws(KeychainError) {
        try expectLoginDone(.registerProgram(program))
    }

    @discardableResult
    package func unregisterProgram(named name: String) throws(KeychainError) -> Int {
        try expectLoginCount(.unregisterProgram(name))
    }

    package func consents() throws(KeychainError) -> [ConsentDecision] {
        let response = try client.call(.listConsents)
        guard case .consents(let decisions) = response else { throw unexpected(response, "consent list") }
        return decisions
    }

    @discardableResult
    package func revokeConsents(named name: String, subject: String?) throws(KeychainError) -> Int {
        try expectLoginCount(.revokeConsents(name, subject: subject))
    }

    package func pendingApprovals() throws(KeychainError) -> [PendingApproval] {
        let response = try client.call(.pendingApprovals)
        guard case .pendingApprovals(let pending) = response else { throw unexpected(response, "pending approvals") }
        return pending
    }

    package func answerPending(id: UInt64, answer: ConsentAnswer) throws(KeychainError) {
        try expectLoginDone(.answerPending(id: id, answer: answer))
    }

    package func importSecretServiceItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary {
        let response = try client.call(.importSecretServiceItems(batch))
        guard case .importSummary(let summary) = response else { throw unexpected(response, "import") }
        return summary
    }

    package func sync(_ command: SyncCommand) async throws(KeychainError) -> SyncReply {
        try command.checkWireLimits()
        // The call blocks until keychaind answers (a round can take seconds): on a thread of its own, never one of
        // Swift's cooperative pool.
        let client = self.client
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<KeychainResponse, KeychainError>, Never>) in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(KeychainError) in try client.call(.sync(command)) })
            }
        }
        let response = try result.get()
        guard case .sync(let reply) = response else { throw unexpected(response, "sync") }
        return reply
    }

    /// keychaind runs the sync engine of the keychain it serves: nothing to run here.
    package func runSync() async {}

    // MARK: Keychains

    package func keychain(named name: KeychainName) -> any KeychainConnection {
        DaemonKeychain(client: client, claim: claim, target: name)
    }

    package func keychains() throws(KeychainError) -> KeychainListing {
        let response = try client.call(.listKeychains)
        guard case .keychains(let listing) = response else { throw unexpected(response, "keychain list") }
        return listing
    }

    package func createKeychain(_ name: KeychainName, passcode: String?) throws(KeychainError) {
        try expectLoginDone(.createKeychain(name, passcode: passcode))
    }

    package func deleteKeychain(_ name: KeychainName) throws(KeychainError) {
        try expectLoginDone(.deleteKeychain(name))
    }

    package func setSearchList(_ names: [KeychainName]?, defaultKeychain: KeychainName?) throws(KeychainError) {
        try expectLoginDone(.setSearchList(names, defaultKeychain: defaultKeychain))
    }

    private func expectLoginDone(_ request: KeychainRequest) throws(KeychainError) {
        let response = try client.call(request)
        guard case .done = response else { throw unexpected(response, request.name) }
    }

    private func expectLoginCount(_ request: KeychainRequest) throws(KeychainError) -> Int {
        let response = try client.call(request)
        guard case .count(let n) = response else { throw unexpected(response, request.name) }
        return n
    }

    private func expectDone(_ request: KeychainRequest, for keychains: [KeychainName]? = nil) throws(KeychainError) {
        let response = try call(request, for: keychains)
        guard case .done = response else { throw unexpected(response, request.name) }
    }

    private func expectCount(_ request: KeychainRequest, for keychains: [KeychainName]? = nil) throws(KeychainError) -> Int {
        let response = try call(request, for: keychains)
        guard case .count(let n) = response else { throw unexpected(response, request.name) }
        return n
    }
}

extension DaemonClient {
    /// Whether the keychaind at this socket answers and serves the keychain in `home`.
    func serves(_ home: String) -> Bool {
        guard case .status(let status)? = try? call(.status) else { return false }
        return URL(fileURLWithPath: status.home).standardizedFileURL.path == home
    }
}
