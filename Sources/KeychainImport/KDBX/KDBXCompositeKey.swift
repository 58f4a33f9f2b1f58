import Crypto
import Foundation

import KeychainCore

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The key a KDBX database is locked with: SHA-256 of the password's SHA-256 followed by the key file's 32-byte key,
/// each there only if used.
struct KDBXCompositeKey {
    /// The 32 bytes that the database's KDF transforms.
    let bytes: [UInt8]

    /// The composite of `password` (UTF-8, if given) and the key file's contents `keyFile` (if given).
    init(password: String?, keyFile: Data?) throws(KeychainError) {
        var parts: [UInt8] = []
        if let password { parts += SHA256.hash(data: Array(password.utf8)) }
        if let keyFile { parts += try Self.keyFileKey(Array(keyFile)) }
        guard !parts.isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "A KeePass database needs its password, its key file or both to be opened; none was given.")
        }
        bytes = Array(SHA256.hash(data: parts))
    }

    /// The 32-byte key a key file stands for, as KeePass and KeePassXC read key files: an XML key file (version 1.0
    /// with base64 data, or 2.0 with hex data and a hash to check), exactly 32 bytes used as they are, exactly 64
    /// hexadecimal characters, or otherwise the SHA-256 of the whole file.
    static func keyFileKey(_ contents: [UInt8]) throws(KeychainError) -> [UInt8] {
        if let xmlKey = try xmlKeyFileKey(contents) { return xmlKey }
        if contents.count == 32 { return contents }
        if contents.count == 64, let decoded = HexDigits.decode(String(decoding: contents, as: UTF8.self)) { return decoded }
        return Array(SHA256.hash(data: contents))
    }

    /// The key of an XML key file, nil when `contents` is not one (so that it is hashed as any other file).
    private static func xmlKeyFileKey(_ contents: [UInt8]) throws(KeychainError) -> [UInt8]? {
        // Only a small file whose first non-blank character opens a tag can be a KeePass XML key file.
        guard contents.count < 64 * 1024,
            let first = contents.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }),
            first == UInt8(ascii: "<")
        else { return nil }
        let reader = KeyFileParser()
        let parser = XMLParser(stream: InputStream(data: Data(contents)))  // see KDBXDocument.parse
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        guard parser.parse(), reader.sawKeyFile, let text = reader.data else { return nil }
        let version = reader.version.trimmingCharacters(in: .whitespacesAndNewlines)
        if version.hasPrefix("2.") {
            let hex = text.filter { !$0.isWhitespace }
            guard let key = HexDigits.decode(hex), key.count == 32 else {
                throw KeychainError(
                    code: .invalidParameter, message: "The key file is a KeePass XML key file (version 2.0) whose key is not 32 bytes of hexadecimal. Choose the key file the database was made with.")
            }
            if let hash = reader.dataHash?.filter({ !$0.isWhitespace }), !hash.isEmpty {
                guard let expected = HexDigits.decode(hash), Array(SHA256.hash(data: key).prefix(expected.count)) == expected, !expected.isEmpty else {
                    throw KeychainError(code: .invalidParameter, message: "The key file is damaged: its key does not match the hash stored in it. Choose an intact copy of the key file.")
                }
            }
            return key
        }
        if version.hasPrefix("1.") || version.isEmpty {
            guard let key = Data(base64Encoded: text.filter { !$0.isWhitespace }) else {
                throw KeychainError(
                    code: .invalidParameter, message: "The key file is a KeePass XML key file (version 1.0) whose key is not valid base64. Choose the key file the database was made with.")
            }
            return Array(key)
        }
        throw KeychainError(code: .unimplemented, message: "The key file is a KeePass XML key file of version \(version), which this importer does not read. Use a key file of version 1.0 or 2.0.")
    }
}

/// Collects `KeyFile/Meta/Version` and `KeyFile/Key/Data` (with its `Hash` attribute) from an XML key file.
private final class KeyFileParser: NSObject, XMLParserDelegate {
    var path: [String] = []
    var sawKeyFile = false
    var version = ""
    var data: String?
    var dataHash: String?

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        path.append(elementName)
        if path.count > 8 { parser.abortParsing(); return }
        if path == ["KeyFile"] { sawKeyFile = true }
        if path == ["KeyFile", "Key", "Data"] {
            data = ""
            dataHash = attributes["Hash"]
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if path == ["KeyFile", "Meta", "Version"] { version += string }
        if path == ["KeyFile", "Key", "Data"] { data = (data ?? "") + string }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        _ = path.popLast()
    }
}
