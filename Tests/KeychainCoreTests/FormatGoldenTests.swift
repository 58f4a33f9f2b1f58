import Foundation
import KeychainTestSupport
import Testing
import Crypto
@testable import KeychainCore

/// A deterministic byte source: byte i of the stream is `(seed + i) & 0xff`.
final class CountingRandom: RandomSource, @unchecked Sendable {
    private var next: UInt8
    private let lock = NSLock()
    init(seed: UInt8) { next = seed }
    func bytes(_ count: Int) -> [UInt8] {
        lock.lock(); defer { lock.unlock() }
        return (0..<count).map { _ in
            defer { next &+= 1 }; return next
        }
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
func unhex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex) {
        out.append(UInt8(s[i..<j], radix: 16) ?? 0); i = j
    }
    return out
}

let deviceKey = SymmetricKey(data: [UInt8](repeating: 0xD1, count: 32))

func fixedKeybag() -> Keybag {
    var keys: [ProtectionClass: SymmetricKey] = [:]
    for cls in ProtectionClass.allCases { keys[cls] = SymmetricKey(data: [UInt8](repeating: cls.keybagID, count: 32)) }
    return Keybag(uuid: Array(0x10..<0x20), classKeys: keys, metadataKey: SymmetricKey(data: [UInt8](repeating: 0x80, count: 32)))
}

/// The on-disk formats are pinned: a change to any of these bytes is a format change, to be made on purpose
/// (with a new version number and a migration), never by accident.
@Suite struct FormatGoldenTests {
    @Test func keybagFormatV1() throws {
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey, random: CountingRandom(seed: 0))
        #expect(hex(bytes) == Golden.keybagV1)
        // And the golden file still decodes to the same keys.
        let decoded = try Keybag.decode(unhex(Golden.keybagV1), deviceKey: deviceKey)
        #expect(decoded.uuid == Array(0x10..<0x20))
        for cls in ProtectionClass.allCases {
            #expect(decoded.classKeys[cls]?.withUnsafeBytes { Array($0) } == [UInt8](repeating: cls.keybagID, count: 32))
        }
        #expect(decoded.metadataKey.withUnsafeBytes { Array($0) } == [UInt8](repeating: 0x80, count: 32))
    }

    @Test func itemRecordFormatV1() {
        let record = ItemRecord.encode([
            "acct": .string("alice"), "gena": .data(Data([0, 1, 2])), "port": .int(-443),
            "cdat": .date(Date(timeIntervalSinceReferenceDate: 1_000_000)), "xdbl": .double(1.5),
        ])
        #expect(hex(record) == Golden.itemRecordV1)
    }

    @Test func secretBlobFormatV1() throws {
        let crypto = ItemCrypto(keybag: fixedKeybag(), random: CountingRandom(seed: 0x40))
        let row = ItemCrypto.RowIdentity(
            table: "genp", uuid: Data(repeating: 0xAB, count: 16), protection: .whenUnlocked,
            groupHash: Data(repeating: 1, count: 16), primaryKeyHash: Data(repeating: 2, count: 16),
            sync: false, tombstone: false)
        let blob = try crypto.sealSecret(Data("s3cret".utf8), row: row)
        #expect(hex(blob) == Golden.secretBlobV1)
        #expect(try crypto.openSecret(Data(unhex(Golden.secretBlobV1)), row: row) == Data("s3cret".utf8))
        let meta = try crypto.sealAttributes(["acct": .string("alice")], row: row)
        #expect(hex(meta) == Golden.metadataBlobV1)
        // Index hashes are pinned as well: they are what equality search and UNIQUE compare.
        #expect(hex(crypto.attributeHash(table: "genp", code: "acct", value: .string("alice"))) == Golden.acctHash)
        #expect(
            hex(crypto.primaryKeyHash(itemClass: .genericPassword, attributes: ["acct": .string("alice"), "svce": .string("s"), "agrp": .string("g"), "sync": .int(0)])) == Golden.genpPrimaryKeyHash)
    }
}

@Suite struct TamperTests {
    let crypto = ItemCrypto(keybag: fixedKeybag())
    let row = ItemCrypto.RowIdentity(
        table: "genp", uuid: Data(repeating: 0xAB, count: 16), protection: .whenUnlocked,
        groupHash: Data(repeating: 1, count: 16), primaryKeyHash: Data(repeating: 2, count: 16),
        sync: false, tombstone: false)

