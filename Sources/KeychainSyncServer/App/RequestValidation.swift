#if Network
import Foundation
import KeychainSyncAPI
import OpenAPIRuntime

/// The checks on what a client sends that the OpenAPI types do not make, each failing with a message naming the
/// rule (400).
enum RequestValidation {
    /// A name (zone or key id): 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    static func name(_ value: String, what: String) throws(SyncFailure) {
        guard (1...SyncLimits.maximumNameLength).contains(value.utf8.count),
            value.utf8.allSatisfy({ isNameByte($0) })
        else {
            throw .badRequest("\(what) must be 1 to \(SyncLimits.maximumNameLength) characters of A-Z a-z 0-9 . _ - (got \(value.utf8.count) bytes).")
        }
    }

    /// An item id: 1 to 128 UTF-8 bytes, no control characters.
    static func itemID(_ value: String) throws(SyncFailure) {
        guard (1...SyncLimits.maximumItemIDLength).contains(value.utf8.count), !value.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw .badRequest("item_id must be 1 to \(SyncLimits.maximumItemIDLength) bytes of UTF-8 without control characters.")
        }
    }

    /// An account id: a lowercase UUID.
    static func accountID(_ value: String) throws(SyncFailure) {
        guard UUID(uuidString: value) != nil, value == value.lowercased() else {
            throw .badRequest("The account id must be a UUID in lowercase, such as 3f2c1a8e-0b7d-4c1e-9a52-6d0e8f4b2a71.")
        }
    }

    /// A device id: 32 lowercase hex characters.
    static func deviceID(_ value: String, what: String) throws(SyncFailure) {
        guard DeviceIdentity.isWellFormed(value) else {
            throw .badRequest("\(what) must be a device id: 32 lowercase hex characters.")
        }
    }

    /// A byte string no longer than `limit`.
    static func bytes(_ value: Base64EncodedData, atMost limit: Int, what: String, allowEmpty: Bool = true) throws(SyncFailure) {
        guard value.data.count <= limit, allowEmpty || !value.data.isEmpty else {
            throw .badRequest("\(what) must be \(allowEmpty ? "at most" : "1 to") \(limit) bytes (got \(value.data.count)).")
        }
    }

    /// A raw 32-byte public key.
    static func publicKey(_ value: Base64EncodedData, what: String) throws(SyncFailure) {
        guard value.data.count == DeviceIdentity.publicKeyLength else {
            throw .badRequest("\(what) must be the raw 32-byte public key (got \(value.data.count) bytes).")
        }
    }

    /// A device list: blob and ids within bounds, ids well formed and distinct.
    static func deviceList(_ list: Components.Schemas.DeviceList) throws(SyncFailure) {
        try bytes(list.deviceList, atMost: SyncLimits.maximumDeviceListBytes, what: "device_list", allowEmpty: false)
        guard (1...SyncLimits.maximumDevicesPerList).contains(list.trustedDeviceIds.count) else {
            throw .badRequest("trusted_device_ids must name 1 to \(SyncLimits.maximumDevicesPerList) devices.")
        }
        for id in list.trustedDeviceIds { try deviceID(id, what: "Each of trusted_device_ids") }
        guard Set(list.trustedDeviceIds).count == list.trustedDeviceIds.count else {
            throw .badRequest("trusted_device_ids names a device twice: name each once.")
        }
        try deviceID(list.signer, what: "signer")
        guard list.signature.data.count == 64 else {
            throw .badRequest("signature must be a 64-byte Ed25519 signature over device_list.")
        }
    }

    /// Zone keys: at most 256, each within bounds.
    static func zoneKeys(_ keys: [Components.Schemas.WrappedZoneKey]) throws(SyncFailure) {
        guard keys.count <= SyncLimits.maximumZoneKeysPerUpload else {
            throw .badRequest("At most \(SyncLimits.maximumZoneKeysPerUpload) zone keys per request (got \(keys.count)).")
        }
        for key in keys {
            try name(key.keyId, what: "key_id")
            try deviceID(key.recipient, what: "recipient")
            try bytes(key.wrapped, atMost: SyncLimits.maximumWrappedZoneKeyBytes, what: "wrapped", allowEmpty: false)
        }
    }

    /// A write batch: 1 to 500 writes, each within bounds, each item once.
    static func writes(_ writes: [Components.Schemas.RecordWrite]) throws(SyncFailure) {
        guard (1...SyncLimits.maximumWritesPerBatch).contains(writes.count) else {
            throw .badRequest(
                "A batch holds 1 to \(SyncLimits.maximumWritesPerBatch) writes (got \(writes.count)): split it into several requests."
            )
        }
        var seen = Set<String>()
        for write in writes {
            try itemID(write.itemId)
            guard seen.insert(write.itemId).inserted else {
                throw .badRequest("The batch writes item \(write.itemId) twice: write each item once per batch.")
            }
            guard write.expectedVersion >= 0 else { throw .badRequest("expected_version must be 0 or more.") }
            try bytes(write.ciphertext, atMost: SyncLimits.maximumCiphertextBytes, what: "ciphertext")
            try bytes(write.wrappedKey, atMost: SyncLimits.maximumWrappedKeyBytes, what: "wrapped_key")
            try name(write.keyId, what: "key_id")
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
#endif
