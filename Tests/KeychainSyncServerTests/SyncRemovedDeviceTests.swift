#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import NIOCore
import PostgresNIO
import Testing

/// What a removed device can still get, beyond what ``SyncClientTests`` checks (its rounds refused, a later record
/// not opening with its keys): with three devices, the ones that remain go on with the new zone key, which was never
/// wrapped to the removed one, and even every byte the operator could hand it opens nothing.
@Suite("A removed device", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncRemovedDeviceTests {
    @Test("After a removal the new zone key reaches the devices that remain and never the removed one; nothing written after opens for it")
    func removedDeviceReadsNothingNew() async throws {
        try await TestServers.with { servers in
            let (devices, account) = try await SyncTestDevice.account(of: 3, on: servers)
            let (a, b, c) = (devices[0], devices[1], devices[2])
            try a.add("before.example.com", secret: "old")
            #expect(try await SyncTestDevice.settle(devices) != nil)
            let oldKeys = try b.requiredSession.keyring.zoneKeys()
            #expect(oldKeys.count == 1)

            let bID = try b.deviceID
            // (Zone key identifiers sort by the millisecond they were made in: the new one must come later.)
            a.clock.advance(milliseconds: 1000)
            try await a.requiredSession.removeDevice(bID)
            try a.add("after.example.com", secret: "written after")
            try a.update("before.example.com", secret: "changed after")
            #expect(try await a.sync().uploaded == 2)

            // The device that remains takes the new key and reads both writes.
            let cSummary = try await c.sync()
            #expect(cSummary.applied == 2 && cSummary.rejected == 0)
            #expect(try c.secret("after.example.com") == "written after")
            #expect(try c.secret("before.example.com") == "changed after")
            let newKeys = try c.requiredSession.keyring.zoneKeys()
            #expect(newKeys.count == 2)
            let newKeyID = try #require(Set(newKeys.keys).subtracting(oldKeys.keys).first)

            // Both writes are sealed with the new key; it is wrapped to A and C only.
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account) AND key_id = \(newKeyID)") == 2)
            #expect(try await servers.sqlInt("SELECT count(*) FROM zone_keys WHERE account_id = \(account) AND key_id = \(newKeyID)") == 2)
            #expect(
                try await servers.sqlInt(
                    "SELECT count(*) FROM zone_keys WHERE account_id = \(account) AND key_id = \(newKeyID) AND recipient = \(bID)") == 0)

            // B is refused, and still holds only the old key and the old secrets.
            let refused = await #expect(throws: KeychainError.self) { try await b.sync() }
            #expect(refused?.code == .syncDeviceRemoved)
            // The server's answer (403 `device_removed`) says when, and which device's list removed it.
            let notice = refused?.cause as? SyncRemovalNotice
            #expect(notice?.byDevice == (try a.deviceID))
            #expect(notice?.date != nil)
            #expect(refused?.message.contains("security sync join") == true)
            #expect(try b.requiredSession.keyring.zoneKeys().keys.sorted() == oldKeys.keys.sorted())
            #expect(try b.secret("before.example.com") == "old")
            #expect(try b.secret("after.example.com") == nil)

            // An operator handing B every copy of the new key and every record gets it nothing: the copies are
            // wrapped to other devices' keys, and the records need the key B lacks.
            let bKeys = try b.requiredSession.keyring.deviceKeys()
            let (wrappedCopies, records) = try await TestPostgres.withClient(database: servers.database) { client in
                var copies: [Data] = []
                for try await wrapped in try await client.query(
                    "SELECT wrapped FROM zone_keys WHERE account_id = \(account) AND key_id = \(newKeyID)"
                ).decode(ByteBuffer.self) {
                    copies.append(Data(wrapped.readableBytesView))
                }
                var records: [SealedSyncRecord] = []
                for try await (itemID, version, keyID, ciphertext, wrappedKey) in try await client.query(
                    "SELECT item_id, version, key_id, ciphertext, wrapped_key FROM records WHERE account_id = \(account)"
                ).decode((String, Int64, String, ByteBuffer, ByteBuffer).self) {
                    records.append(
                        SealedSyncRecord(
                            address: SyncRecordAddress(account: account, zone: SyncSession.zone, itemID: itemID, version: UInt64(version)),
                            keyID: keyID, ciphertext: Data(ciphertext.readableBytesView), wrappedKey: Data(wrappedKey.readableBytesView)))
                }
                return (copies, records)
            }
            #expect(wrappedCopies.count == 2)
            for wrapped in wrappedCopies {
                let error = #expect(throws: KeychainError.self) {
                    try SyncZoneKey.unwrap(wrapped, keyID: newKeyID, account: account, device: bKeys)
                }
                #expect(error?.code == .corruptData)
            }
            #expect(records.count == 2)
            for record in records {
                #expect(record.keyID == newKeyID)
                let error = #expect(throws: KeychainError.self) { try SyncRecordSeal.open(record, zoneKey: { oldKeys[$0] }) }
                #expect(error?.code == .itemNotFound)
                // Nor does it open under the old key, relabelled as the new one.
                let relabelled = try #require(oldKeys.values.first)
                let forged = #expect(throws: KeychainError.self) { try SyncRecordSeal.open(record, zoneKey: { _ in relabelled }) }
                #expect(forged?.code == .corruptData)
            }

            // B cannot write either: its batch is refused and the server's records stay as they were.
            let sealed = try SyncRecordSeal.seal(
                SyncItemPayload(deletionOf: .genericPassword, modified: b.clock.nowMilliseconds + 10_000, device: bID).encoded,
                at: SyncRecordAddress(
                    account: account, zone: SyncSession.zone, itemID: records[0].address.itemID,
                    version: records[0].address.version + 1), zoneKey: try #require(oldKeys.values.first))
            let write = await #expect(throws: KeychainError.self) {
                try await b.requiredSession.server.write(account, zone: SyncSession.zone, [(sealed, records[0].address.version, true)])
            }
            #expect(write?.code == .syncDeviceRemoved)
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account) AND NOT deleted") == 2)
        }
    }
}
#endif