    @Test func anyChangeToTheRowIdentityFailsAuthentication() throws {
        let meta = try crypto.sealAttributes(["acct": .string("alice")], row: row)
        let secret = try crypto.sealSecret(Data("x".utf8), row: row)
        var variants: [ItemCrypto.RowIdentity] = []
        var v = row; v.table = "inet"; variants.append(v)
        v = row; v.uuid = Data(repeating: 0xAC, count: 16); variants.append(v)
        v = row; v.protection = .always; variants.append(v)
        v = row; v.groupHash = Data(repeating: 9, count: 16); variants.append(v)
        v = row; v.primaryKeyHash = Data(repeating: 9, count: 16); variants.append(v)
        v = row; v.sync = true; variants.append(v)
        v = row; v.tombstone = true; variants.append(v)
        for other in variants {
            expectKeychainError(.corruptData) { try crypto.openAttributes(meta, row: other) }
        }
        // The secret is bound to table, UUID and protection class.
        for other in variants.prefix(3) {
            expectKeychainError(.corruptData) { try crypto.openSecret(secret, row: other) }
        }
        #expect(try crypto.openAttributes(meta, row: row) == ["acct": .string("alice")])
    }

    @Test func flippedOrTruncatedBytesAreDecodeErrors() throws {
        let secret = try crypto.sealSecret(Data("secret".utf8), row: row)
        for index in [0, 3, 10, secret.count / 2, secret.count - 1] {
            var damaged = secret
            damaged[index] ^= 0x01
            do {
                _ = try crypto.openSecret(damaged, row: row)
                Issue.record("byte \(index) flipped but the secret still opened")
            } catch {
                #expect(error.status == .decode)
            }
        }
        for length in [0, 1, 5, secret.count - 1] {
            expectKeychainError(.corruptData) { try crypto.openSecret(secret.prefix(length), row: row) }
        }
    }

    @Test func keybagRejectsWrongDeviceKeyTruncationAndGarbage() throws {
        let bytes = try fixedKeybag().encode(deviceKey: deviceKey)
        expectKeychainError(.corruptData) { try Keybag.decode(bytes, deviceKey: SymmetricKey(size: .bits256)) }
        for length in [0, 3, 10, bytes.count / 2, bytes.count - 1] {
            expectKeychainError(.corruptData) { try Keybag.decode(bytes.prefix(length), deviceKey: deviceKey) }
        }
        expectKeychainError(.corruptData) { try Keybag.decode(bytes + [0], deviceKey: deviceKey) }
        expectKeychainError(.corruptData) { try ItemRecord.decode([1, 0, 5, 4]) }
        expectKeychainError(.corruptData) { try ItemRecord.decode([]) }
    }
}

@Suite struct SchemaTests {
    @Test func primaryKeysAreApples() {
        #expect(ItemClass.genericPassword.primaryKey.map(\.code).sorted() == ["acct", "agrp", "ggrp", "svce", "sync", "tkid", "vwht"])
        #expect(ItemClass.internetPassword.primaryKey.map(\.code).sorted() == ["acct", "agrp", "atyp", "ggrp", "path", "port", "ptcl", "sdmn", "srvr", "sync", "tkid", "vwht"])
        #expect(ItemClass.certificate.primaryKey.map(\.code).sorted() == ["agrp", "ctyp", "ggrp", "issr", "slnr", "sync", "tkid", "vwht"])
        #expect(ItemClass.key.primaryKey.map(\.code).sorted() == ["agrp", "atag", "bsiz", "crtr", "edat", "esiz", "ggrp", "kcls", "klbl", "sdat", "sync", "tkid", "type", "vwht"])
        #expect(ItemClass.certificate.defaultAccessibility == .always)
        #expect(ItemClass.genericPassword.defaultAccessibility == .whenUnlocked)
        #expect(ItemClass.identity.attribute("atag") != nil && ItemClass.identity.attribute("issr") != nil)
        #expect(ItemClass.certificate.attribute("atag") == nil)
    }

    @Test func everyClassHasTheCommonAttributes() {
        for cls in ItemClass.allCases {
            for code in ["cdat", "mdat", "agrp", "pdmn", "sync", "tomb", "labl"] {
                #expect(cls.attribute(code) != nil, "\(cls) lacks \(code)")
            }
            #expect(cls.attribute("cdat")?.readOnly == true)
        }
    }
}
