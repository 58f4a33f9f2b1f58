import Crypto
import CryptoExtras
import Foundation
import KeychainCore

/// gnome-keyring's keyring files (`~/.local/share/keyrings/NAME.keyring`), in both the formats it writes: the
/// binary one of a keyring with a password (AES-128-CBC under a key stretched from the password with SHA-256, an
/// MD5 digest to check it), and the plain-text one (a key file) of a keyring without a password.
///
/// Each item becomes a ``SecretServiceImportItem`` as gnome-keyring serves it on the bus: its label, attributes
/// (numbers written out in decimal), secret (`text/plain`: the format keeps no content type) and dates.
package enum GnomeKeyringFile {
    /// The first bytes of a binary keyring file.
    static let magic: [UInt8] = Array("GnomeKeyring\n\r\0\n".utf8)
    /// The most SHA-256 rounds believed (gnome-keyring writes 1,000 to 4,095).
    static let maximumIterations: UInt32 = 1 << 20

    /// Whether `data` is a binary keyring, which needs its password.
    package static func isEncrypted(_ data: Data) -> Bool {
        data.count >= magic.count && Array(data.prefix(magic.count)) == magic
    }

    /// Reads a keyring file.
    ///
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - password: The keyring's password (a binary keyring only; its login keyring's is the login password).
    ///   - name: The file's name without `.keyring`, for messages (and the label of a keyring that has none).
    ///   - isDefault: Whether it is the default keyring (`login`, or the one `default` beside it names): its items go
    ///     to the keychain's default collection.
    /// - Throws: `KeychainError` `authenticationFailed` for a wrong password, `corruptData` for a file that is not a
    ///   keyring or is damaged, `unimplemented` for a version of the format gnome-keyring 3 never wrote.
    package static func read(_ data: Data, password: String?, name: String, isDefault: Bool) throws(KeychainError) -> ImportedCollection {
        if isEncrypted(data) {
            return try readBinary(Array(data), password: password ?? "", name: name, isDefault: isDefault)
        }
        return try readText(data, name: name, isDefault: isDefault)
    }

    static func damaged(_ name: String) -> KeychainError {
        KeychainError(code: .corruptData, message: "The keyring file '\(name)' is damaged or not a gnome-keyring keyring; nothing was imported from it.")
    }

    // MARK: The binary format

    private static func readBinary(_ bytes: [UInt8], password: String, name: String, isDefault: Bool) throws(KeychainError) -> ImportedCollection {
        var reader = GnomeKeyringBinaryReader(bytes, offset: magic.count, name: name)
        let version = try reader.take(4)  // major, minor, cipher (0: AES), hash (0: MD5)
        guard version == [0, 0, 0, 0] else {
            throw KeychainError(
                code: .unimplemented,
                message: "The keyring file '\(name)' has a format version (\(version.map(String.init).joined(separator: "."))) gnome-keyring 3 does not write; it cannot be imported.")
        }
        let label = try reader.string() ?? name
        // gnome-keyring reads the first time as the creation time (it writes the modification time there): taken as
        // it reads them, so that the dates are those it showed.
        let created = try reader.time()
        let modified = try reader.time()
        _ = try reader.uint32()  // flags
        _ = try reader.uint32()  // lock timeout
        let iterations = try reader.uint32()
        let salt = try reader.take(8)
        _ = try reader.take(16)  // reserved
        let count = try reader.uint32()
        guard Int(count) <= reader.remaining / 12 else { throw damaged(name) }
        // The unencrypted part: each item's identifier, type and hashed attributes; the types are kept (in the
        // encrypted part's order).
        var types: [UInt32] = []
        for _ in 0..<count {
            _ = try reader.uint32()
            types.append(try reader.uint32())
            _ = try reader.attributes()
        }
        let size = Int(try reader.uint32())
        guard size % 16 == 0, size >= 16, size <= reader.remaining, (1...maximumIterations).contains(iterations) else { throw damaged(name) }
        let encrypted = try reader.take(size)

        // The key and IV: SHA-256 of the password and salt, hashed again until `iterations` in all; 16 bytes each.
        var digest = Array(SHA256.hash(data: Array(password.utf8) + salt))
        for _ in 1..<iterations { digest = Array(SHA256.hash(data: digest)) }
        let plain: [UInt8]
        do {
            let iv = try AES._CBC.IV(ivBytes: digest[16..<32])
            plain = Array(try AES._CBC.decrypt(encrypted, using: SymmetricKey(data: digest[0..<16]), iv: iv, noPadding: true))
        } catch {
            throw damaged(name)
        }
        guard plain.count == size, Array(Insecure.MD5.hash(data: plain[16...])) == Array(plain[0..<16]) else {
            throw KeychainError(
                code: .authenticationFailed,
                message: "The password does not open the keyring '\(name)'. Give the keyring's password (for the login keyring, the login password it was last unlocked with).")
        }

        var items: [SecretServiceImportItem] = []
        var inner = GnomeKeyringBinaryReader(plain, offset: 16, name: name)
        for type in types {
            let itemLabel = try inner.string() ?? ""
            let secret = try inner.byteArray() ?? []
            let itemCreated = try inner.time()
            let itemModified = try inner.time()
            _ = try inner.string()  // reserved
            _ = try inner.take(16)  // reserved
            let attributes = withSchema(try inner.attributes(), type: type)
            // Access lists of gnome-keyring 2: kept in the file, used by nobody since.
            let entries = try inner.uint32()
            guard Int(entries) <= inner.remaining / 20 else { throw damaged(name) }
            for _ in 0..<entries {
                _ = try inner.uint32()
                _ = try inner.string()
                _ = try inner.string()
                _ = try inner.string()
                _ = try inner.uint32()
            }
            items.append(
                SecretServiceImportItem(
                    label: itemLabel, attributes: attributes, secret: Data(secret), contentType: "text/plain",
                    dates: ItemDates(created: itemCreated, modified: itemModified)))
        }
        return ImportedCollection(label: label, isDefault: isDefault, dates: ItemDates(created: created, modified: modified), items: items)
    }

    // MARK: The plain-text format

    /// A keyring without a password: a GLib key file, `[keyring]` first, then a group per item (`[1]`) and one per
    /// attribute (`[1:attribute0]`).
    private static func readText(_ data: Data, name: String, isDefault: Bool) throws(KeychainError) -> ImportedCollection {
        guard let text = String(data: data, encoding: .utf8) else { throw damaged(name) }
        var groups: [(name: String, values: [String: String])] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                groups.append((String(line.dropFirst().dropLast()), [:]))
                continue
            }
            guard let equals = line.firstIndex(of: "="), !groups.isEmpty else { throw damaged(name) }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: equals)...].drop { $0 == " " })
            groups[groups.count - 1].values[key] = value
        }
        guard let header = groups.first, header.name == "keyring" else { throw damaged(name) }
        func date(_ value: String?) -> Date { Date(timeIntervalSince1970: TimeInterval(value.flatMap { UInt64($0) } ?? 0)) }

        var attributeGroups: [String: [[String: String]]] = [:]
        for group in groups {
            guard let colon = group.name.firstIndex(of: ":"), group.name[colon...].hasPrefix(":attribute") else { continue }
            attributeGroups[String(group.name[..<colon]), default: []].append(group.values)
        }
        var items: [SecretServiceImportItem] = []
        for group in groups.dropFirst() where !group.name.contains(":") {
            var attributes: [String: String] = [:]
            for values in attributeGroups[group.name] ?? [] {
                guard let key = values["name"].map(unescape) else { continue }
                attributes[key] = unescape(values["value"] ?? "")
            }
            attributes = withSchema(attributes, type: group.values["item-type"].flatMap { UInt32($0) } ?? 0)
            var secret = Data()
            if let value = group.values["secret"] {
                secret = Data(unescape(value).utf8)
            } else if let hex = group.values["binary-secret"] {
                guard let bytes = HexDigits.decode(hex) else { throw damaged(name) }
                secret = Data(bytes)
            }
            items.append(
                SecretServiceImportItem(
                    label: unescape(group.values["display-name"] ?? ""), attributes: attributes, secret: secret, contentType: "text/plain",
                    dates: ItemDates(created: date(group.values["ctime"]), modified: date(group.values["mtime"]))))
        }
        return ImportedCollection(
            label: header.values["display-name"].map(unescape) ?? name, isDefault: isDefault,
            dates: ItemDates(created: date(header.values["ctime"]), modified: date(header.values["mtime"])), items: items)
    }

    /// `attributes` with the schema gnome-keyring serves for an item loaded from a file (`xdg:schema`, from the
    /// item's type when its attributes name none), so that the import matches what gnome-keyring shows.
    static func withSchema(_ attributes: [String: String], type: UInt32) -> [String: String] {
        guard attributes["xdg:schema"] == nil else { return attributes }
        let schema: String? =
            switch type {
            case 0: "org.freedesktop.Secret.Generic"
            case 1: "org.gnome.keyring.NetworkPassword"
            case 2: "org.gnome.keyring.Note"
            case 3: "org.gnome.keyring.ChainedKeyring"
            case 4: "org.gnome.keyring.EncryptionKey"
            case 0x100: "org.gnome.keyring.PkStorage"
            default: nil
            }
        var out = attributes
        out["xdg:schema"] = schema
        return out
    }

    /// A GLib key file string: `\s`, `\n`, `\t`, `\r` and `\\` stand for themselves.
    static func unescape(_ value: String) -> String {
        guard value.contains("\\") else { return value }
        var out = ""
        var escaped = false
        for character in value {
            if escaped {
                switch character {
                case "s": out.append(" ")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                default: out.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}
