import ArgumentParser
import Foundation
import KeychainCore
import KeychainKit

/// `security list-smartcards`: the token IDs of the PKCS#11 tokens present, one per line.
struct ListSmartCards: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-smartcards",
        abstract: "Display available smart cards.",
        discussion: """
            Prints the token ID (kSecAttrTokenID) of each smart card, YubiKey or other PKCS#11 token p11-kit's modules \
            see, one per line: module:serial (softhsm2:7fed46e657923624). Prints nothing when none is present.
            """
    )

    func run() throws {
        let tokens = try SmartCards.tokens(function: "list-smartcards")
        Output.standardOutput(tokens.map { $0.identifier + "\n" }.joined())
    }
}

/// `security export-smartcard`: a token's items, printed or written as PEM files.
struct ExportSmartCard: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export-smartcard",
        abstract: "Export/display items from a smart card.",
        discussion: """
            Without -e, prints the attributes of the items on the token (every present token without -i), one \
            dictionary per item, as SecItemCopyMatching returns them with kSecAttrAccessGroupToken (class, labl, tkid, \
            and for certificates sha1, the SHA-1 of the DER). With -e, writes the certificates (PEM CERTIFICATE) and \
            the private keys' public keys (PEM PUBLIC KEY) into the folder, each named after its label (label.pem). \
            No PIN is asked: what a token shows without it is listed, and a private key is known by the public key or \
            certificate with its CKA_ID.
            """
    )

    /// What `-t` selects.
    enum ItemKind: String, ExpressibleByArgument, CaseIterable {
        case certs, privKeys, identities, all
    }

    @Option(name: .customShort("i"), help: ArgumentHelp("The token (see list-smartcards); default: every token.", valueName: "tokenID"))
    var tokenID: String?

    @Option(name: .customShort("t"), help: ArgumentHelp("The items: certs, privKeys, identities or all (default).", valueName: "type"))
    var kind: ItemKind = .all

    @Option(name: .customShort("e"), help: ArgumentHelp("Write the items as PEM files into this folder.", valueName: "exportPath"))
    var exportPath: String?

    static let function = "export-smartcard"

    func run() throws {
        var tokens = try SmartCards.tokens(function: Self.function)
        if let tokenID {
            tokens = tokens.filter { $0.identifier == tokenID }
            guard !tokens.isEmpty else {
                throw ToolFailure(
                    Self.function, status: .itemNotFound,
                    detail: "No token \(tokenID) is present; `security list-smartcards` lists the present ones.")
            }
        }
        if let exportPath {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: exportPath, isDirectory: &isFolder), isFolder.boolValue else {
                throw ToolFailure.input(Self.function, "\(exportPath) is not a folder.")
            }
        }
        var used: Set<String> = []
        for token in tokens {
            let items: [PKCS11Item]
            do {
                items = PKCS11Item.items(of: try PKCS11Registry.shared.objects(on: token), on: token)
            } catch {
                throw ToolFailure(Self.function, error)
            }
            let selected = Self.select(items, kind)
            if let exportPath {
                for item in selected where item.kind != .publicKey {
                    try Self.export(item, into: exportPath, used: &used)
                }
            } else {
                Output.standardOutput(selected.map { Self.describe($0, identity: kind == .identities) }.joined())
            }
        }
    }

    /// The items `kind` selects: certificates; private keys; the certificates that have a private key (identities);
    /// or all of them.
    static func select(_ items: [PKCS11Item], _ kind: ItemKind) -> [PKCS11Item] {
        switch kind {
        case .certs: return items.filter { $0.kind == .certificate }
        case .privKeys: return items.filter { $0.kind == .privateKey }
        case .identities:
            let privateIDs = Set(items.filter { $0.kind == .privateKey }.map(\.objectID))
            return items.filter { $0.kind == .certificate && privateIDs.contains($0.objectID) }
        case .all: return items
        }
    }

    /// Writes `item`'s PEM (a certificate, or a private key's public key) as `<label>.pem` in `folder`; a second
    /// item with the same label gets `<label> (2).pem`.
    static func export(_ item: PKCS11Item, into folder: String, used: inout Set<String>) throws {
        let pem: String
        if item.kind == .certificate, let der = item.certificate {
            pem = ExchangeContents.pem("CERTIFICATE", der)
        } else if let key = item.publicKey {
            do {
                pem = try key.publicKeyPEM()
            } catch {
                throw ToolFailure(function, error)
            }
        } else {
            return
        }
        let base = item.label.isEmpty ? item.objectID.map { String(format: "%02x", $0) }.joined() : item.label.replacingOccurrences(of: "/", with: "_")
        var name = base + ".pem"
        var number = 2
        while used.contains(name) {
            name = "\(base) (\(number)).pem"
            number += 1
        }
        used.insert(name)
        let path = (folder as NSString).appendingPathComponent(name)
        guard FileManager.default.createFile(atPath: path, contents: Data(pem.utf8)) else {
            throw ToolFailure.input(function, "Cannot write \(path).")
        }
    }

    /// An item's attributes as a dictionary in the style of macOS's output (keys sorted, strings quoted unless made
    /// of letters, digits and `_$+/:.-` only, data as `<hex>` in groups of four bytes), `class` first naming its class.
    static func describe(_ item: PKCS11Item, identity: Bool) -> String {
        let attributes = item.attributes
        let className = identity ? "idnt" : item.kind == .certificate ? "cert" : "keys"
        var out = "{\n    class = \(className);\n"
        for code in attributes.keys.sorted() {
            guard let value = attributes[code] else { continue }
            out += "    \(code) = \(text(value));\n"
        }
        return out + "}\n"
    }

    static func text(_ value: AttributeValue) -> String {
        switch value {
        case .string(let string):
            // Unquoted as in an old-style property list: ASCII letters, digits and _$+/:.- only.
            let plain = !string.isEmpty && string.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_$+/:.-".unicodeScalars.contains($0)) }
            if plain { return string }
            return "\"" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .data(let data):
            let hex = data.map { String(format: "%02x", $0) }.joined()
            var groups: [Substring] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 8, limitedBy: hex.endIndex) ?? hex.endIndex
                groups.append(hex[index..<next])
                index = next
            }
            return "<" + groups.joined(separator: " ") + ">"
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .date(let date): return "\"" + ISO8601DateFormatter().string(from: date) + "\""
        }
    }
}

/// The PKCS#11 tokens of this machine, for the smart-card verbs (read in the tool's own process: they are this
/// machine's hardware, and no keychain is opened).
enum SmartCards {
    /// The tokens present, in p11-kit's order.
    static func tokens(function: String) throws -> [PKCS11Token] {
        do {
            return try PKCS11Registry.shared.tokens()
        } catch {
            throw ToolFailure(function, error)
        }
    }
}
