import Foundation
import KeychainCore

/// The keychain opened in this process: the engine, used with the caller's access groups. Every call first
/// applies the keychain's lock settings (``KeychainEngine/applyLockSettings(countingAsUse:)``), as keychaind does
/// for each request, so an unlock made in this process ends after the idle time or a suspend like keychaind's.
package struct InProcessKeychain: KeychainConnection {
    /// The open engine.
    package let engine: KeychainEngine
    /// The access groups calls act as.
    package let caller: AccessPolicy
    /// The keychain calls act on (see ``KeychainConnection/keychain(named:)``); nil: the user's search list for
    /// item calls, the login keychain for the rest.
    package let target: KeychainName?

    /// Calls act as `caller`, known in items' trusted-application lists by this process's executable path (and
    /// `*`, and its groups' teams) unless `caller` says otherwise.
    package init(engine: KeychainEngine, caller: AccessPolicy, target: KeychainName? = nil) {
        self.engine = engine
        self.caller = caller.trustedAs.isEmpty ? caller.trusted(as: TrustedApplications.thisExecutable) : caller
        self.target = target
    }

    /// An item query with this connection's keychain when it names none of its own.
    private func routed(_ query: ItemQuery) -> ItemQuery {
        guard query.keychains == nil, let target else { return query }
        var routed = query
        routed.keychains = [target]
        return routed
    }

    /// The engine of the keychain the non-item calls act on, its lock settings applied.
    private func targetEngine() throws(KeychainError) -> KeychainEngine {
        let chosen = try engine.keychain(named: target ?? .login)
        chosen.applyLockSettings()
        return chosen
    }

    package func add(_ query: ItemQuery) throws(KeychainError) -> FoundItem {
        engine.applyLockSettings()
        return try withPresence(query.authentication) { (options) throws(KeychainError) in
            return try engine.addRouted(routed(query).authenticated(options), caller: caller).leavingEngine()
        }
    }

    package func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        engine.applyLockSettings()
        return try withPresence(query.authentication) { (options) throws(KeychainError) in
            return try engine.findRouted(routed(query).authenticated(options), caller: caller)
        }
    }

    package func update(_ query: ItemQuery, with changes: ItemChanges) throws(KeychainError) {
        engine.applyLockSettings()
        try withPresence(query.authentication) { (options) throws(KeychainError) in
            try engine.updateRouted(routed(query).authenticated(options), attributes: changes.attributes, sync: changes.sync, data: changes.data, caller: caller)
        }
    }

    @discardableResult
    package func delete(_ query: ItemQuery) throws(KeychainError) -> Int {
        engine.applyLockSettings()
        return try engine.deleteRouted(routed(query), caller: caller)
    }

    package func tokenKey(_ request: TokenKeyRequest, authentication: AuthenticationOptions) throws(KeychainError) -> TokenKeyResult {
        engine.applyLockSettings()
        return try withPresence(authentication) { (options) throws(KeychainError) in
            try engine.tokenKeyRouted(request, keychains: request.keychains ?? target.map { [$0] }, caller: caller, authentication: options)
        }
    }

    package func authenticate(_ requirement: PresenceRequirement, options: AuthenticationOptions) throws(KeychainError) {
        engine.applyLockSettings()
        let stored = try engine.storedRequirement(requirement, caller: caller)
        try engine.authenticate(
            stored, options: options, caller: caller,
            prompter: PresenceServices.prompter(for: engine.location), biometrics: PresenceServices.biometrics)
    }

    package func invalidate(context: AuthenticationContextID) throws(KeychainError) {
        engine.invalidate(context: context, caller: caller)
    }

    @discardableResult
    package func resetAuthorizations() throws(KeychainError) -> Int {
        engine.resetAuthorizations()
    }

    package func status() throws(KeychainError) -> ServiceStatus {
        let chosen = try targetEngine()
        return ServiceStatus(home: chosen.location.home, lockState: chosen.lockState)
    }

    package func lock() throws(KeychainError) { try engine.keychain(named: target ?? .login).lock() }

    package func unlock(passcode: String) throws(KeychainError) {
        try targetEngine().unlock(passcode: passcode)
    }

    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        try KeychainEngine.refuseReadOnly(target, "set a passcode on")
        try targetEngine().changePasscode(from: old, to: new)
    }

    package func backup(password: String, authentication: AuthenticationOptions) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        let chosen = try targetEngine()
        return try withPresence(authentication) { (options) throws(KeychainError) in
            try chosen.backup(password: password, authentication: options, caller: caller)
        }
    }

    package func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary {
        try KeychainEngine.refuseReadOnly(target, "restore a backup into")
        return try targetEngine().restore(backup, password: password)
    }

    package func verify() throws(KeychainError) -> KeychainIntegrityReport {
        try targetEngine().verify()
    }

    package func settings() throws(KeychainError) -> KeychainSettings? {
        try KeychainSettings.load(targetEngine().location)
    }

    package func setSettings(_ settings: KeychainSettings) throws(KeychainError) {
        try KeychainEngine.refuseReadOnly(target, "change the settings of")
        let chosen = try targetEngine()
        try settings.validate(replacing: (try? KeychainSettings.load(chosen.location)) ?? nil)
        try settings.save(chosen.location)
        chosen.lockSettingsChanged()
    }

    package func registeredPrograms() throws(KeychainError) -> [AppRegistration] {
        engine.applyLockSettings()
        return try engine.appRegistry().entries
    }

    package func register(_ program: AppRegistration) throws(KeychainError) {
        engine.applyLockSettings()
        try engine.updateAppRegistry { $0.register(program) }
    }

    @discardableResult
    package func unregisterProgram(named name: String) throws(KeychainError) -> Int {
        engine.applyLockSettings()
        return try engine.updateAppRegistry { $0.remove(named: name) }
    }

    package func consents() throws(KeychainError) -> [ConsentDecision] {
        engine.applyLockSettings()
        return try engine.consents()
    }

    @discardableResult
    package func revokeConsents(named name: String, subject: String?) throws(KeychainError) -> Int {
        engine.applyLockSettings()
        return try engine.revokeConsents(named: name, subject: subject)
    }

    /// Nothing waits in a program's own process: requests wait for approval only in keychaind.
    package func pendingApprovals() throws(KeychainError) -> [PendingApproval] { [] }

    package func answerPending(id: UInt64, answer: ConsentAnswer) throws(KeychainError) {
        throw KeychainError(code: .notAvailable, message: "No keychaind serves this keychain, so no request waits for approval (this program opens the keychain itself).")
    }

    package func importSecretServiceItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary {
        engine.applyLockSettings()
        return try SecretStore(engine: engine).importItems(batch)
    }

    package func sync(_ command: SyncCommand) async throws(KeychainError) -> SyncReply {
        engine.applyLockSettings()
        return try await SyncEngineRegistry.engines().perform(command, engine: engine)
    }

    package func runSync() async {
        guard let engines = SyncEngineRegistry.current else { return }
        await engines.run(engine: engine)
    }

    // MARK: Keychains

    package func keychain(named name: KeychainName) -> any KeychainConnection {
        InProcessKeychain(engine: engine, caller: caller, target: name)
    }

    package func keychains() throws(KeychainError) -> KeychainListing {
        try engine.keychainListing()
    }

    package func createKeychain(_ name: KeychainName, passcode: String?) throws(KeychainError) {
        try engine.createKeychain(name, passcode: passcode)
    }

    package func deleteKeychain(_ name: KeychainName) throws(KeychainError) {
        try engine.deleteKeychain(name)
    }

    package func setSearchList(_ names: [KeychainName]?, defaultKeychain: KeychainName?) throws(KeychainError) {
        try engine.setSearchList(names, defaultKeychain: defaultKeychain)
    }
}
