import Foundation

import KeychainCore
import KeychainTestSupport
import Testing

@testable import KeychainImport

/// Databases made by keepassxc-cli, read back.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/keepassxc-cli"), "needs keepassxc-cli (Debian: keepassxc)"))
struct KDBXFileTests {
    /// The base64 of a UUID whose last byte is `last`, all others zero.
    static func uuid(_ last: UInt8) -> String { Data([UInt8](repeating: 0, count: 15) + [last]).base64EncodedString() }
    /// The 32-hex form of the same UUID.
    static func uuidHex(_ last: UInt8) -> String { String(repeating: "0", count: 30) + String(format: "%02x", last) }

    static let longNotes = String(repeating: "n", count: 16_385)

    /// A KeePass XML export with a name, groups, a recycle bin, history, an attachment, a protected custom field, an
    /// oversized field and an entry with too many fields. Entry custom data makes KeePassXC save it as KDBX 4.
    static func richXML() -> String {
        let manyFields = (0..<130).map { "<String><Key>F\(String(format: "%03d", $0))</Key><Value>v\($0)</Value></String>" }.joined()
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <KeePassFile><Meta><DatabaseName>Family Vault</DatabaseName>
            <RecycleBinEnabled>True</RecycleBinEnabled><RecycleBinUUID>\(uuid(9))</RecycleBinUUID>
            <Binaries><Binary ID="0">aGVsbG8gYXR0YWNobWVudA==</Binary></Binaries></Meta>
            <Root><Group><UUID>\(uuid(1))</UUID><Name>Root</Name>
            <Times><CreationTime>2020-01-02T03:04:05Z</CreationTime><LastModificationTime>2021-02-03T04:05:06Z</LastModificationTime></Times>
            <Entry><UUID>\(uuid(2))</UUID>
            <Times><CreationTime>2019-05-06T07:08:09Z</CreationTime><LastModificationTime>2022-10-11T12:13:14Z</LastModificationTime></Times>
            <String><Key>Title</Key><Value>Ünïcødé 🔑 Bank</Value></String>
            <String><Key>UserName</Key><Value>zoë</Value></String>
            <String><Key>URL</Key><Value>https://bank.example/login?a=1&amp;b=2</Value></String>
            <String><Key>Notes</Key><Value>line 1
            line 2</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">s3cr3t-ü-🔒</Value></String>
            <String><Key>PIN</Key><Value ProtectInMemory="True">4321</Value></String>
            <String><Key>Empty</Key><Value/></String>
            <Binary><Key>file.pdf</Key><Value Ref="0"/></Binary>
            <CustomData><Item><Key>origin</Key><Value>test</Value></Item></CustomData>
            <History><Entry><UUID>\(uuid(2))</UUID>
            <String><Key>Title</Key><Value>Old Bank</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">old-password</Value></String>
            </Entry></History></Entry>
            <Entry><UUID>\(uuid(3))</UUID>
            <String><Key>Title</Key><Value/></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">p3</Value></String>
            <String><Key>Notes</Key><Value>\(longNotes)</Value></String>
            </Entry>
            <Group><UUID>\(uuid(4))</UUID><Name>Email</Name>
            <Entry><UUID>\(uuid(5))</UUID>
            <String><Key>Title</Key><Value>Mail</Value></String>
            <String><Key>UserName</Key><Value>me@example.org</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">mail-pw</Value></String>
            \(manyFields)
            </Entry></Group>
            <Group><UUID>\(uuid(9))</UUID><Name>Recycle Bin</Name>
            <Entry><UUID>\(uuid(6))</UUID><String><Key>Title</Key><Value>Deleted</Value></String></Entry></Group>
            </Group></Root></KeePassFile>
            """
    }

    /// The rich database saved by keepassxc-cli (KDBX 4) with password "correct horse".
    static func richDatabase(_ cli: KeePassXCCLI) throws -> Data {
        try Data(richXML().utf8).write(to: URL(fileURLWithPath: cli.file("rich.xml")))
        try cli.run(["import", "-q", "-p", cli.file("rich.xml"), cli.file("rich.kdbx")], input: "correct horse\ncorrect horse\n")
        return try Data(contentsOf: URL(fileURLWithPath: cli.file("rich.kdbx")))
    }

    /// Checks the collection read from the rich database.
    static func checkRich(_ collection: ImportedCollection) throws {
        #expect(collection.label == "Family Vault")
        #expect(collection.isDefault == false)
        #expect(collection.dates?.created == Date(timeIntervalSince1970: 1_577_934_245))
        #expect(collection.dates?.modified == Date(timeIntervalSince1970: 1_612_325_106))
        #expect(collection.items.count == 3)
        let bank = try #require(collection.items.first { $0.label == "Ünïcødé 🔑 Bank" })
        #expect(bank.secret == Data("s3cr3t-ü-🔒".utf8))
        #expect(bank.contentType == "text/plain")
        #expect(
            bank.attributes == [
                "Title": "Ünïcødé 🔑 Bank", "UserName": "zoë", "URL": "https://bank.example/login?a=1&b=2",
                "Notes": "line 1\nline 2", "Path": "Root", "Uuid": uuidHex(2), "PIN": "4321", "Empty": "",
            ])
        #expect(bank.dates.created == Date(timeIntervalSince1970: 1_557_126_489))
        #expect(bank.dates.modified == Date(timeIntervalSince1970: 1_665_490_394))

        let untitled = try #require(collection.items.first { $0.label == "(untitled)" })
        #expect(untitled.secret == Data("p3".utf8))
        #expect(untitled.attributes == ["Path": "Root", "Uuid": uuidHex(3)])

        let mail = try #require(collection.items.first { $0.label == "Mail" })
        #expect(mail.secret == Data("mail-pw".utf8))
        #expect(mail.attributes.count == 128)
        #expect(mail.attributes["Path"] == "Root/Email")
        #expect(mail.attributes["UserName"] == "me@example.org")
        #expect(mail.attributes["F000"] == "v0")
        #expect(mail.attributes["F129"] == nil)

        #expect(!collection.items.contains { $0.label == "Deleted" || $0.label == "Old Bank" })
        #expect(collection.notImported.contains("entry 'Ünïcødé 🔑 Bank' (Root): attachment 'file.pdf' not imported"))
        #expect(collection.notImported.contains("entry '(untitled)' (Root): field Notes is over 16 KiB and was not imported"))
        #expect(collection.notImported.contains { $0.hasPrefix("entry 'Mail' (Root/Email): 6 fields over the limit of 128 attributes") })
    }

    @Test func richKDBX4WithPassword() throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let data = try Self.richDatabase(cli)
        let header = try KDBXFile.parseHeader(Array(data), name: "rich")
        #expect(header.major == 4)
        try Self.checkRich(try KDBXFile.read(data, password: "correct horse", keyFile: nil, name: "rich"))
    }

    /// 10,000 entries: a document over 10 MB once decompressed, which Foundation's XML parser refuses when given it
    /// all at once.
    @Test func tenThousandEntries() throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let xml = keePassXML(name: "Big", entries: 10_000)
        try Data(xml.utf8).write(to: URL(fileURLWithPath: cli.file("big.xml")))
        try cli.run(["import", "-q", "-p", cli.file("big.xml"), cli.file("big.kdbx")], input: "pw\npw\n")
        let collection = try KDBXFile.read(try Data(contentsOf: URL(fileURLWithPath: cli.file("big.kdbx"))), password: "pw", keyFile: nil, name: "big")
        #expect(collection.items.count == 10_000)
        let last = try #require(collection.items.first { $0.label == "entry 9999" })
        #expect(last.secret == Data("secret-9999".utf8) && last.attributes["UserName"] == "user9999")
    }

    @Test func kdbx31MadeWithCommands() throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let database = cli.file("plain.kdbx")
        try cli.run(["db-create", "-q", "-p", database], input: "pw\npw\n")
        try cli.run(["add", "-q", "-u", "bob", "--url", "https://x.org", "--notes", "hello", "-p", database, "Ünïcødé 🔑"], input: "pw\nsecret1\n")
        try cli.run(["mkdir", "-q", database, "Email"], input: "pw\n")
        try cli.run(["add", "-q", "-u", "alice", "-p", database, "Email/Mail"], input: "pw\nsecret2\n")
        let data = try Data(contentsOf: URL(fileURLWithPath: database))
        #expect(try KDBXFile.parseHeader(Array(data), name: "plain").major == 3)
        let collection = try KDBXFile.read(data, password: "pw", keyFile: nil, name: "plain")
        #expect(collection.label == "plain")
        #expect(collection.items.count == 2)
        let first = try #require(collection.items.first { $0.label == "Ünïcødé 🔑" })
        #expect(first.secret == Data("secret1".utf8))
        #expect(first.attributes["UserName"] == "bob")
        #expect(first.attributes["URL"] == "https://x.org")
        #expect(first.attributes["Notes"] == "hello")
        #expect(first.attributes["Uuid"]?.count == 32)
        let mail = try #require(collection.items.first { $0.label == "Mail" })
        #expect(mail.secret == Data("secret2".utf8))
        #expect(mail.attributes["Path"]?.hasSuffix("/Email") == true)
        #expect(mail.attributes["URL"] == nil)
        #expect(collection.notImported.isEmpty)
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: "wrong", keyFile: nil, name: "plain") }
    }

    @Test func wrongPasswordAndDamage() throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let data = try Self.richDatabase(cli)
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: "Correct horse", keyFile: nil, name: "rich") }
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: "correct horse", keyFile: Data("extra".utf8), name: "rich") }
        for length in [0, 8, 12, 100, 300, data.count / 2, data.count - 1] {
            expectKeychainError(.corruptData) { try KDBXFile.read(data.prefix(length), password: "correct horse", keyFile: nil, name: "rich") }
        }
        // A flipped byte in the payload fails its block's check.
        var flipped = data
        flipped[data.count - 50] ^= 0x01
        expectKeychainError(.corruptData) { try KDBXFile.read(flipped, password: "correct horse", keyFile: nil, name: "rich") }
    }

    @Test func passwordAndKeyFile() throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let database = cli.file("k.kdbx"), key = cli.file("k.keyx")
        try cli.run(["db-create", "-q", "-p", "--set-key-file", key, database], input: "pw\npw\n")
        try cli.run(["add", "-q", "-k", key, "-u", "u", "-p", database, "Entry"], input: "pw\nsecret\n")
        let data = try Data(contentsOf: URL(fileURLWithPath: database))
        let keyData = try Data(contentsOf: URL(fileURLWithPath: key))
        #expect(String(decoding: keyData, as: UTF8.self).contains("<Version>2.0</Version>"))
        let collection = try KDBXFile.read(data, password: "pw", keyFile: keyData, name: "k")
        #expect(collection.items.map(\.secret) == [Data("secret".utf8)])
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: "pw", keyFile: nil, name: "k") }
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: nil, keyFile: keyData, name: "k") }
    }

    /// Each kind of key file KeePassXC reads, on a database without a password.
    @Test(arguments: ["xml1", "raw32", "hex64", "other"])
    func keyFileOnly(kind: String) throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let key = cli.file("key.\(kind)"), database = cli.file("k.kdbx")
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let contents: Data
        switch kind {
        case "xml1":
            contents = Data(
                """
                <?xml version="1.0" encoding="utf-8"?>
                <KeyFile><Meta><Version>1.00</Version></Meta><Key><Data>\(Data(bytes).base64EncodedString())</Data></Key></KeyFile>
                """.utf8)
        case "raw32": contents = Data(bytes)
        case "hex64": contents = Data(KDBXHex.string(bytes).utf8)
        default: contents = Data(("any file at all " + KDBXHex.string(bytes)).utf8)
        }
        try contents.write(to: URL(fileURLWithPath: key))
        try cli.run(["db-create", "-q", "--set-key-file", key, database])
        try cli.run(["add", "-q", "-k", key, "--no-password", "-p", database, "Only"], input: "v\n")
        let data = try Data(contentsOf: URL(fileURLWithPath: database))
        let collection = try KDBXFile.read(data, password: nil, keyFile: contents, name: "k")
        #expect(collection.items.map(\.label) == ["Only"])
        #expect(collection.items.first?.secret == Data("v".utf8))
        expectKeychainError(.authenticationFailed) { try KDBXFile.read(data, password: "", keyFile: contents, name: "k") }
    }

    /// The rich database re-encrypted with each cipher and KDF; keepassxc-cli must open the result too, which checks
    /// the test's writer independently of the reader.
    @Test(arguments: [
        (KDBXFile.Cipher.chacha20, KDBXTestWriter.KDF.argon2d),
        (.aes256, .argon2id),
        (.chacha20, .aesKDF),
        (.aes256, .aesKDF),
    ])
    func ciphersAndKDFs(cipher: KDBXFile.Cipher, kdf: KDBXTestWriter.KDF) throws {
        let cli = try KeePassXCCLI()
        defer { cli.cleanUp() }
        let original = try Self.richDatabase(cli)
        let payload = try KDBXFile.decrypt(Array(original), password: "correct horse", keyFile: nil, name: "rich")
        for compressed in [false, true] {
            let rewritten = try KDBXTestWriter.write(payload: payload, password: "correct horse", cipher: cipher, kdf: kdf, compressed: compressed)
            let path = cli.file("rewritten.kdbx")
            try rewritten.write(to: URL(fileURLWithPath: path))
            let exported = try cli.run(["export", "-q", path], input: "correct horse\n")
            #expect(exported.contains("Ünïcødé 🔑 Bank"))
            let header = try KDBXFile.parseHeader(Array(rewritten), name: "x")
            #expect(header.cipher == cipher)
            #expect(header.compressed == compressed)
            try Self.checkRich(try KDBXFile.read(rewritten, password: "correct horse", keyFile: nil, name: "rich"))
            expectKeychainError(.authenticationFailed) { try KDBXFile.read(rewritten, password: "nope", keyFile: nil, name: "rich") }
        }
    }
}

/// Inputs that need no keepassxc-cli.
struct KDBXFileOfflineTests {
    @Test func notKeePass() {
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) })
        expectKeychainError(.corruptData) { try KDBXFile.read(noise, password: "x", keyFile: nil, name: "noise.bin") }
        expectKeychainError(.corruptData) { try KDBXFile.read(Data("hello".utf8), password: "x", keyFile: nil, name: "hello.txt") }
        expectKeychainError(.corruptData) { try KDBXFile.read(Data(), password: "x", keyFile: nil, name: "empty") }
        do {
            _ = try KDBXFile.read(noise, password: "x", keyFile: nil, name: "noise.bin")
        } catch {
            #expect(error.message.contains("is not a KeePass database (KDBX)"))
        }
        // A KeePass 1 file is named as such.
        let kdb = Data([0x03, 0xD9, 0xA2, 0x9A, 0x65, 0xFB, 0x4B, 0xB5] + [UInt8](repeating: 0, count: 120))
        expectKeychainError(.unimplemented) { try KDBXFile.read(kdb, password: "x", keyFile: nil, name: "old.kdb") }
    }

    @Test func noKeyGiven() {
        let data = Data([0x03, 0xD9, 0xA2, 0x9A, 0x67, 0xFB, 0x4B, 0xB5, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        expectKeychainError(.invalidParameter) { try KDBXCompositeKey(password: nil, keyFile: nil) }
        expectKeychainError(.corruptData) { try KDBXFile.read(data, password: "x", keyFile: nil, name: "short") }
    }

    @Test func xmlKeyFileVersion2HashIsChecked() throws {
        let good = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeyFile><Meta><Version>2.0</Version></Meta><Key><Data Hash="A42047A7">
            FBC5374D E428F186 BE4FF42D 07776500
            7AE7D250 04FA5E91 F7779625 7A76006D
            </Data></Key></KeyFile>
            """
        let key = try KDBXCompositeKey.keyFileKey(Array(good.utf8))
        #expect(KDBXHex.string(key) == "fbc5374de428f186be4ff42d077765007ae7d25004fa5e91f77796257a76006d")
        let bad = good.replacingOccurrences(of: "A42047A7", with: "A42047A8")
        expectKeychainError(.invalidParameter) { try KDBXCompositeKey.keyFileKey(Array(bad.utf8)) }
    }

