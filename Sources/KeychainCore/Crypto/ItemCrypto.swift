import Foundation
import Crypto

/// The keys derived from an unwrapped keybag and the operations that protect one row.
///
/// - Attributes are sealed with AES-256-GCM under the *attribute key of the item's protection class*,
///   `HKDF-SHA256(ikm: class key, salt: metadata key, info: "swift-keychain attributes v1")`, so locking a
///   class (next issue) hides its items' attributes as well as their secrets, as Apple's per-class
///   metadata keys do.
/// - Each secret is sealed under its own random 256-bit key, wrapped by the class key.
/// - Searchable attributes and the primary-key tuple are stored as HMAC-SHA256 (truncated to 16 bytes) under
///   the *index key*, `HKDF-SHA256(ikm: metadata key, info: "swift-keychain index v1")`. Apple stores SHA-1 of
///   the value; a keyed hash reveals nothing to someone holding only the database.
/// - The row's identity (table, UUID, protection class, access-group hash, primary-key hash, sync and
///   tombstone flags) is the authenticated data of every seal, so sealed parts cannot be moved between rows
///   or re-labelled.
package struct ItemCrypto: Sendable {
    package static let hashLength = 16
    package static let uuidLength = 16

    let classKeys: [ProtectionClass: SymmetricKey]
    let attributeKeys: [ProtectionClass: SymmetricKey]
    /// HMAC-SHA256 keyed with the index key, ready for input: each hash starts from a copy, so the key's pads
    /// are computed once per key rather than once per hash.
    let indexMAC: HMAC<SHA256>
    let random: any RandomSource

    package init(keybag: Keybag, random: any RandomSource = SystemRandom()) {
        classKeys = keybag.classKeys
        let salt = keybag.metadataKey.withUnsafeBytes { Array($0) }
        attributeKeys = keybag.classKeys.mapValues { key in
            HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt,
                                   info: Array("swift-keychain attributes v1".utf8), outputByteCount: 32)
        }
        let indexKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: keybag.metadataKey,
                                              info: Array("swift-keychain index v1".utf8), outputByteCount: 32)
        indexMAC = HMAC<SHA256>(key: indexKey)
        self.random = random
    }

    // MARK: Index hashes

    /// The keyed hash of one attribute value, as stored in its `h_<code>` column.
    package func attributeHash(table: String, code: String, value: AttributeValue) -> Data {
        var mac = indexMAC
        mac.update(data: Array(table.utf8) + [0] + Array(code.utf8) + [0])
        mac.update(data: value.matchBytes)
        return Data(mac.finalize().prefix(ItemCrypto.hashLength))
    }

    /// The keyed hash of a class's primary-key tuple, stored in the UNIQUE `pk` column.
    package func primaryKeyHash(itemClass: ItemClass, attributes: [String: AttributeValue]) -> Data {
        var mac = indexMAC
        mac.update(data: Array("pk\u{0}\(itemClass.table)\u{0}".utf8))
        for descriptor in itemClass.primaryKey {
            let bytes = attributes[descriptor.code]?.matchBytes ?? []
            var w = BinaryWriter(capacity: bytes.count + 12)
            w.shortString(descriptor.code)
            w.lengthPrefixed(bytes)
            mac.update(data: w.bytes)
        }
        return Data(mac.finalize().prefix(ItemCrypto.hashLength))
    }

    // MARK: Sealing

    /// The plaintext columns of a row that every seal authenticates.
    package struct RowIdentity: Sendable {
        package var table: String
        package var uuid: Data
        package var protection: ProtectionClass
        package var groupHash: Data
        package var primaryKeyHash: Data
        package var sync: Bool
        package var tombstone: Bool

        var metadataAAD: [UInt8] {
            var w = BinaryWriter(capacity: 96)
            w.raw(Array("skc item v1".utf8))
            w.shortString(table)
            w.raw(uuid)
            w.shortString(protection.rawValue)
            w.raw(groupHash)
            w.raw(primaryKeyHash)
            w.u8(sync ? 1 : 0)
            w.u8(tombstone ? 1 : 0)
            return w.bytes
        }

        var keyWrapAAD: [UInt8] {
            Array("skc key v1".utf8) + Array(table.utf8) + [0] + Array(uuid) + Array(protection.rawValue.utf8)
        }

        var secretAAD: [UInt8] { Array("skc secret v1".utf8) + Array(table.utf8) + [0] + Array(uuid) }
    }

    func classKey(_ protection: ProtectionClass) throws(KeychainError) -> SymmetricKey {
        guard let key = classKeys[protection] else { throw locked(protection) }
        return key
    }

    func locked(_ protection: ProtectionClass) -> KeychainError {
        KeychainError(code: .interactionNotAllowed, message: "The keychain is locked for items of protection class \(protection.rawValue). Unlock it and try again.")
    }

    func attributeKey(_ protection: ProtectionClass) throws(KeychainError) -> SymmetricKey {
        guard let key = attributeKeys[protection] else { throw locked(protection) }
        return key
    }

    package func sealAttributes(_ attributes: [String: AttributeValue], row: RowIdentity) throws(KeychainError) -> Data {
        Data(try Seal.seal(ItemRecord.encode(attributes), key: attributeKey(row.protection), aad: row.metadataAAD, random: random))
    }

    package func openAttributes(_ sealed: Data, row: RowIdentity) throws(KeychainError) -> [String: AttributeValue] {
        try ItemRecord.decode(Seal.open(sealed, key: attributeKey(row.protection), aad: row.metadataAAD))
    }

    /// Secret column, version 1: `u8 1 | u32-prefixed wrapped item key | sealed secret`.
    package func sealSecret(_ secret: Data, row: RowIdentity) throws(KeychainError) -> Data {
        let itemKeyBytes = random.bytes(32)
        let wrapped = try Seal.seal(itemKeyBytes, key: classKey(row.protection), aad: row.keyWrapAAD, random: random)
        let sealed = try Seal.seal(secret, key: SymmetricKey(data: itemKeyBytes), aad: row.secretAAD, random: random)
        var w = BinaryWriter(capacity: wrapped.count + sealed.count + 5)
        w.u8(1)
        w.lengthPrefixed(wrapped)
        w.raw(sealed)
        return w.data
    }

    package func openSecret(_ blob: Data, row: RowIdentity) throws(KeychainError) -> Data {
        let (itemKey, sealed) = try unwrapItemKey(blob, row: row)
        return Data(try Seal.open(sealed, key: itemKey, aad: row.secretAAD))
    }

    /// Re-wraps an existing secret's item key for a new protection class (the secret itself is not re-encrypted).
    package func rewrapSecret(_ blob: Data, from old: RowIdentity, to new: RowIdentity) throws(KeychainError) -> Data {
        let (itemKey, sealed) = try unwrapItemKey(blob, row: old)
        let wrapped = try Seal.seal(itemKey.withUnsafeBytes { Array($0) }, key: classKey(new.protection),
                                    aad: new.keyWrapAAD, random: random)
        var w = BinaryWriter(capacity: wrapped.count + sealed.count + 5)
        w.u8(1)
        w.lengthPrefixed(wrapped)
        w.raw(sealed)
        return w.data
    }

    private func unwrapItemKey(_ blob: Data, row: RowIdentity) throws(KeychainError) -> (SymmetricKey, ArraySlice<UInt8>) {
        var r = BinaryReader(blob)
        let corrupt = KeychainError(code: .corruptData, message: "An item's secret is malformed.")
        guard let version = try? r.u8(), version == 1, let wrapped = try? r.lengthPrefixed(),
              let sealed = try? r.take(r.remaining) else { throw corrupt }
        let keyBytes = try Seal.open(wrapped, key: classKey(row.protection), aad: row.keyWrapAAD)
        guard keyBytes.count == 32 else { throw corrupt }
        return (SymmetricKey(data: keyBytes), sealed)
    }
}
