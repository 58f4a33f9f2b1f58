import Foundation
import KeychainCore

/// The keychain opened in this process: the engine, used with the caller's access groups.
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
        try engine.add(query, caller: caller).leavingEngine()
    }

    package func find(_ query: ItemQuery) throws(KeychainError) -> [FoundItem] {
        try engine.find(query, caller: caller)
    }

    package func update(_ query: ItemQuery, with changes: ItemChanges) throws(KeychainError) {
        try engine.update(query, attributes: changes.attributes, sync: changes.sync, data: changes.data, caller: caller)
    }

    @discardableResult
    package func delete(_ query: ItemQuery) throws(KeychainError) -> Int {
        try engine.delete(query, caller: caller)
    }

    package func tokenKey(_ request: TokenKeyRequest) throws(KeychainError) -> TokenKeyResult {
        try engine.tokenKey(request, caller: caller)
    }

    package func status() throws(KeychainError) -> ServiceStatus {
        ServiceStatus(home: engine.location.home, lockState: engine.lockState)
    }

    package func lock() throws(KeychainError) { engine.lock() }

    package func unlock(passcode: String) throws(KeychainError) { try engine.unlock(passcode: passcode) }

    package func changePasscode(from old: String?, to new: String?) throws(KeychainError) {
        try engine.changePasscode(from: old, to: new)
    }

    package func backup(password: String) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        try engine.backup(password: password)
    }

    package func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary {
        try engine.restore(backup, password: password)
    }

    package func settings() throws(KeychainError) -> KeychainSettings? {
        try KeychainSettings.load(engine.location)
    }

    package func setSettings(_ settings: KeychainSettings) throws(KeychainError) {
        try settings.save(engine.location)
    }

    package func registeredPrograms() throws(KeychainError) -> [AppRegistration] {
        try engine.appRegistry().entries
    }

    package func register(_ program: AppRegistration) throws(KeychainError) {
        try engine.updateAppRegistry { $0.register(program) }
    }

    @discardableResult
    package func unregisterProgram(named name: String) throws(KeychainError) -> Int {
        try engine.updateAppRegistry { $0.remove(named: name) }
    }
}
