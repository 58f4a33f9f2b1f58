import Foundation
import Crypto

/// The backup file: the whole keychain sealed under a key stretched from a backup password.
///
/// Format, version 1 (big-endian):
/// ```
/// magic "SKBK" | u16 version = 1 | u8 KDF kind = 1 (scrypt) | u32-prefixed KDF parameters (as in the keybag)
/// u32-prefixed sealed payload: AES-256-GCM, key HKDF-SHA256(ikm: scrypt(password), info: "swift-keychain backup v1"),
///                              AAD = every byte before the payload's length
/// payload: u8 version = 1 | u32 count | records
/// record:  u8-prefixed table | u32-prefixed attribute record (ItemRecord) | u8 secret kind | u32-prefixed secret
/// secret kind: 0 none, 1 the secret, 2 device-bound: sealed under HKDF-SHA256(ikm: device key,
///              info: "swift-keychain backup device-bound v1") with AAD = table | 0 | attribute record
/// ```
/// ThisDeviceOnly items carry device-bound secrets, so they can be restored only where `device.key` is the same.
package enum BackupFormat {
    static let magic: [UInt8] = Array("SKBK".utf8)
    static let version: UInt16 = 1

    struct Record {
        var itemClass: ItemClass
        var attributes: [String: AttributeValue]
        var secret: Secret

        enum Secret {
            case none
            case plain(Data)
            case deviceBound([UInt8])
        }
    }

    static func backupKey(password: String, parameters: PasscodeKDF) throws(KeychainError) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: try parameters.derive(password), info: Array("swift-keychain backup v1".utf8), outputByteCount: 32)
    }

    static func deviceBoundKey(_ deviceKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: deviceKey, info: Array("swift-keychain backup device-bound v1".utf8), outputByteCount: 32)
    }

    static func encode(_ records: [Record], password: String, parameters: PasscodeKDF, random: any RandomSource) throws(KeychainError) -> [UInt8] {
        var payload = BinaryWriter(capacity: 256 * records.count + 8)
        payload.u8(1)
        payload.u32(UInt32(records.count))
        for record in records {
            payload.shortString(record.itemClass.table)
            payload.lengthPrefixed(ItemRecord.encode(record.attributes))
            switch record.secret {
            case .none: payload.u8(0); payload.lengthPrefixed([UInt8]())
            case .plain(let data): payload.u8(1); payload.lengthPrefixed(data)
            case .deviceBound(let sealed): payload.u8(2); payload.lengthPrefixed(sealed)
            }
        }
        var header = BinaryWriter(capacity: 64)
        header.raw(magic)
        header.u16(version)
        header.u8(PasscodeKDF.scryptKind)
        header.lengthPrefixed(parameters.encoded)
        let sealed = try Seal.seal(payload.bytes, key: backupKey(password: password, parameters: parameters), aad: header.bytes, random: random)
        var out = header
        out.lengthPrefixed(sealed)
        return out.bytes
    }

    static func decode(_ bytes: some Sequence<UInt8>, password: String) throws(KeychainError) -> [Record] {
        let all = Array(bytes)
        let corrupt = KeychainError(code: .corruptData, message: "This is not a swift-keychain backup, or it is truncated or damaged. Nothing was restored.")
        var r = BinaryReader(all, truncated: corrupt)
        let parameters: PasscodeKDF
        let sealed: ArraySlice<UInt8>
        let headerLength: Int
        guard Array(try r.take(4)) == magic else { throw corrupt }
        guard try r.u16() == version, try r.u8() == PasscodeKDF.scryptKind else { throw corrupt }
        parameters = try PasscodeKDF(decoding: try r.lengthPrefixed())
        headerLength = r.offset
        sealed = try r.lengthPrefixed()
        guard r.isAtEnd else { throw corrupt }
        let plaintext: [UInt8]
        do {
            plaintext = try Seal.open(sealed, key: backupKey(password: password, parameters: parameters), aad: all[0..<headerLength])
        } catch {
            // GCM cannot tell a wrong password from a damaged file; say both.
            throw KeychainError(code: .authenticationFailed, message: "The backup password is wrong, or the backup was damaged or tampered with. Nothing was restored.")
        }
        var p = BinaryReader(plaintext, truncated: corrupt)
        guard try p.u8() == 1 else { throw corrupt }
        let count = try p.u32()
        var records: [Record] = []
        for _ in 0..<count {
            guard let cls = ItemClass(rawValue: try p.shortString()), ItemClass.stored.contains(cls) else { throw corrupt }
            let attributes = try ItemRecord.decode(try p.lengthPrefixed())
            let kind = try p.u8()
            let secret = try p.lengthPrefixed()
            switch kind {
            case 0: records.append(Record(itemClass: cls, attributes: attributes, secret: .none))
            case 1: records.append(Record(itemClass: cls, attributes: attributes, secret: .plain(Data(secret))))
            case 2: records.append(Record(itemClass: cls, attributes: attributes, secret: .deviceBound(Array(secret))))
            default: throw corrupt
            }
        }
        guard p.isAtEnd else { throw corrupt }
        return records
    }

    static func deviceBoundAAD(_ cls: ItemClass, _ attributes: [String: AttributeValue]) -> [UInt8] {
        Array(cls.table.utf8) + [0] + ItemRecord.encode(attributes)
    }
}
