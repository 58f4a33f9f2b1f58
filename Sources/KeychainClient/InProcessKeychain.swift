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

    package init(engine: KeychainEngine, caller: AccessPolicy) {
        self.engine = engine
        self.caller = caller
    }

    package func add(_ query: ItemQuery) throws(KeychainError) -> FoundItem {
        engine.applyLockSettings()
        return try withPresence(query.authentication) { (options) throws(KeychainError) in
            return try engine.add(query.authenticated(options), caller: caller).leavingEngine()
        }
    }

    package func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        engine.applyLockSettings()
        return try withPresence(query.authentication) { (options) throws(KeychainError) in
            return try engine.find(query.authenticated(options), caller: caller)
        }
    }

    package func update(_ query: ItemQuery, with changes: ItemChanges) throws(KeychainError) {
        engine.applyLockSettings()
        try withPresence(query.authentication) { (options) throws(KeychainError) in
            try engine.update(query.authenticated(options), attributes: changes.attributes, sync: changes.sync, data: changes.data, caller: caller)
        }
    }

    @discardableResult
    package func delete(_ query: ItemQuery) throws(KeychainError) -> Int {
        engine.applyLockSettings()
        return try engine.delete(query, caller: caller)
    }

    package func tokenKey(_ request: TokenKeyRequest, authentication: AuthenticationOptions) throws(KeychainError) -> TokenKeyResult {
        engine.applyLockSettings()
        return try withPresence(authentication) { (options) throws(KeychainError) in
            try engine.tokenKey(request, caller: caller, authentication: options)
        }
    }

    package func authenticate(_ requirement: PresenceRequirement, options: AuthenticationOptions) throws(KeychainError) {
        engine.applyLockSettings()
        let stored = try engine.storedRequirement(requirement, caller: caller)
        try engine.authenticate(stored, options: options, caller: caller,
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
        engine.applyLockSettings()
        return ServiceStatus(home: engine.location.home, lockState: engine.lockState)
    }

    package func lock() throws(KeychainError) { engine.lock() }

    package func unlock(passcode: String) throws(KeychainError) {
        engine.applyLockSettings()
        try engine.unlock(passcode: passcode)
    }

    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        engine.applyLockSettings()
        try engine.changePasscode(from: old, to: new)
    }

    package func backup(password: String, authentication: AuthenticationOptions) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        engine.applyLockSettings()
        return try withPresence(authentication) { (options) throws(KeychainError) in
            try engine.backup(password: password, authentication: options, caller: caller)
        }
    }

    package func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary {
        engine.applyLockSettings()
        return try engine.restore(backup, password: password)
    }

    package func verify() throws(KeychainError) -> KeychainVerification {
        engine.applyLockSettings()
        return try engine.verify()
    }

    package func settings() throws(KeychainError) -> KeychainSettings? {
        engine.applyLockSettings()
        return try KeychainSettings.load(engine.location)
    }

    package func setSettings(_ settings: KeychainSettings) throws(KeychainError) {
        engine.applyLockSettings()
        try settings.save(engine.location)
        engine.lockSettingsChanged()
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

    package func importSecretServiceItems(_ batch: SecretServiceImportBatch) throws(KeychainError) -> SecretServiceImportSummary {
        engine.applyLockSettings()
        return try SecretStore(engine: engine).importItems(batch)
    }

    package func sync(_ command: SyncCommand) async throws(KeychainError) -> SyncReply {
        engine.applyLockSettings()
        return try await InProcessSyncEngineRegistry.engines().perform(command, engine: engine)
    }

    package func runSync() async {
        guard let engines = try? InProcessSyncEngineRegistry.engines() else { return }
        await engines.run(engine: engine)
    }
}
