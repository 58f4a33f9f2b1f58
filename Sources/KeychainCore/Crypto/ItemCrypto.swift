import Foundation
import Crypto
import Synchronization

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
    /// Made once: unwrapping runs for every secret a query returns.
    static let malformedSecret = KeychainError(code: .corruptData, message: "An item's secret is malformed.")

    let classKeys: [ProtectionClass: SymmetricKey]
    let attributeKeys: [ProtectionClass: SymmetricKey]
    /// HMAC-SHA256 keyed with the index key, ready for input: each hash starts from a copy, so the key's pads
    /// are computed once per key rather than once per hash.
    let indexMAC: IndexMAC
    let random: any RandomSource
    /// The blind indexes of access groups (and of callers' trusted-application terms) already computed under these
    /// keys, by table, attribute code and value.
    private let groupHashes = GroupHashes()
    private struct GroupKey: Hashable { var table: String; var group: String; var code = "agrp" }
    private final class GroupHashes: Sendable {
        let cache = Mutex<[GroupKey: Data]>([:])
    }

    package init(keybag: Keybag, random: any RandomSource = SystemRandom()) {
        classKeys = keybag.classKeys
        let salt = keybag.metadataKey.withUnsafeBytes { Array($0) }
        attributeKeys = keybag.classKeys.mapValues { key in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key, salt: salt,
                info: Array("swift-keychain attributes v1".utf8), outputByteCount: 32)
        }
        let indexKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: keybag.metadataKey,
            info: Array("swift-keychain index v1".utf8), outputByteCount: 32)
        indexMAC = IndexMAC(key: indexKey)
        self.random = random
    }

    // MARK: Index hashes

    /// The keyed hash of one attribute value, as stored in its `h_<code>` column.
    package func attributeHash(table: String, code: String, value: AttributeValue) -> Data {
        let mac = indexMAC.authenticationCode { message in
            message.update(table)
            message.update(byte: 0)
            message.update(code)
            message.update(byte: 0)
            value.withMatchBytes { message.update($0) }
        }
        return Data(mac.prefix(ItemCrypto.hashLength))
    }

    /// The keyed hash of an access group in `table` (its `h_agrp` value). Every query a caller makes is confined
    /// to its groups, so these are kept once computed; a caller has few groups (the cache is reset past 1,024).
    package func groupHash(table: String, group: String) -> Data {
        let key = GroupKey(table: table, group: group)
        if let hash = groupHashes.cache.withLock({ $0[key] }) { return hash }
        let hash = attributeHash(table: table, code: "agrp", value: .string(group))
        groupHashes.cache.withLock { cache in
            if cache.count >= 1_024 { cache.removeAll() }
            cache[key] = hash
        }
        return hash
    }

    /// The keyed hash of a caller's trusted-application term in `table` (see ``TrustedApplications``): looked up on
    /// a caller's finds, so kept once computed, as access groups' are.
    package func trustedApplicationHash(table: String, term: String) -> Data {
        let key = GroupKey(table: table, group: term, code: TrustedApplications.code)
        if let hash = groupHashes.cache.withLock({ $0[key] }) { return hash }
        let hash = attributeHash(table: table, code: TrustedApplications.code, value: .string(term))
        groupHashes.cache.withLock { cache in
            if cache.count >= 1_024 { cache.removeAll() }
            cache[key] = hash
        }
        return hash
    }

    /// The keyed hash of a class's primary-key tuple, stored in the UNIQUE `pk` column.
    package func primaryKeyHash(itemClass: ItemClass, attributes: [String: AttributeValue]) -> Data {
        let mac = indexMAC.authenticationCode { message in
            message.update("pk\u{0}\(itemClass.table)\u{0}")
            for descriptor in itemClass.primaryKey {
                let bytes = attributes[descriptor.code]?.matchBytes ?? []
                var w = BinaryWriter(capacity: bytes.count + 12)
                w.shortString(descriptor.code)
                w.lengthPrefixed(bytes)
                message.update(w.bytes)
            }
        }
        return Data(mac.prefix(ItemCrypto.hashLength))
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

        // The three authenticated-data strings are built into one preallocated array each: they are made for every
        // row a query opens.

        var metadataAAD: [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(64 + table.utf8.count + uuid.count + groupHash.count + primaryKeyHash.count)
            out.append(contentsOf: "skc item v1".utf8)
            out.append(UInt8(truncatingIfNeeded: table.utf8.count))
            out.append(contentsOf: table.utf8)
            uuid.withUnsafeBytes { out.append(contentsOf: $0) }
            out.append(UInt8(truncatingIfNeeded: protection.rawValue.utf8.count))
            out.append(contentsOf: protection.rawValue.utf8)
            groupHash.withUnsafeBytes { out.append(contentsOf: $0) }
            primaryKeyHash.withUnsafeBytes { out.append(contentsOf: $0) }
            out.append(sync ? 1 : 0)
            out.append(tombstone ? 1 : 0)
            return out
        }

        var keyWrapAAD: [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(32 + table.utf8.count + uuid.count)
            out.append(contentsOf: "skc key v1".utf8)
            out.append(contentsOf: table.utf8)
            out.append(0)
            uuid.withUnsafeBytes { out.append(contentsOf: $0) }
            out.append(contentsOf: protection.rawValue.utf8)
            return out
        }

        var secretAAD: [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(24 + table.utf8.count + uuid.count)
            out.append(contentsOf: "skc secret v1".utf8)
            out.append(contentsOf: table.utf8)
            out.append(0)
            uuid.withUnsafeBytes { out.append(contentsOf: $0) }
            return out
        }
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

    /// Opens a row's sealed attributes (all of them, or only those in `keeping`; see ``ItemRecord/decode(_:keeping:)``).
    package func openAttributes(_ sealed: Data, row: RowIdentity, keeping: [String]? = nil) throws(KeychainError) -> [String: AttributeValue] {
        try ItemRecord.decode(Seal.openData(sealed, key: attributeKey(row.protection), aad: row.metadataAAD), keeping: keeping)
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
        let wrapped = try Seal.seal(
            itemKey.withUnsafeBytes { Array($0) }, key: classKey(new.protection),
            aad: new.keyWrapAAD, random: random)
        var w = BinaryWriter(capacity: wrapped.count + sealed.count + 5)
        w.u8(1)
        w.lengthPrefixed(wrapped)
        w.raw(sealed)
        return w.data
    }

    private func unwrapItemKey(_ blob: Data, row: RowIdentity) throws(KeychainError) -> (SymmetricKey, ArraySlice<UInt8>) {
        var r = BinaryReader(blob)
        let corrupt = ItemCrypto.malformedSecret
        guard let version = try? r.u8(), version == 1, let wrapped = try? r.lengthPrefixed(),
            let sealed = try? r.take(r.remaining)
        else { throw corrupt }
        let keyBytes = try Seal.open(wrapped, key: classKey(row.protection), aad: row.keyWrapAAD)
        guard keyBytes.count == 32 else { throw corrupt }
        return (SymmetricKey(data: keyBytes), sealed)
    }
}
