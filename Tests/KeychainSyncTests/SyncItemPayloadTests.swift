import Foundation
@testable import KeychainCore
import KeychainSync
import Testing

/// What a record carries, and which items may leave the device at all.
@Suite("Sync item payloads and eligibility")
struct SyncItemPayloadTests {
    static let attributes: [String: AttributeValue] = [
        "agrp": .string("TEAM.mail"), "svce": .string("mail.example.com"), "acct": .string("ann"),
        "pdmn": .string("ak"), "sync": .int(1), "mdat": .date(Date(timeIntervalSinceReferenceDate: 786_000_000)),
    ]

    @Test("An item's payload: its layout is fixed, and it reads back with the same stamp")
    func layout() throws {
        let payload = SyncItemPayload(
            item: .genericPassword, attributes: Self.attributes, data: Data("hunter2".utf8),
            modified: 1_764_000_000_123, device: "56475aa75463474c0285df5dbf2bcab7")
        #expect(SyncVectors.hex(payload.encoded) == Self.golden)
        let read = try SyncItemPayload(encoded: payload.encoded)
        #expect(read == payload)
        #expect(read.attributes == Self.attributes)
        #expect(read.data == Data("hunter2".utf8))
        #expect(!read.isDeletion)

        let deletion = SyncItemPayload(deletionOf: .internetPassword, modified: 5, device: "d")
        let readDeletion = try SyncItemPayload(encoded: deletion.encoded)
        #expect(readDeletion == deletion)
        #expect(readDeletion.isDeletion)
        #expect(readDeletion.stamp.digest != read.stamp.digest)
    }

    /// Read by hand: the domain, `genp`, not deleted, 1,764,000,000,123 ms, the device, then ItemRecord version 1 with
    /// six attributes in code order (acct, agrp, mdat as a double, pdmn, svce, sync as an integer), a secret present,
    /// `hunter2`.
    static let golden = """
        000000156b6579636861696e2d73796e632f6974656d2f76310000000467656e7000000008000000000000000000000008000001\
        9ab697e87b0000002035363437356161373534363334373463303238356466356462663262636162370000006501000604616363\
        740100000003616e6e046167727001000000095445414d2e6d61696c046d6461740541c76cb4400000000470646d6e0100000002\
        616b047376636501000000106d61696c2e6578616d706c652e636f6d0473796e6303000000000000000100000008000000000000\
        00010000000768756e74657232
        """

    @Test("Malformed payloads are errSecDecode, never a crash")
    func malformed() throws {
        let good = SyncItemPayload(item: .genericPassword, attributes: Self.attributes, data: nil, modified: 1, device: "d").encoded
        for bad in [Data(), good.dropLast(), good + Data([0]), Data(repeating: 0, count: 40), Data(repeating: 1, count: 300_000)] {
            let error = #expect(throws: KeychainError.self) { try SyncItemPayload(encoded: bad) }
            #expect(error?.code == .corruptData)
        }
    }

    @Test(
        "Only synchronizable items whose accessibility may leave the device sync",
        arguments: [
            (["sync": AttributeValue.int(1), "pdmn": .string("ak")], nil as String?),
            (["sync": .int(1), "pdmn": .string("ck")], nil),
            (["sync": .int(1)], nil),
            (["sync": .int(0), "pdmn": .string("ak")], "it is not synchronizable"),
            ([:], "it is not synchronizable"),
            (["sync": .int(1), "pdmn": .string("aku")], "its accessibility is ThisDeviceOnly"),
            (["sync": .int(1), "pdmn": .string("cku")], "its accessibility is ThisDeviceOnly"),
            (["sync": .int(1), "pdmn": .string("dku")], "its accessibility is ThisDeviceOnly"),
            (["sync": .int(1), "pdmn": .string("akpu")], "its accessibility is ThisDeviceOnly"),
            (["sync": .int(1), "tkid": .string("com.example.token")], "its key lives in a token"),
        ])
    func eligibility(attributes: [String: AttributeValue], reason: String?) {
        #expect(SyncEligibility.reasonToStay(itemClass: .genericPassword, attributes: attributes) == reason)
    }

    @Test("An item guarded by the user's presence stays")
    func presence() throws {
        let control = try AccessControl(protection: .whenUnlocked, flags: .userPresence)
        let open = try AccessControl(protection: .whenUnlocked, flags: [])
        let local = try AccessControl(protection: .whenUnlockedThisDeviceOnly, flags: [])
        #expect(
            SyncEligibility.reasonToStay(itemClass: .key, attributes: ["sync": .int(1), "accc": .data(control.encoded)])
                == "it needs the user's presence, which stays with this device")
        #expect(SyncEligibility.reasonToStay(itemClass: .key, attributes: ["sync": .int(1), "accc": .data(open.encoded)]) == nil)
        #expect(
            SyncEligibility.reasonToStay(itemClass: .key, attributes: ["sync": .int(1), "accc": .data(local.encoded)])
                == "its access control's accessibility is ThisDeviceOnly")
        #expect(SyncEligibility.reasonToStay(itemClass: .identity, attributes: ["sync": .int(1)]) != nil)
    }
}
