import Foundation
import KeychainCore
import KeychainImport
import KeychainTestSupport
import Testing

/// gnome-keyring's plain-text keyrings (what it writes for a keyring without a password), and what a damaged binary
/// one gives. The binary format is read from files gnome-keyring itself wrote in `KeyringFileImportTests`.
@Suite("gnome-keyring keyring files")
struct GnomeKeyringFileTests {
    static let plain = """
        [keyring]
        display-name=Plain\\sone
        ctime=1600000000
        mtime=1600000100
        lock-on-idle=false
        lock-after=false

        [7]
        item-type=1
        display-name=Server\\ttab
        secret=line one\\nline two
        mtime=1600000300
        ctime=1600000200

        [7:attribute0]
        name=server
        type=string
        value=example.com

        [7:attribute1]
        name=port
        type=uint32
        value=22

        [8]
        item-type=0
        display-name=Binary
        binary-secret=00ff10
        mtime=1600000500
        ctime=1600000400

        """

    @Test("A plain-text keyring: labels, escapes, numbers as text, binary secrets, dates, the schema from the item type")
    func plainText() throws {
        let collection = try GnomeKeyringFile.read(Data(Self.plain.utf8), password: nil, name: "plain", isDefault: true)
        #expect(collection.label == "Plain one")
        #expect(collection.isDefault)
        #expect(collection.dates == ItemDates(created: Date(timeIntervalSince1970: 1_600_000_000), modified: Date(timeIntervalSince1970: 1_600_000_100)))
        #expect(collection.items.count == 2)
        let server = try #require(collection.items.first { $0.label == "Server\ttab" })
        #expect(server.attributes == ["server": "example.com", "port": "22", "xdg:schema": "org.gnome.keyring.NetworkPassword"])
        #expect(server.secret == Data("line one\nline two".utf8))
        #expect(server.dates == ItemDates(created: Date(timeIntervalSince1970: 1_600_000_200), modified: Date(timeIntervalSince1970: 1_600_000_300)))
        let binary = try #require(collection.items.first { $0.label == "Binary" })
        #expect(binary.secret == Data([0x00, 0xFF, 0x10]))
        #expect(binary.attributes == ["xdg:schema": "org.freedesktop.Secret.Generic"])
    }

    @Test("Not a keyring, or damaged: corruptData, never a crash")
    func damaged() throws {
        for bytes in [Data("hello".utf8), Data("[other]\nx=1\n".utf8), Data([0xFF, 0xFE, 0x00]), Data((Self.plain + "\n[9]\nbinary-secret=xyz\n").utf8)] {
            expectKeychainError(.corruptData, "\(bytes.count) bytes of garbage") { try GnomeKeyringFile.read(bytes, password: nil, name: "bad", isDefault: false) }
        }
        // The binary magic and nothing more, and a header cut anywhere.
        let magic = Data("GnomeKeyring\n\r\0\n".utf8)
        for length in [16, 17, 20, 24, 40] {
            let bytes = (magic + Data([0, 0, 0, 0]) + Data(repeating: 0xFF, count: 64)).prefix(length)
            expectKeychainError(.corruptData, "cut at \(length) bytes") { try GnomeKeyringFile.read(bytes, password: "x", name: "cut", isDefault: false) }
        }
        // Another version of the binary format.
        expectKeychainError(.unimplemented) { try GnomeKeyringFile.read(magic + Data([1, 0, 0, 0]), password: "x", name: "new", isDefault: false) }
    }
}
