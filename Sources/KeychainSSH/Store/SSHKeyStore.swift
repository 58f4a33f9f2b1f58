import Foundation
import KeychainCore

/// The SSH keys the agent serves, kept in the keychain: each a generic password of the access group ``group`` (which
/// a program reaches only when the person registers it with that group),
/// service `ssh-key`, account the key's fingerprint, label its comment, generic attribute its public blob, and as
/// its secret the private key in the agent protocol's encoding — sealed like every item, on this device only
/// (`kSecAttrAccessibleWhenUnlockedThisDeviceOnly`).
package struct SSHKeyStore: Sendable {
    /// The reserved access group of SSH keys.
    package static let group = "keychain.ssh"
    /// The most keys kept (an add past it is refused).
    package static let maximumKeys = 256

    /// The keychain.
    package let engine: KeychainEngine

    /// A store on `engine`.
    package init(engine: KeychainEngine) { self.engine = engine }

    var caller: AccessPolicy { AccessPolicy(groups: [Self.group]) }

    func query(fingerprint: String? = nil) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string(Self.group)
        q.attributes["svce"] = .string("ssh-key")
        if let fingerprint { q.attributes["acct"] = .string(fingerprint) }
        return q
    }

    /// Every key's public blob and comment, in the order they were added.
    package func identities() throws(KeychainError) -> [SSHAgentIdentity] {
        var q = query()
        q.limit = .all
        q.returns = ReturnOptions(attributes: true)
        let found: [FoundItem]
        do {
            found = try engine.find(q, caller: caller)
        } catch  where error.code == .itemNotFound {
            return []
        }
        func created(_ item: FoundItem) -> Date {
            if case .date(let date)? = item.attributes["cdat"] { return date }
            return .distantPast
        }
        return found.sorted { created($0) < created($1) }
            .compactMap { item in
                guard case .data(let blob)? = item.attributes["gena"] else { return nil }
                return SSHAgentIdentity(key: Array(blob), comment: item.attributes["labl"]?.stringValue ?? "")
            }
    }

    /// Keeps `key` with `comment`, replacing a key with the same public key.
    package func add(_ key: SSHPrivateKey, comment: String) throws(KeychainError) {
        let fingerprint = key.publicKey.fingerprint
        _ = try delete(query(fingerprint: fingerprint))
        guard try identities().count < Self.maximumKeys else {
            throw KeychainError(code: .invalidParameter, message: "The keychain holds \(Self.maximumKeys) SSH keys already. Remove one first (ssh-add -d, or security ssh remove).")
        }
        var q = query(fingerprint: fingerprint)
        q.attributes["labl"] = .string(comment)
        q.attributes["gena"] = .data(Data(key.publicKey.blob))
        q.attributes["pdmn"] = .string(ProtectionClass.whenUnlockedThisDeviceOnly.rawValue)
        var writer = SSHWireWriter()
        key.write(to: &writer)
        q.valueData = Data(writer.bytes)
        _ = try engine.add(q, caller: caller)
    }

    /// The private key whose public blob is `blob`, nil when the keychain holds none.
    package func privateKey(blob: [UInt8]) throws(KeychainError) -> SSHPrivateKey? {
        guard let publicKey = try? SSHPublicKey(blob: blob) else { return nil }
        var q = query(fingerprint: publicKey.fingerprint)
        q.returns = ReturnOptions(data: true)
        let found: [FoundItem]
        do {
            found = try engine.find(q, caller: caller)
        } catch  where error.code == .itemNotFound {
            return nil
        }
        guard let data = found.first?.data else { return nil }
        var reader = SSHWireReader(data)
        let key = try SSHPrivateKey.read(from: &reader)
        guard key.publicKey == publicKey else {
            throw KeychainError(code: .corruptData, message: "A stored SSH key does not match its fingerprint.")
        }
        return key
    }

    /// Removes the key whose public blob is `blob`: whether there was one.
    package func remove(blob: [UInt8]) throws(KeychainError) -> Bool {
        guard let publicKey = try? SSHPublicKey(blob: blob) else { return false }
        return try delete(query(fingerprint: publicKey.fingerprint)) > 0
    }

    /// Removes every SSH key (and nothing else of the keychain): how many there were.
    package func removeAll() throws(KeychainError) -> Int {
        try delete(query())
    }

    /// Deletes what `q` matches: how many (0 when nothing did).
    private func delete(_ q: ItemQuery) throws(KeychainError) -> Int {
        do {
            return try engine.delete(q, caller: caller)
        } catch  where error.code == .itemNotFound {
            return 0
        }
    }
}
