import Crypto
import Foundation
import KeychainCore

/// Where a record sits: the account, the zone, the item and the version the server gives it. Every byte of a
/// record's encryption is bound to all four (and to the zone key's identifier), so a server that swaps records
/// between items, moves them between accounts or zones, or serves an old version as a new one is caught.
public struct SyncRecordAddress: Sendable, Hashable {
    /// The account (a UUID string).
    public var account: String
    /// The zone (`keychain`).
    public var zone: String
    /// The item's identifier in the zone: random, never derived from the item's attributes.
    public var itemID: String
    /// The version this write makes (the expected version + 1).
    public var version: UInt64

    /// An address.
    public init(account: String, zone: String, itemID: String, version: UInt64) {
        self.account = account
        self.zone = zone
        self.itemID = itemID
        self.version = version
    }

    /// The associated data of the record's ciphertext (`keychain-sync/record/v1`) or of its wrapped item key
    /// (`keychain-sync/item-key/v1`).
    func associatedData(_ domain: String, keyID: String) -> Data {
        var fields = SyncFields(domain: domain)
        fields.append(account)
        fields.append(zone)
        fields.append(itemID)
        fields.append(version)
        fields.append(keyID)
        return fields.data
    }
}

/// A record as the server stores it: nothing in it is readable without the zone key.
public struct SealedSyncRecord: Sendable, Hashable {
    /// Where it belongs.
    public var address: SyncRecordAddress
    /// The zone key that wraps its item key.
    public var keyID: String
    /// AES-256-GCM (nonce, ciphertext, tag) of the payload under the item key.
    public var ciphertext: Data
    /// AES-256-GCM (nonce, ciphertext, tag) of the item key under the zone key.
    public var wrappedKey: Data

    /// A record with these parts (as the server gave them).
    public init(address: SyncRecordAddress, keyID: String, ciphertext: Data, wrappedKey: Data) {
        self.address = address
        self.keyID = keyID
        self.ciphertext = ciphertext
        self.wrappedKey = wrappedKey
    }
}

/// Seals and opens records: a fresh 256-bit key per write encrypts the payload, and the zone key wraps that key,
/// both with AES-256-GCM and associated data naming the record's address and key identifier.
public enum SyncRecordSeal {
    static let recordDomain = "keychain-sync/record/v1"
    static let itemKeyDomain = "keychain-sync/item-key/v1"

    /// `payload` sealed for `address` under a fresh item key wrapped by `zoneKey`.
    public static func seal(_ payload: Data, at address: SyncRecordAddress, zoneKey: SyncZoneKey) throws(KeychainError) -> SealedSyncRecord {
        let itemKey = SymmetricKey(size: .bits256)
        do {
            let ciphertext = try AES.GCM.seal(
                payload, using: itemKey,
                authenticating: address.associatedData(recordDomain, keyID: zoneKey.keyID))
            let wrapped = try itemKey.withUnsafeBytes { key in
                try AES.GCM.seal(
                    Data(key), using: zoneKey.key,
                    authenticating: address.associatedData(itemKeyDomain, keyID: zoneKey.keyID))
            }
            guard let sealed = ciphertext.combined, let wrappedKey = wrapped.combined else {
                throw KeychainError(code: .internal, message: "AES-GCM gave no combined form.")
            }
            return SealedSyncRecord(address: address, keyID: zoneKey.keyID, ciphertext: sealed, wrappedKey: wrappedKey)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(code: .internal, message: "A sync record could not be sealed.", cause: error)
        }
    }

    /// The payload of `record`, opened with the zone key it names (`zoneKey(keyID)`).
    /// - Throws: ``KeychainError`` `itemNotFound` when this device does not hold that zone key (written after it was
    ///   removed, or before it received the key); `corruptData` when the record does not open at its address: moved,
    ///   swapped, replayed under another version, or altered.
    public static func open(_ record: SealedSyncRecord, zoneKey: (String) -> SyncZoneKey?) throws(KeychainError) -> Data {
        guard let key = zoneKey(record.keyID) else {
            throw KeychainError(code: .itemNotFound, message: "Sync record \(record.address.itemID) is sealed with zone key \(record.keyID.prefix(8)), which this device does not hold.")
        }
        do {
            let itemKey = try AES.GCM.open(
                AES.GCM.SealedBox(combined: record.wrappedKey), using: key.key,
                authenticating: record.address.associatedData(itemKeyDomain, keyID: record.keyID))
            guard itemKey.count == 32 else { throw SyncFormatError("the item key is not 32 bytes") }
            return try AES.GCM.open(
                AES.GCM.SealedBox(combined: record.ciphertext), using: SymmetricKey(data: itemKey),
                authenticating: record.address.associatedData(recordDomain, keyID: record.keyID))
        } catch {
            throw KeychainError(
                code: .corruptData,
                message: "Sync record \(record.address.itemID) version \(record.address.version) does not open where the server put it: it was moved, replayed or altered, and is ignored.", cause: nil)
        }
    }
}
