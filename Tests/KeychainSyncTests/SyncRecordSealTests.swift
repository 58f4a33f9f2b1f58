import Crypto
import Foundation
import KeychainCore
import KeychainSync
import Testing

/// Records sealed at their address: what a server that swaps, moves, replays or alters ciphertext gets.
@Suite("Sync records")
struct SyncRecordSealTests {
    let zoneKey = SyncZoneKey()
    let payload = Data("password for mail.example.com".utf8)

    func open(_ record: SealedSyncRecord) throws -> Data {
        try SyncRecordSeal.open(record, zoneKey: { $0 == zoneKey.keyID ? zoneKey : nil })
    }

    @Test("A record opens where it was sealed; each write has its own item key")
    func roundTrip() throws {
        let first = try SyncRecordSeal.seal(payload, at: SyncVectors.address, zoneKey: zoneKey)
        let second = try SyncRecordSeal.seal(payload, at: SyncVectors.address, zoneKey: zoneKey)
        #expect(try open(first) == payload)
        #expect(first.keyID == zoneKey.keyID)
        #expect(first.wrappedKey != second.wrappedKey)
        #expect(first.ciphertext != second.ciphertext)
        #expect(!first.ciphertext.contains(payload))
    }

    @Test(
        "Moved to another item, version, zone or account, or relabelled with another key: errSecDecode",
        arguments: ["item", "version", "zone", "account"])
    func moved(_ what: String) throws {
        var record = try SyncRecordSeal.seal(payload, at: SyncVectors.address, zoneKey: zoneKey)
        switch what {
        case "item": record.address.itemID = "item-2"
        case "version": record.address.version += 1
        case "zone": record.address.zone = "other"
        default: record.address.account = UUID().uuidString.lowercased()
        }
        let error = #expect(throws: KeychainError.self) { try open(record) }
        #expect(error?.code == .corruptData)
        #expect(error?.status == .decode)
    }

    @Test("Another record's ciphertext with this one's key, a replayed older version, or one flipped bit: errSecDecode")
    func swappedOrAltered() throws {
        let mine = try SyncRecordSeal.seal(payload, at: SyncVectors.address, zoneKey: zoneKey)
        var otherAddress = SyncVectors.address
        otherAddress.itemID = "item-2"
        let other = try SyncRecordSeal.seal(Data("another secret".utf8), at: otherAddress, zoneKey: zoneKey)

        var swapped = mine
        swapped.ciphertext = other.ciphertext
        var replayed = try SyncRecordSeal.seal(Data("old secret".utf8), at: SyncVectors.address, zoneKey: zoneKey)
        replayed.address.version = SyncVectors.address.version + 1  // served as the next version
        var flipped = mine
        flipped.ciphertext[flipped.ciphertext.count / 2] ^= 1
        for record in [swapped, replayed, flipped] {
            let error = #expect(throws: KeychainError.self) { try open(record) }
            #expect(error?.code == .corruptData)
        }
    }

    @Test("Sealed under a zone key this device does not hold: errSecItemNotFound, saying which key")
    func unknownKey() throws {
        let record = try SyncRecordSeal.seal(payload, at: SyncVectors.address, zoneKey: SyncZoneKey())
        let error = #expect(throws: KeychainError.self) { try open(record) }
        #expect(error?.code == .itemNotFound)
        #expect(error?.message.contains(String(record.keyID.prefix(8))) == true)
    }
}