    @Test func kdbxDates() {
        #expect(KDBXDocument.date("2020-01-02T03:04:05Z") == Date(timeIntervalSince1970: 1_577_934_245))
        // 1970-01-01 is 62135596800 seconds after 0001-01-01.
        let epoch = Data(KDBXLittleEndian.bytes(62_135_596_800)).base64EncodedString()
        #expect(KDBXDocument.date(epoch) == Date(timeIntervalSince1970: 0))
        #expect(KDBXDocument.date("garbage") == nil)
    }

    /// Salsa20 against the first bytes of the eSTREAM test vector (set 1, vector 0: key 0x80 then zeros, nonce zero).
    @Test func salsa20Vector() throws {
        let key = [0x80] + [UInt8](repeating: 0, count: 31)
        let stream = try KDBXPrimitives.salsa20([UInt8](repeating: 0, count: 64), key: key, nonce: [UInt8](repeating: 0, count: 8))
        #expect(KDBXHex.string(Array(stream.prefix(16))) == "e3be8fdd8beca2e3ea8ef9475b29a6e7")
    }

    @Test func costBounds() {
        let key = [UInt8](repeating: 1, count: 32), salt = [UInt8](repeating: 2, count: 32)
        expectKeychainError(.unimplemented) {
            try KDBXPrimitives.argon2(key: key, salt: salt, iterations: 2, memoryBytes: 4 << 30, parallelism: 1, version: 0x13, type: 2)
        }
        expectKeychainError(.unimplemented) {
            try KDBXPrimitives.argon2(key: key, salt: salt, iterations: 1 << 40, memoryBytes: 1 << 20, parallelism: 1, version: 0x13, type: 0)
        }
        expectKeychainError(.unimplemented) { try KDBXPrimitives.aesKDF(key: key, seed: salt, rounds: UInt64.max) }
        // A small Argon2id run reaches libargon2 through dlopen.
        #expect((try? KDBXPrimitives.argon2(key: key, salt: salt, iterations: 1, memoryBytes: 64 << 10, parallelism: 1, version: 0x13, type: 2))?.count == 32)
    }

    @Test func deepXMLIsRefused() {
        let xml = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        expectKeychainError(.corruptData) { try KDBXDocument.parse(Array(xml.utf8)) }
    }

    @Test func gzipBounds() {
        expectKeychainError(.corruptData) { try KDBXPrimitives.gunzip([0x1F, 0x8B, 0x08, 0x00, 0x00]) }
        expectKeychainError(.corruptData) { try KDBXPrimitives.gunzip(Array("not gzip".utf8)) }
    }
}
