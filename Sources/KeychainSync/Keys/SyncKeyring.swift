import Crypto
import Foundation
import KeychainCore

/// Where a device keeps its sync keys: in its own keychain, as generic passwords of the reserved access group
/// `keychain.sync` that no program is given, accessible after first unlock and **this device only** — so they are
/// sealed like every other item, never synced, and stay behind in backups, as Apple's device keys do.
///
/// - the device's keys: service `sync-device`, account `keys`, the 64 bytes of ``SyncDeviceKeys/rawRepresentation``;
/// - each zone key: service `sync-zone-key`, account the key's identifier, the 32 key bytes.
package struct SyncKeyring: Sendable {
    /// The reserved access group.
    package static let group = "keychain.sync"
    static let deviceService = "sync-device"
    static let zoneKeyService = "sync-zone-key"

    /// The keychain.
    package let engine: KeychainEngine
    private var caller: AccessPolicy { AccessPolicy(groups: [Self.group]) }

    /// A keyring in `engine`.
    package init(engine: KeychainEngine) {
        self.engine = engine
    }

    private func query(_ service: String, _ account: String? = nil) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string(Self.group)
        q.attributes["svce"] = .string(service)
        if let account { q.attributes["acct"] = .string(account) }
        return q
    }

    private func store(_ service: String, _ account: String, _ secret: Data) throws(KeychainError) {
        var q = query(service, account)
        q.attributes["pdmn"] = .string(ProtectionClass.afterFirstUnlockThisDeviceOnly.rawValue)
        q.attributes["labl"] = .string("Keychain sync")
        q.valueData = secret
        _ = try engine.add(q, caller: caller)
    }

    private func secrets(_ service: String, _ account: String? = nil) throws(KeychainError) -> [(account: String, secret: Data)] {
        var q = query(service, account)
        q.limit = .all
        q.returns = ReturnOptions(data: true, attributes: true)
        do {
            return try engine.find(q, caller: caller).map { ($0.attributes["acct"]?.stringValue ?? "", $0.data ?? Data()) }
        } catch  where error.code == .itemNotFound {
            return []
        }
    }

    /// This device's sync keys, made and stored the first time.
    package func deviceKeys() throws(KeychainError) -> SyncDeviceKeys {
        if let stored = try secrets(Self.deviceService, "keys").first {
            return try SyncDeviceKeys(rawRepresentation: stored.secret)
        }
        let keys = SyncDeviceKeys()
        do {
            try store(Self.deviceService, "keys", keys.rawRepresentation)
        } catch  where error.code == .duplicateItem {
            // Made meanwhile by another caller: that one counts.
            guard let stored = try secrets(Self.deviceService, "keys").first else { throw error }
            return try SyncDeviceKeys(rawRepresentation: stored.secret)
        }
        return keys
    }

    /// Forgets this device's keys and zone keys (the device left its account, or joins another).
    package func removeAll() throws(KeychainError) {
        for service in [Self.deviceService, Self.zoneKeyService] {
            do {
                _ = try engine.delete(query(service), caller: caller)
            } catch  where error.code == .itemNotFound {
                continue
            }
        }
    }

    /// Every zone key this device holds, by identifier.
    package func zoneKeys() throws(KeychainError) -> [String: SyncZoneKey] {
        var keys: [String: SyncZoneKey] = [:]
        for (keyID, secret) in try secrets(Self.zoneKeyService) {
            keys[keyID] = try SyncZoneKey(keyID: keyID, key: SymmetricKey(data: secret))
        }
        return keys
    }

    /// Keeps `key` (once: a key already held is left as it is).
    package func save(_ key: SyncZoneKey) throws(KeychainError) {
        let bytes = key.key.withUnsafeBytes { Data($0) }
        do {
            try store(Self.zoneKeyService, key.keyID, bytes)
        } catch  where error.code == .duplicateItem {
            return
        }
    }
}
