import Crypto
import Foundation
import Testing
@testable import KeychainCore

/// The blind indexes' HMAC-SHA256 (over libcrypto, with each key's pads hashed once) against RFC 4231's vectors and
/// swift-crypto's `HMAC<SHA256>`: a change here would make every stored index unfindable.
@Suite struct IndexMACTests {
    func mac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        IndexMAC(key: SymmetricKey(data: key)).authenticationCode { $0.update(message) }
    }

    @Test func rfc4231Vectors() {
        // Test case 1: key 20 × 0x0b, "Hi There".
        #expect(
            hex(mac([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Test case 2: key "Jefe", "what do ya want for nothing?".
        #expect(
            hex(mac(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a 131-byte key (hashed first), "Test Using Larger Than Block-Size Key - Hash Key First".
        #expect(
            hex(mac([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func agreesWithSwiftCryptoInPiecesAndWhole() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 31, 55, 56, 63, 64, 65, 200, 1_000] {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
            let split = message.count / 3
            let pieces = IndexMAC(key: SymmetricKey(data: key)).authenticationCode { m in
                m.update(message[..<split])
                m.update(byte: message.count > split ? message[split] : 0)
                if message.count > split + 1 { m.update(message[(split + 1)...]) }
            }
            #expect(mac(key, message) == expected, "length \(length)")
            if message.count > split { #expect(pieces == expected, "pieces, length \(length)") }
        }
    }

    @Test func primaryKeyHashIsTheDocumentedHMAC() throws {
        let keybag = fixedKeybag()
        let crypto = ItemCrypto(keybag: keybag)
        let attributes: [String: AttributeValue] = ["acct": .string("alice"), "svce": .string("mail"), "agrp": .string("g")]
        // As written down in ItemCrypto: HMAC(index key, "pk\0genp\0" ‖ per primary-key attribute: u8-prefixed code ‖
        // u32-prefixed match bytes), truncated to 16 bytes.
        let indexKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: keybag.metadataKey, info: Array("swift-keychain index v1".utf8), outputByteCount: 32)
        var message = Array("pk\u{0}genp\u{0}".utf8)
        for descriptor in ItemClass.genericPassword.primaryKey {
            let bytes = attributes[descriptor.code]?.matchBytes ?? []
            var w = BinaryWriter()
            w.shortString(descriptor.code)
            w.lengthPrefixed(bytes)
            message += w.bytes
        }
        let expected = Data(HMAC<SHA256>.authenticationCode(for: message, using: indexKey).prefix(16))
        #expect(crypto.primaryKeyHash(itemClass: .genericPassword, attributes: attributes) == expected)
        #expect(crypto.groupHash(table: "genp", group: "g") == crypto.attributeHash(table: "genp", code: "agrp", value: .string("g")))
    }
}
