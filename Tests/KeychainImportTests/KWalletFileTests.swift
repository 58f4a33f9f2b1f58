import Foundation
import Testing
import KeychainCore
import KeychainTestSupport

@testable import KeychainImport

/// Reads the wallet file under Fixtures/ (see its README.md: a real wallet written by kwalletd5), wallets of both
/// KDE eras built here, and damaged, truncated and foreign files.
@Suite struct KWalletFileTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let modified = Date(timeIntervalSince1970: 1_700_000_000)
    static let frameworksPassword = "correct horse battery staple"

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: fixtures.appendingPathComponent(name))
    }

    static func readFrameworks(_ data: Data? = nil, password: String = frameworksPassword, salt: Data?? = nil) throws -> ImportedCollection {
        let wallet = try data ?? fixture("kdewallet.kwl")
        let salt = try salt ?? fixture("kdewallet.salt")
        return try KWalletFile.read(wallet, password: password, salt: salt, name: "kdewallet", modified: modified)
    }

    static func item(_ collection: ImportedCollection, _ label: String) -> SecretServiceImportItem? {
        collection.items.first { $0.label == label }
    }

    // MARK: A wallet written by kwalletd5 (format 0.1, Blowfish CBC, PBKDF2-SHA512)

    @Test func readsEveryEntryOfAFrameworksWallet() throws {
        let collection = try Self.readFrameworks()
        #expect(collection.label == "kdewallet")
        #expect(collection.isDefault)
        #expect(collection.dates == nil)
        #expect(collection.notImported.isEmpty)
        #expect(
            collection.items.map(\.label).sorted()
                == ["Binary Stuff/blob", "Form Data/site.example", "Passwords/empty", "Passwords/https://example.com"])
        let dates = ItemDates(created: Self.modified, modified: Self.modified)

        let password = try #require(Self.item(collection, "Passwords/https://example.com"))
        #expect(password.attributes == ["kwallet-folder": "Passwords", "kwallet-key": "https://example.com", "kwallet-type": "password"])
        #expect(password.secret == Data("s3cr3t-pässwörd ✓".utf8))
        #expect(password.contentType == "text/plain")
        #expect(password.dates == dates)

        let empty = try #require(Self.item(collection, "Passwords/empty"))
        #expect(empty.attributes == ["kwallet-folder": "Passwords", "kwallet-key": "empty", "kwallet-type": "password"])
        #expect(empty.secret.isEmpty)
        #expect(empty.contentType == "text/plain")

        let blob = try #require(Self.item(collection, "Binary Stuff/blob"))
        #expect(blob.attributes == ["kwallet-folder": "Binary Stuff", "kwallet-key": "blob", "kwallet-type": "binary"])
        #expect(blob.secret == Data([0, 1, 2, 0xFE, 0xFF, 0x80, 0x7F, 10]))
        #expect(blob.contentType == "application/octet-stream")
        #expect(blob.dates == dates)

        let map = try #require(Self.item(collection, "Form Data/site.example"))
        #expect(map.attributes == ["kwallet-folder": "Form Data", "kwallet-key": "site.example", "kwallet-type": "map"])
        #expect(String(decoding: map.secret, as: UTF8.self) == #"{"login":"alice","password":"hunter2","üñí":"çødé"}"#)
        #expect(map.contentType == "application/json")
    }

    @Test func refusesAWrongPassword() throws {
        expectKeychainError(.authenticationFailed) { try Self.readFrameworks(password: "correct horse battery stapler") }
        expectKeychainError(.authenticationFailed) { try Self.readFrameworks(password: "") }
        expectKeychainError(.authenticationFailed) { try Self.readFrameworks(salt: Data(repeating: 7, count: 56)) }
        do {
            _ = try Self.readFrameworks(password: "nope")
        } catch let error as KeychainError {
            #expect(error.message.hasPrefix("The password does not open wallet 'kdewallet'."))
        }
    }

    @Test func needsTheSaltOfAFormat01Wallet() throws {
        expectKeychainError(.invalidParameter) { try Self.readFrameworks(salt: .some(nil)) }
        expectKeychainError(.invalidParameter) { try Self.readFrameworks(salt: Data()) }
    }

    @Test func reportsATruncatedWalletAsDamaged() throws {
        let wallet = try Self.fixture("kdewallet.kwl")
        // Within the magic, the header, the digest table; then blocks off the end, and a part of a block.
        for length in [0, 5, 14, 17, 60, wallet.count - 8, wallet.count - 64, wallet.count - 3] {
            expectKeychainError(.corruptData, "length \(length)") { try Self.readFrameworks(wallet.prefix(length)) }
        }
    }

    @Test func reportsAChangedByteAsDamaged() throws {
        var wallet = try Self.fixture("kdewallet.kwl")
        wallet[wallet.count - 100] ^= 0x40
        expectKeychainError(.corruptData) { try Self.readFrameworks(wallet) }
    }

    @Test func refusesFilesThatAreNoWallets() throws {
        let salt = try Self.fixture("kdewallet.salt")
        for data in [Data(), Data("hello, world: this is not a wallet at all, is it".utf8), salt] {
            expectKeychainError(.corruptData) { try KWalletFile.read(data, password: "x", salt: salt, name: "w", modified: Self.modified) }
        }
        #expect(!KWalletFile.isWallet(salt))
        #expect(KWalletFile.isWallet(try Self.fixture("kdewallet.kwl")))
    }

    @Test func refusesGPGWalletsAndUnknownFormats() throws {
        let magic = Array("KWALLET\n\r\0\r\n".utf8)
        let gpg = Data(magic + [0, 1, 2, 0] + Array(repeating: 0x85, count: 64))
        do {
            _ = try KWalletFile.read(gpg, password: "", salt: nil, name: "gpgwallet", modified: Self.modified)
            Issue.record("a GPG wallet was read")
        } catch {
            #expect(error.code == .unimplemented)
            #expect(error.message.contains("GPG"))
        }
        for header: [UInt8] in [[1, 0, 3, 2], [0, 2, 3, 2], [0, 1, 1, 2], [0, 1, 3, 1], [0, 0, 7, 0]] {
            let data = Data(magic + header + Array(repeating: 0, count: 64))
            expectKeychainError(.unimplemented) { try KWalletFile.read(data, password: "", salt: Data([1]), name: "w", modified: Self.modified) }
        }
    }

    // MARK: Wallets built here (what no fixture has)

    /// A wallet of `format` built as KWallet's `BlowfishPersistHandler::write` does, with the byte orders `sha` and
    /// `blowfish`.
    static func build(
        _ body: [UInt8], key: [UInt8], minor: UInt8, cipher: UInt8, hash: UInt8, sha: KWalletWordOrder, blowfish: KWalletWordOrder
    ) throws -> Data {
        var plain: [UInt8] = Array(repeating: 0x5A, count: 8)
        plain += [UInt8(body.count >> 24 & 0xFF), UInt8(body.count >> 16 & 0xFF), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)]
        plain += body
        let delta = 8 - (plain.count + 20) % 8
        plain += Array(repeating: 0xA5, count: delta) + KWalletSHA1.hash(body, order: sha)
        let cipherText = try #require(Blowfish(key: key)).encrypt(plain, mode: cipher == 0 ? .ecb : .cbc, order: blowfish)
        return Data(Array("KWALLET\n\r\0\r\n".utf8) + [0, minor, cipher, hash] + [0, 0, 0, 0] + cipherText)
    }

    static func qString(_ string: String) -> [UInt8] {
        let units = Array(string.utf16)
        var bytes = uint32(units.count * 2)
        for unit in units {
            bytes += [UInt8(unit >> 8), UInt8(unit & 0xFF)]
        }
        return bytes
    }

    static func uint32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func entry(_ key: String, type: Int, value: [UInt8]) -> [UInt8] {
        qString(key) + uint32(type) + uint32(value.count) + value
    }

    @Test(arguments: [(KWalletWordOrder.littleEndian, KWalletWordOrder.bigEndian), (.bigEndian, .littleEndian)])
    func readsLegacyKeysOfEveryLengthAndReportsUnknownTypes(sha: KWalletWordOrder, blowfish: KWalletWordOrder) throws {
        var body = Self.qString("Folder") + Self.uint32(4)
        body += Self.entry("secret", type: 1, value: Self.qString("value"))
        body += Self.entry("odd", type: 9, value: [1, 2, 3])
        body += Self.entry("bad map", type: 3, value: Self.uint32(5))
        body += Self.entry("secret", type: 1, value: Self.qString("later value"))
        for password in [
            "", "short", String(repeating: "p", count: 17), String(repeating: "é", count: 20), String(repeating: "x", count: 49),
            String(repeating: "long", count: 40),
        ] {
            let wallet = try Self.build(
                body, key: KWalletFile.legacyKey(Array(password.utf8), order: sha),
                minor: 0, cipher: 0, hash: 0, sha: sha, blowfish: blowfish)
            let collection = try KWalletFile.read(wallet, password: password, salt: nil, name: "my;C3;A9wallet", modified: Self.modified)
            #expect(collection.label == "myéwallet")
            #expect(collection.items.map(\.label) == ["Folder/secret"])
            #expect(collection.items.first?.secret == Data("later value".utf8))
            #expect(collection.notImported == ["Folder/odd: entry type 9 not imported", "Folder/bad map: its value is damaged"])
            expectKeychainError(.authenticationFailed) { try KWalletFile.read(wallet, password: password + "!", salt: nil, name: "w", modified: Self.modified) }
        }
        #expect(KWalletFile.legacyKey(Array("12345678901234567".utf8), order: sha).count == 40)
        #expect(KWalletFile.legacyKey(Array(String(repeating: "a", count: 40).utf8), order: sha).count == 56)
        #expect(KWalletFile.legacyKey(Array(String(repeating: "a", count: 60).utf8), order: sha).count == 56)
    }

    @Test func reportsDataThatDoesNotParseAsDamaged() throws {
        let key = KWalletFile.legacyKey(Array("pw".utf8), order: .bigEndian)
        // The digest checks, but an entry count runs past the data.
        let wallet = try Self.build(
            Self.qString("Folder") + Self.uint32(3) + Self.entry("k", type: 1, value: Self.qString("v")),
            key: key, minor: 0, cipher: 3, hash: 0, sha: .bigEndian, blowfish: .littleEndian)
        expectKeychainError(.corruptData) { try KWalletFile.read(wallet, password: "pw", salt: nil, name: "w", modified: Self.modified) }
        let empty = try Self.build([], key: key, minor: 0, cipher: 3, hash: 0, sha: .bigEndian, blowfish: .littleEndian)
        #expect(try KWalletFile.read(empty, password: "pw", salt: nil, name: "w", modified: Self.modified).items.isEmpty)
    }

    // MARK: The primitives

    @Test func blowfishMatchesKnownAnswers() throws {
        // Eric Young's test vectors (key, plaintext, ciphertext), and a 56-byte key checked with libcrypto's BF.
        let vectors: [([UInt8], [UInt8], [UInt8])] = [
            ([0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0], [0x4E, 0xF9, 0x97, 0x45, 0x61, 0x98, 0xDD, 0x78]),
            (Array(repeating: 0xFF, count: 8), Array(repeating: 0xFF, count: 8), [0x51, 0x86, 0x6F, 0xD5, 0xB8, 0x5E, 0xCB, 0x8A]),
            (Array(1...56), Array("KWallet!".utf8), [0x16, 0x00, 0x64, 0xFA, 0xD4, 0xBE, 0xDC, 0x6E]),
        ]
        for (key, plain, cipher) in vectors {
            let blowfish = try #require(Blowfish(key: key))
            #expect(blowfish.encrypt(plain, mode: .ecb, order: .bigEndian) == cipher)
            #expect(blowfish.decrypt(cipher, mode: .ecb, order: .bigEndian) == plain)
            // Little-endian words: the same cipher on each word's bytes reversed.
            let swapped = { (bytes: [UInt8]) in Array(bytes[0..<4].reversed() + bytes[4..<8].reversed()) }
            #expect(blowfish.decrypt(swapped(cipher), mode: .ecb, order: .littleEndian) == swapped(plain))
        }
        #expect(Blowfish(key: []) == nil)
        #expect(Blowfish(key: Array(repeating: 1, count: 57)) == nil)
    }

    @Test func sha1MatchesKnownAnswers() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(KWalletSHA1.hash(Array("abc".utf8), order: .bigEndian)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(KWalletSHA1.hash([], order: .bigEndian)) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(hex(KWalletSHA1.hash(long, order: .bigEndian)) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        // KDE Frameworks' variant (checked against the wallet kwalletd5 wrote, see Fixtures/README.md).
        #expect(hex(KWalletSHA1.hash(Array("abc".utf8), order: .littleEndian)) == "9006c21416fb53f6804f6e39b4af9d4c4f3d516e")
        #expect(hex(KWalletSHA1.hash([], order: .littleEndian)) == "1ef84498ecf608147d1332b9cfd7be33a318f5dc")
    }
}
