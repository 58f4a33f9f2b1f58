import Crypto
import CryptoExtras
import Foundation
import KeychainCore

/// KWallet's wallet files (`~/.local/share/kwalletd/NAME.kwl`, with `NAME.salt` beside it), as KDE 4's `kwalletd`
/// and KDE Frameworks' `kwalletd5`/`kwalletd6` write them.
///
/// A file is the magic `KWALLET\n\r\0\r\n`; four bytes: format major version (0), minor version (0, or 1 when the key
/// is derived with PBKDF2), cipher (0 Blowfish "ECB", 3 Blowfish CBC, 2 GPG) and hash (0 SHA-1, 2 PBKDF2-SHA512); a
/// clear table of MD5 digests of the folder names and keys; then the encrypted part. That part decrypts to one
/// random block, the data's length (32-bit big-endian), the data, random padding to a whole block, and KWallet's
/// SHA-1 of the data (which is how a wrong password shows). The data is `QDataStream` values: for each folder its
/// name and entry count, and for each entry its key, type (1 password, 2 binary, 3 map) and value, a `QByteArray`
/// (a password's holds a `QString`, a map's a `QMap<QString, QString>`).
///
/// The key is, for a wallet of format 0.1, PBKDF2-SHA512 of the password (UTF-8) with the salt file's bytes,
/// 50,000 rounds, 56 bytes; for format 0.0, SHA-1 applied 2,000 times to each 16-byte piece of the password (up to
/// four pieces, the last taking the rest), the digests joined into a 20-, 40- or 56-byte key. Blowfish and SHA-1
/// come in two byte orders (``KWalletWordOrder``: KDE 4's and KDE Frameworks'); both are tried.
///
/// Each entry becomes a ``SecretServiceImportItem`` labelled `FOLDER/KEY`, with the attributes `kwallet-folder`,
/// `kwallet-key` and `kwallet-type` (`password`, `binary` or `map`) and the secret as KWallet's Secret Service
/// bridge would give it: a password as UTF-8 text (`text/plain`), a binary entry's bytes
/// (`application/octet-stream`), a map as a JSON object with its keys sorted (`application/json`).
package enum KWalletFile {
    /// The first bytes of a wallet file.
    static let magic: [UInt8] = Array("KWALLET\n\r\0\r\n".utf8)
    /// PBKDF2-SHA512 rounds of a format 0.1 wallet (`PBKDF2_SHA512_ITERATIONS`).
    static let pbkdf2Rounds = 50_000
    /// The length of a key derived with PBKDF2-SHA512 (`PBKDF2_SHA512_KEYSIZE`, Blowfish's longest key).
    static let pbkdf2KeyLength = 56
    /// SHA-1 rounds of each piece of the password in a format 0.0 wallet.
    static let legacyRounds = 2000
    /// The most folders KWallet reads from a wallet's digest table.
    static let maximumFolders: UInt32 = 0xFFFF

    /// Whether `data` starts as a wallet file does.
    package static func isWallet(_ data: Data) -> Bool {
        data.count >= magic.count && Array(data.prefix(magic.count)) == magic
    }

    /// Reads a KWallet wallet file.
    ///
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - password: The wallet's password (for a wallet opened at login by `pam_kwallet`, the login password).
    ///   - salt: The contents of `<name>.salt` beside it when there is one: a wallet of format 0.1 (every wallet
    ///     KDE 4.13 and later saved) cannot be opened without it.
    ///   - name: The wallet's name (the file name without `.kwl`; KWallet writes a character a file name cannot hold
    ///     as `;` and two hexadecimal digits, which is decoded for the label). `kdewallet` is KWallet's default
    ///     wallet, whose items go to the keychain's default collection.
    ///   - modified: The file's modification time, which becomes every item's creation and modification date (the
    ///     format keeps no dates).
    /// - Returns: One collection, labelled with the wallet's name and no dates, holding an item for each entry;
    ///   entries of a type KWallet does not define, or whose value is damaged, are listed in `notImported`.
    /// - Throws: `KeychainError` `authenticationFailed` for a wrong password, `corruptData` for a file that is not a
    ///   wallet or is damaged or truncated, `invalidParameter` for a format 0.1 wallet without its salt,
    ///   `unimplemented` for a wallet encrypted with GPG or a format or cipher KWallet never wrote.
    package static func read(
        _ data: Data, password: String, salt: Data?, name: String, modified: Date
    ) throws(KeychainError) -> ImportedCollection {
        let label = decodedName(name)
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count + 4, Array(bytes[0..<magic.count]) == magic else {
            throw KeychainError(code: .corruptData, message: "'\(name)' is not a KWallet wallet file.")
        }
        let major = bytes[12], minor = bytes[13], cipher = bytes[14], hash = bytes[15]
        guard major == 0, minor <= 1 else {
            throw KeychainError(
                code: .unimplemented,
                message: "The wallet '\(label)' is in format \(major).\(minor), which this import does not read (KWallet writes 0.0 and 0.1).")
        }
        let mode: Blowfish.Mode
        switch cipher {
        case 0: mode = .ecb
        case 3: mode = .cbc
        case 2:
            throw KeychainError(
                code: .unimplemented,
                message: "The wallet '\(label)' is encrypted with GPG, which this import does not read: open it in KWalletManager and "
                    + "copy its entries into a wallet protected by a password (Blowfish), or export it (File > Export as XML) and "
                    + "import the entries from there, then import that wallet.")
        default:
            throw KeychainError(
                code: .unimplemented, message: "The wallet '\(label)' uses cipher \(cipher), which KWallet does not write.")
        }
        guard hash == 0 || hash == 2 else {
            throw KeychainError(
                code: .unimplemented, message: "The wallet '\(label)' uses password hash \(hash), which KWallet does not write.")
        }

        // The clear table of digests: folders (MD5 of the UTF-8 name, entry count, the entries' key digests).
        var table = QDataStreamReader(bytes, range: (magic.count + 4)..<bytes.count)
        var folderDigests: [[UInt8]] = []
        do {
            let folders = try table.uint32()
            guard folders <= maximumFolders else { throw QDataStreamError() }
            for _ in 0..<folders {
                folderDigests.append(try table.raw(16))
                let entries = try table.uint32()
                guard UInt64(entries) * 16 <= UInt64(table.remaining) else { throw QDataStreamError() }
                _ = try table.raw(Int(entries) * 16)
            }
        } catch {
            throw damaged(label)
        }
        let encrypted = Array(bytes[table.offset...])
        // One random block, the length, the SHA-1 digest: at least 32 bytes, in whole blocks.
        guard encrypted.count >= 32, encrypted.count % 8 == 0 else { throw damaged(label) }

        // The keys to try, each with the SHA-1 byte order that checks its data.
        let candidates: [(key: [UInt8], sha: KWalletWordOrder, blowfish: KWalletWordOrder)]
        let passwordBytes = Array(password.utf8)
        if minor == 1 {
            guard let salt, !salt.isEmpty else {
                throw KeychainError(
                    code: .invalidParameter,
                    message: "The wallet '\(label)' needs its salt file '\(name).salt' (beside '\(name).kwl') to be opened.")
            }
            let key: [UInt8]
            do {
                let derived = try KDF.Insecure.PBKDF2.deriveKey(
                    from: passwordBytes, salt: salt, using: .sha512, outputByteCount: pbkdf2KeyLength,
                    unsafeUncheckedRounds: pbkdf2Rounds)
                key = derived.withUnsafeBytes { Array($0) }
            } catch {
                throw KeychainError(code: .notAvailable, message: "PBKDF2-SHA512 failed for the wallet '\(label)': \(error).")
            }
            // KDE Frameworks' byte orders first: a 0.1 wallet is most likely theirs.
            candidates = [
                (key, .littleEndian, .bigEndian), (key, .bigEndian, .littleEndian),
                (key, .littleEndian, .littleEndian), (key, .bigEndian, .bigEndian),
            ]
        } else {
            let frameworksKey = legacyKey(passwordBytes, order: .littleEndian)
            let kde4Key = legacyKey(passwordBytes, order: .bigEndian)
            // KDE 4's byte orders first: most 0.0 wallets were written by it.
            candidates = [
                (kde4Key, .bigEndian, .littleEndian), (frameworksKey, .littleEndian, .bigEndian),
                (frameworksKey, .littleEndian, .littleEndian), (kde4Key, .bigEndian, .bigEndian),
            ]
        }

        var wellKeyed = false  // whether some key gave a first folder name found in the digest table
        for candidate in candidates {
            guard let blowfish = Blowfish(key: candidate.key) else { continue }
            let plain = blowfish.decrypt(encrypted, mode: mode, order: candidate.blowfish)
            let length = Int(plain[8]) << 24 | Int(plain[9]) << 16 | Int(plain[10]) << 8 | Int(plain[11])
            if length <= plain.count - 32 {
                let body = Array(plain[12..<(12 + length)])
                if KWalletSHA1.hash(body, order: candidate.sha) == Array(plain[(plain.count - 20)...]) {
                    return try entries(body, label: label, isDefault: label == "kdewallet", modified: modified)
                }
            }
            wellKeyed = wellKeyed || startsWithKnownFolder(plain, folderDigests)
        }
        if wellKeyed {
            // The password decrypts the start (a folder named in the table) but the rest does not check: damaged.
            throw damaged(label)
        }
        throw KeychainError(
            code: .authenticationFailed,
            message: "The password does not open wallet '\(label)'. Give the password it was last saved with (for a wallet "
                + "opened at login, the login password then).")
    }

    /// The error for a damaged or truncated wallet.
    static func damaged(_ label: String) -> KeychainError {
        KeychainError(code: .corruptData, message: "The wallet '\(label)' is damaged or truncated.")
    }

    /// A wallet's name from its file name: KWallet writes a byte a file name may not hold as `;XX` (hexadecimal).
    static func decodedName(_ name: String) -> String {
        guard name.contains(";") else { return name }
        var bytes: [UInt8] = []
        let utf8 = Array(name.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: ";"), i + 2 < utf8.count,
                let high = HexDigits.value(utf8[i + 1]), let low = HexDigits.value(utf8[i + 2])
            {
                bytes.append(high << 4 | low)
                i += 3
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The key of a format 0.0 wallet (KWallet's `password2hash`), with KWallet's SHA-1 in `order`.
    static func legacyKey(_ password: [UInt8], order: KWalletWordOrder) -> [UInt8] {
        func stretch(_ piece: ArraySlice<UInt8>) -> [UInt8] {
            var digest = KWalletSHA1.hash(Array(piece), order: order)
            for _ in 1..<legacyRounds {
                digest = KWalletSHA1.hash(digest, order: order)
            }
            return digest
        }
        let count = password.count
        let block1 = stretch(password[0..<min(count, 16)])
        guard count > 16 else { return block1 }
        let block2 = stretch(password[16..<min(count, 32)])
        guard count > 32 else { return block1 + block2 }
        let block3 = stretch(password[32..<min(count, 48)])
        guard count > 48 else { return block1 + block2 + block3.prefix(16) }
        let block4 = stretch(password[48...])
        return Array(block1.prefix(14) + block2.prefix(14) + block3.prefix(14) + block4.prefix(14))
    }

    /// Whether `plain` (a decryption) starts with a folder name whose MD5 digest is in the wallet's table, which
    /// shows the key right whatever follows.
    static func startsWithKnownFolder(_ plain: [UInt8], _ folderDigests: [[UInt8]]) -> Bool {
        guard !folderDigests.isEmpty, plain.count > 12 else { return false }
        var reader = QDataStreamReader(plain, range: 12..<plain.count)
        guard let folder = try? reader.string() else { return false }
        return folderDigests.contains(Array(Insecure.MD5.hash(data: Array(folder.utf8))))
    }

    /// The collection of a wallet's decrypted and checked data.
    static func entries(_ body: [UInt8], label: String, isDefault: Bool, modified: Date) throws(KeychainError) -> ImportedCollection {
        var collection = ImportedCollection(label: label, isDefault: isDefault)
        let dates = ItemDates(created: modified, modified: modified)
        var positions: [[String]: Int] = [:]  // an item's index by folder and key: a later entry replaces it
        var reader = QDataStreamReader(body)
        do {
            while !reader.isAtEnd {
                let folder = try reader.string()
                let count = try reader.uint32()
                // Each entry takes at least 12 bytes (key length, type, value length).
                guard UInt64(count) * 12 <= UInt64(reader.remaining) else { throw QDataStreamError() }
                for _ in 0..<count {
                    let key = try reader.string()
                    let type = try reader.int32()
                    let value = try reader.byteArray()
                    let name = "\(folder)/\(key)"
                    guard let item = Self.item(type: type, value: value, folder: folder, key: key, dates: dates) else {
                        collection.notImported.append(
                            type >= 1 && type <= 3
                                ? "\(name): its value is damaged"
                                : "\(name): entry type \(type) not imported")
                        continue
                    }
                    if let index = positions[[folder, key]] {
                        collection.items[index] = item
                    } else {
                        positions[[folder, key]] = collection.items.count
                        collection.items.append(item)
                    }
                }
            }
        } catch {
            throw damaged(label)
        }
        return collection
    }

    /// The item of one entry, or `nil` for an unknown type or a value that does not read as its type.
    static func item(type: Int32, value: [UInt8], folder: String, key: String, dates: ItemDates) -> SecretServiceImportItem? {
        let kind: String, secret: Data, contentType: String
        var reader = QDataStreamReader(value)
        switch type {
        case 1:
            // An empty value is an empty password (KWallet reads a null string from it).
            var password = ""
            if !value.isEmpty {
                guard let text = try? reader.string(), reader.isAtEnd else { return nil }
                password = text
            }
            kind = "password"
            secret = Data(password.utf8)
            contentType = "text/plain"
        case 2:
            kind = "binary"
            secret = Data(value)
            contentType = "application/octet-stream"
        case 3:
            guard let map = try? reader.stringMap(), reader.isAtEnd else { return nil }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let json = try? encoder.encode(map) else { return nil }
            kind = "map"
            secret = json
            contentType = "application/json"
        default:
            return nil
        }
        return SecretServiceImportItem(
            label: "\(folder)/\(key)",
            attributes: ["kwallet-folder": folder, "kwallet-key": key, "kwallet-type": kind],
            secret: secret, contentType: contentType, dates: dates)
    }
}
