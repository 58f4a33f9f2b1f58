import Crypto
import Foundation
import KeychainCore
import KeychainSync
import Testing

/// Signed device lists: only a device of the previous version can make the next, so the server (or a removed
/// device) cannot add anyone.
@Suite("Sync device lists and join codes")
struct SyncDeviceListTests {
    let account = SyncVectors.account
    let first = SyncDeviceKeys(), second = SyncDeviceKeys(), outsider = SyncDeviceKeys()

    func entry(_ keys: SyncDeviceKeys, _ name: String) -> SyncDeviceEntry {
        SyncDeviceEntry(keys: keys.publicKeys, name: name, added: 1_700_000_000)
    }

    @Test("The account's first list is signed by its creator; each next one by a device of the one before")
    func chain() throws {
        let v1 = try SyncDeviceList(account: account, version: 1, devices: [entry(first, "laptop")]).signed(by: first)
        let trusted = try v1.verifiedFirst(account: account)
        let v2 = try trusted.successor(adding: [entry(second, "desktop")]).signed(by: first)
        let afterV2 = try v2.verifiedSuccessor(of: trusted)
        #expect(afterV2.devices.map(\.deviceID).sorted() == [first, second].map(\.publicKeys.deviceID).sorted())
        // The new device may sign the next one; the chain from version 1 reaches it.
        let v3 = try afterV2.successor(removing: [first.publicKeys.deviceID]).signed(by: second)
        #expect(try SignedSyncDeviceList.verifiedChain([v1, v2, v3], from: trusted).devices.map(\.deviceID) == [second.publicKeys.deviceID])
    }

    @Test("Refused: signed by a device not in the list before, a removed device, a forged signature, a skipped version, another account")
    func refusals() throws {
        let v1 = try SyncDeviceList(account: account, version: 1, devices: [entry(first, "laptop")])
        let signedV1 = try v1.signed(by: first)
        let byOutsider = try v1.successor(adding: [entry(outsider, "evil")]).signed(by: outsider)
        let selfAdded = try v1.successor(adding: [entry(second, "desktop")]).signed(by: second)
        let v2 = try v1.successor(adding: [entry(second, "desktop")])
        let v3 = try v2.successor(removing: [first.publicKeys.deviceID])
        // `first` was removed in v3; a v4 it signs, re-adding itself, is refused by whoever holds v3.
        let byRemoved = try v3.successor(adding: [entry(first, "laptop")]).signed(by: first)
        let forged = try SignedSyncDeviceList(
            bytes: v2.canonicalBytes, signer: first.publicKeys.deviceID,
            signature: Data(repeating: 7, count: 64))
        let skipped = try v2.successor().signed(by: first)
        let elsewhere = try SyncDeviceList(account: UUID().uuidString.lowercased(), version: 2, devices: [entry(first, "laptop")]).signed(by: first)

        for (offered, trusted) in [(byOutsider, v1), (selfAdded, v1), (byRemoved, v3), (forged, v1), (skipped, v1), (elsewhere, v1)] {
            let error = #expect(throws: KeychainError.self) { try offered.verifiedSuccessor(of: trusted) }
            #expect(error?.code == .verifyFailed)
        }
        // A first list must be version 1, for this account, signed by a device it lists.
        let outsiderFirst = #expect(throws: KeychainError.self) { try byOutsider.verifiedFirst(account: account) }
        #expect(outsiderFirst?.code == .verifyFailed)
        let notListed = try SyncDeviceList(account: account, version: 1, devices: [entry(second, "desktop")]).signed(by: first)
        let error = #expect(throws: KeychainError.self) { try notListed.verifiedFirst(account: account) }
        #expect(error?.code == .verifyFailed)
        #expect(try signedV1.verifiedFirst(account: account) == v1)
    }

    @Test("Malformed list bytes are errSecDecode, never a crash")
    func malformed() throws {
        let bytes = try SyncDeviceList(account: account, version: 1, devices: [entry(first, "a"), entry(second, "b")]).canonicalBytes
        var cases: [Data] = [Data(), bytes.dropLast(), bytes + Data([0]), Data(repeating: 0xff, count: 64)]
        // Entries out of canonical order: swap the two devices' blocks (same lengths: names of one byte).
        let header = bytes.count - 2 * (4 + 32 + 4 + 32 + 4 + 1 + 4 + 8)
        let block = (bytes.count - header) / 2
        cases.append(bytes.prefix(header) + bytes.suffix(block) + bytes.dropFirst(header).prefix(block))
        for data in cases {
            let error = #expect(throws: KeychainError.self) { try SyncDeviceList(canonicalBytes: data) }
            #expect(error?.code == .corruptData)
        }
        let empty = #expect(throws: KeychainError.self) { try SyncDeviceList(account: account, version: 1, devices: []) }
        #expect(empty?.code == .invalidParameter)
        let twice = #expect(throws: KeychainError.self) {
            try SyncDeviceList(account: account, version: 1, devices: [entry(first, "a"), entry(first, "b")])
        }
        #expect(twice?.code == .invalidParameter)
    }

    @Test("A join code is read as people type it; anything else says what a code looks like")
    func joinCodes() throws {
        let code = first.publicKeys.joinCode
        #expect(try SyncJoinCode(parsing: code.description.lowercased()) == code)
        #expect(try SyncJoinCode(parsing: code.characters) == code)
        #expect(try SyncJoinCode(parsing: "YDDQR BW17T").description == "YDDQR-BW17T")
        #expect(try SyncJoinCode(parsing: "ydd0r-bwi7t").description == "YDD0R-BW17T")
        #expect(try SyncJoinCode(parsing: "yddor-bwl7t").description == "YDD0R-BW17T")
        for bad in ["", "YDDQR-BW17", "YDDQR-BW17TT", "YDDQR-BW17U", "é"] {
            let error = #expect(throws: KeychainError.self) { try SyncJoinCode(parsing: bad) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains("XXXXX-XXXXX") == true)
        }
    }
}
