import Crypto
import Foundation
import KeychainCore
import KeychainSync
import Testing

/// Zone keys wrapped to devices with HPKE, and what a removed device can still read.
@Suite("Sync zone keys")
struct SyncZoneKeyTests {
    let account = SyncVectors.account

    @Test("Wrapped to a device, the key opens on that device only, for that account and key identifier")
    func wrapping() throws {
        let zone = SyncZoneKey()
        let device = SyncDeviceKeys()
        let wrapped = try zone.wrapped(to: device.publicKeys, account: account)
        let opened = try SyncZoneKey.unwrap(wrapped, keyID: zone.keyID, account: account, device: device)
        #expect(opened.keyID == zone.keyID)
        #expect(opened.key == zone.key)

        let attempts: [() throws -> SyncZoneKey] = [
            { try SyncZoneKey.unwrap(wrapped, keyID: zone.keyID, account: account, device: SyncDeviceKeys()) },
            { try SyncZoneKey.unwrap(wrapped, keyID: zone.keyID, account: UUID().uuidString, device: device) },
            { try SyncZoneKey.unwrap(wrapped, keyID: SyncZoneKey().keyID, account: account, device: device) },
            { try SyncZoneKey.unwrap(wrapped.dropLast(), keyID: zone.keyID, account: account, device: device) },
            { try SyncZoneKey.unwrap(Data(), keyID: zone.keyID, account: account, device: device) },
        ]
        for attempt in attempts {
            let error = #expect(throws: KeychainError.self) { try attempt() }
            #expect(error?.code == .corruptData)
        }
    }

    @Test("After removal the zone key is rotated: the removed device opens what was written before, nothing after")
    func removedDevice() throws {
        let kept = SyncDeviceKeys(), removed = SyncDeviceKeys()
        let before = SyncZoneKey()
        var held: [String: SyncZoneKey] = [:]
        for device in [kept, removed] {
            let wrapped = try before.wrapped(to: device.publicKeys, account: account)
            if device.publicKeys == removed.publicKeys {
                held[before.keyID] = try SyncZoneKey.unwrap(wrapped, keyID: before.keyID, account: account, device: removed)
            }
        }
        let old = try SyncRecordSeal.seal(Data("before".utf8), at: SyncVectors.address, zoneKey: before)
        #expect(try SyncRecordSeal.open(old, zoneKey: { held[$0] }) == Data("before".utf8))

        // Rotation: a new key wrapped to the devices that remain only.
        let after = SyncZoneKey()
        let keptWrapping = try after.wrapped(to: kept.publicKeys, account: account)
        var next = SyncVectors.address
        next.version += 1
        let new = try SyncRecordSeal.seal(Data("after".utf8), at: next, zoneKey: after)
        let unheld = #expect(throws: KeychainError.self) { try SyncRecordSeal.open(new, zoneKey: { held[$0] }) }
        #expect(unheld?.code == .itemNotFound)
        // Even given the remaining device's wrapping (the server has it), the removed device cannot open it.
        let stolen = #expect(throws: KeychainError.self) {
            try SyncZoneKey.unwrap(keptWrapping, keyID: after.keyID, account: account, device: removed)
        }
        #expect(stolen?.code == .corruptData)
        let keptKey = try SyncZoneKey.unwrap(keptWrapping, keyID: after.keyID, account: account, device: kept)
        #expect(try SyncRecordSeal.open(new, zoneKey: { $0 == after.keyID ? keptKey : nil }) == Data("after".utf8))
    }

    @Test("Stored device keys come back as the same device; damaged ones are refused")
    func deviceKeysStored() throws {
        let keys = SyncDeviceKeys()
        #expect(try SyncDeviceKeys(rawRepresentation: keys.rawRepresentation).publicKeys == keys.publicKeys)
        let error = #expect(throws: KeychainError.self) { try SyncDeviceKeys(rawRepresentation: keys.rawRepresentation.dropLast()) }
        #expect(error?.code == .corruptData)
    }
}
