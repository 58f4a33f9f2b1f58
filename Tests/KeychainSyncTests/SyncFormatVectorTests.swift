import Crypto
import Foundation
import KeychainCore
import KeychainSync
import Testing

/// The sync formats fixed by golden vectors, computed independently by `Vectors/make_vectors.py` (hashlib and
/// Python's cryptography): changing any of these bytes is a format change, which devices already in an account
/// would not read.
@Suite("Sync formats (golden vectors)")
struct SyncFormatVectorTests {
    @Test("A device's identifier, fingerprint and join code")
    func deviceNames() throws {
        let keys = try SyncVectors.keys(seed: 0)
        #expect(SyncVectors.hex(keys.publicKeys.signing.rawRepresentation) == "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")
        #expect(SyncVectors.hex(keys.publicKeys.agreement.rawRepresentation) == "358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd166254")
        #expect(keys.publicKeys.deviceID == "56475aa75463474c0285df5dbf2bcab7")
        #expect(keys.publicKeys.fingerprint == "ef98 e081 a17a b6c5 3841 8e7f 630a 97c4")
        #expect(keys.publicKeys.joinCode.description == "YDDQR-BW17T")
    }

    @Test("A record made elsewhere opens at its address, with its nonces, keys and associated data")
    func recordOpens() throws {
        let zoneKey = try SyncZoneKey(keyID: SyncVectors.keyID, key: SymmetricKey(data: Data((100..<132).map { UInt8($0) })))
        let record = SealedSyncRecord(
            address: SyncVectors.address, keyID: SyncVectors.keyID,
            ciphertext: try SyncVectors.data("000102030405060708090a0bb9010c906df821a8f68b42dc36cda3a9a5db72a18390df87df4850f33c523be3251b663402250e"),
            wrappedKey: try SyncVectors.data("0c0d0e0f10111213141516175c965fbe441a2be0c05807ad2c9bd8f69fb1834641b3d1abe5664e36402e8c49115d754da8beb0e8453647e009715f8a"))
        let payload = try SyncRecordSeal.open(record, zoneKey: { $0 == SyncVectors.keyID ? zoneKey : nil })
        #expect(payload == Data("a synced item's payload".utf8))
    }

    @Test("A device list's signed bytes, and a signature made elsewhere verifies")
    func deviceList() throws {
        let laptop = try SyncVectors.keys(seed: 0)
        let desktop = try SyncVectors.keys(seed: 64)
        let list = try SyncDeviceList(
            account: SyncVectors.account, version: 3,
            devices: [
                SyncDeviceEntry(keys: laptop.publicKeys, name: "laptop", added: 1_700_000_000),
                SyncDeviceEntry(keys: desktop.publicKeys, name: "desktop", added: 1_700_000_100),
            ])
        let golden = try SyncVectors.data(
            "0000001c6b6579636861696e2d73796e632f6465766963652d6c6973742f76310000002435663063376135322d336431652d346538622d396136312d326237633064396534663133000000080000000000000003000000080000000000000002000000202543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d00000020675dd574ed7789310b3d2e7681f3790b466c773b1521fecf36577958371ea52f000000076465736b746f7000000008000000006553f1640000002003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b800000020358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd166254000000066c6170746f7000000008000000006553f100"
        )
        #expect(list.canonicalBytes == golden)
        #expect(try SyncDeviceList(canonicalBytes: golden) == list)

        let signed = try SignedSyncDeviceList(
            bytes: golden, signer: laptop.publicKeys.deviceID,
            signature: try SyncVectors.data("f6d3e2b8f1982225ad15861f66379b6ef90c0a0d3e121538e4744b8fa93c38176dc064ac1fc9a21997a88c432da7d85490d5bd3925fb2aae98376976c7bb430e"))
        let before = try SyncDeviceList(
            account: SyncVectors.account, version: 2,
            devices: [SyncDeviceEntry(keys: laptop.publicKeys, name: "laptop", added: 1_700_000_000)])
        #expect(try signed.verifiedSuccessor(of: before) == list)
    }
}

/// The fixed inputs of the vectors.
enum SyncVectors {
    static let account = "5f0c7a52-3d1e-4e8b-9a61-2b7c0d9e4f13"
    static let keyID = "00112233445566778899aabbccddeeff"
    static let address = SyncRecordAddress(account: account, zone: "keychain", itemID: "item-1", version: 7)

    /// Device keys whose private bytes are `seed`, `seed + 1`, … (signing) and `seed + 32`, … (agreement).
    static func keys(seed: Int) throws -> SyncDeviceKeys {
        try SyncDeviceKeys(rawRepresentation: Data((0..<64).map { UInt8((seed + $0) % 256) }))
    }

    static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    struct NotHex: Error {}

    static func data(_ hex: String) throws -> Data {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { throw NotHex() }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }
}
