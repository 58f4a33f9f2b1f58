#if Network
import KeychainSyncAPI
import OpenAPIRuntime

extension StoredDeviceList {
    /// The stored form of a device list the client sent.
    init(_ list: Components.Schemas.DeviceList) {
        self.init(
            blob: Array(list.deviceList.data), version: list.deviceListVersion, trustedDeviceIDs: list.trustedDeviceIds,
            signer: list.signer, signature: Array(list.signature.data)
        )
    }
}

extension Components.Schemas.DeviceList {
    /// The API form of a stored device list.
    init(_ list: StoredDeviceList) {
        self.init(
            deviceList: .init(list.blob), deviceListVersion: list.version, trustedDeviceIds: list.trustedDeviceIDs, signer: list.signer,
            signature: .init(list.signature)
        )
    }
}

extension StoredZoneKey {
    /// The stored form of a wrapped zone key the client sent.
    init(_ key: Components.Schemas.WrappedZoneKey) {
        self.init(keyID: key.keyId, recipient: key.recipient, wrapped: Array(key.wrapped.data))
    }
}

extension Components.Schemas.WrappedZoneKey {
    /// The API form of a stored zone key.
    init(_ key: StoredZoneKey) {
        self.init(keyId: key.keyID, recipient: key.recipient, wrapped: .init(key.wrapped))
    }
}

extension Components.Schemas.PendingDevice {
    /// The API form of a stored pending device.
    init(_ device: StoredDevice) {
        self.init(
            deviceId: device.id, device: .init(signingKey: .init(device.signingKey), agreementKey: .init(device.agreementKey)),
            codeHash: .init(device.codeHash), requested: device.requestedMillis,
            expires: device.requestedMillis + SyncLimits.pendingLifetimeSeconds * 1000
        )
    }
}

extension Components.Schemas.Record {
    /// The API form of a stored record.
    init(_ record: StoredRecord) {
        self.init(
            itemId: record.itemID, version: record.version, deleted: record.deleted, ciphertext: .init(record.ciphertext),
            wrappedKey: .init(record.wrappedKey), keyId: record.keyID, writer: record.writer, seq: record.seq, modified: record.modifiedMillis
        )
    }
}
#endif
