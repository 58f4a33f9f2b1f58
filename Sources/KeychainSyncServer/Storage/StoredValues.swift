#if Network
import NIOCore

/// An account's signed device list as stored, with the trusted set the server derives from it.
package struct StoredDeviceList: Sendable, Equatable {
    /// The opaque signed blob.
    package var blob: [UInt8]
    /// Its version, counting from 1.
    package var version: Int64
    /// The trusted devices' ids, sorted.
    package var trustedDeviceIDs: [String]
    /// The device that signed the blob.
    package var signer: String
    /// The signer's Ed25519 signature over the blob.
    package var signature: [UInt8]
}

/// A device of an account as stored.
package struct StoredDevice: Sendable, Equatable {
    /// The device id.
    package var id: String
    /// The raw Ed25519 public key.
    package var signingKey: [UInt8]
    /// The raw X25519 public key.
    package var agreementKey: [UInt8]
    /// Its state.
    package var state: DeviceState
    /// The opaque hash of the join code it showed (empty for the first device).
    package var codeHash: [UInt8]
    /// When it asked to join (or was created), in Unix milliseconds.
    package var requestedMillis: Int64
}

/// A zone key wrapped for one device.
package struct StoredZoneKey: Sendable, Equatable {
    /// The key's id.
    package var keyID: String
    /// The device it is wrapped for.
    package var recipient: String
    /// The wrapped key, opaque.
    package var wrapped: [UInt8]
}

/// One record of a zone as stored: the latest version of an item.
package struct StoredRecord: Sendable, Equatable {
    /// The item's id.
    package var itemID: String
    /// Its version, from 1.
    package var version: Int64
    /// Whether it is a tombstone.
    package var deleted: Bool
    /// The sealed item, opaque.
    package var ciphertext: [UInt8]
    /// The item key wrapped with a zone key, opaque.
    package var wrappedKey: [UInt8]
    /// The id of the zone key that wraps `wrappedKey`.
    package var keyID: String
    /// The device that wrote this version.
    package var writer: String
    /// The account sequence number of this version.
    package var seq: Int64
    /// When the server committed it, in Unix milliseconds.
    package var modifiedMillis: Int64
}

/// One write of a batch, as the store receives it.
package struct RecordWrite: Sendable, Equatable {
    /// The item's id.
    package var itemID: String
    /// The version the write replaces (0: the item must not exist).
    package var expectedVersion: Int64
    /// Whether the write is a delete (tombstone).
    package var deleted: Bool
    /// The sealed item.
    package var ciphertext: [UInt8]
    /// The wrapped item key.
    package var wrappedKey: [UInt8]
    /// The zone key's id.
    package var keyID: String

    /// A write with every field given.
    package init(itemID: String, expectedVersion: Int64, deleted: Bool, ciphertext: [UInt8], wrappedKey: [UInt8], keyID: String) {
        self.itemID = itemID
        self.expectedVersion = expectedVersion
        self.deleted = deleted
        self.ciphertext = ciphertext
        self.wrappedKey = wrappedKey
        self.keyID = keyID
    }
}

extension ByteBuffer {
    /// The readable bytes as an array.
    var bytes: [UInt8] { Array(readableBytesView) }
}
#endif
