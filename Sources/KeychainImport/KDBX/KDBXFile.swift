import Crypto
import CryptoExtras
import Foundation

import KeychainCore

/// Reads KeePass databases (KDBX 4, and KDBX 3.1) into a collection of Secret Service items, as KeePassXC's own
/// Secret Service integration shows its entries.
package enum KDBXFile {
    /// Reads a KDBX 4 database. `name` is used as the collection label when the database has no name.
    ///
    /// - Parameters:
    ///   - data: The whole `.kdbx` file.
    ///   - password: The database's password, nil when it has none (a key file alone).
    ///   - keyFile: The contents of the database's key file, nil when it has none.
    ///   - name: The label of the collection when the database names none (typically the file's name).
    /// - Returns: One collection with an item per entry (entries in the recycle bin and history left out).
    /// - Throws: `KeychainError` `.authenticationFailed` for a wrong password or key file, `.corruptData` for a file
    ///   that is damaged or is not a KeePass database, `.unimplemented` for a format variant this reader does not
    ///   read, `.notAvailable` when libargon2 or zlib cannot be loaded.
    package static func read(_ data: Data, password: String?, keyFile: Data?, name: String) throws(KeychainError) -> ImportedCollection {
        let payload = try decrypt(Array(data), password: password, keyFile: keyFile, name: name)
        return try KDBXDocument.collection(xml: payload.xml, innerStream: payload.innerStream, fallbackLabel: name)
    }

    /// The database's XML and the stream cipher that hides its protected values.
    struct Payload {
        /// The XML document (UTF-8).
        var xml: [UInt8]
        /// The inner random stream, to be applied to protected values in document order.
        var innerStream: KDBXInnerStream
        /// KDBX 4: the inner header as it was (empty for KDBX 3.1).
        var innerHeader: [UInt8] = []
    }

    // MARK: - Outer header

    static let signature1: UInt32 = 0x9AA2_D903
    static let signatureKDBX: UInt32 = 0xB54B_FB67
    static let signatureKDB: UInt32 = 0xB54B_FB65
    static let signatureKDBXPreRelease: UInt32 = 0xB54B_FB66

    /// The outer cipher a database is encrypted with.
    enum Cipher: Equatable {
        /// AES-256 in CBC mode with PKCS#7 padding.
        case aes256
        /// ChaCha20 with a 96-bit nonce.
        case chacha20

        /// The cipher named by a header's 16-byte UUID.
        init(uuid: [UInt8]) throws(KeychainError) {
            switch KDBXHex.string(uuid) {
            case "31c1f2e6bf714350be5805216afc5aff": self = .aes256
            case "d6038a2b8b6f4cb5a524339a31dbb59a": self = .chacha20
            case "ad68f29f576f4bb9a36ad47af965346c":
                throw KDBXFailure.unsupported(
                    "The database is encrypted with Twofish, which this importer does not read. In KeePassXC choose AES-256 or ChaCha20 (Database > Database settings > Encryption), save, and import again."
                )
            default:
                throw KDBXFailure.unsupported(
                    "The database is encrypted with an unknown cipher (\(KDBXHex.string(uuid))). In KeePassXC choose AES-256 or ChaCha20 (Database > Database settings > Encryption), save, and import again."
                )
            }
        }
    }

    /// How the composite key is turned into the encryption key.
    enum KeyDerivation: Equatable {
        /// AES-KDF: `rounds` AES-256-ECB encryptions under `seed`.
        case aes(seed: [UInt8], rounds: UInt64)
        /// Argon2d (`type` 0) or Argon2id (`type` 2).
        case argon2(type: Int32, salt: [UInt8], iterations: UInt64, memory: UInt64, parallelism: UInt64, version: UInt64)

        /// The transformed key for `compositeKey`.
        func transform(_ compositeKey: [UInt8]) throws(KeychainError) -> [UInt8] {
            switch self {
            case .aes(let seed, let rounds):
                return try KDBXPrimitives.aesKDF(key: compositeKey, seed: seed, rounds: rounds)
            case .argon2(let type, let salt, let iterations, let memory, let parallelism, let version):
                return try KDBXPrimitives.argon2(
                    key: compositeKey, salt: salt, iterations: iterations, memoryBytes: memory, parallelism: parallelism,
                    version: version, type: type)
            }
        }
    }

    /// What the outer header of a KDBX 3.1 or 4 file holds.
    struct Header {
        /// The major format version (3 or 4).
        var major: UInt16 = 0
        /// The outer cipher.
        var cipher: Cipher?
        /// Whether the payload is gzip-compressed.
        var compressed = false
        /// The seed mixed into the encryption key.
        var masterSeed: [UInt8] = []
        /// The outer cipher's IV or nonce.
        var encryptionIV: [UInt8] = []
        /// The key derivation.
        var kdf: KeyDerivation?
        /// KDBX 3.1: the inner random stream's key.
        var protectedStreamKey: [UInt8] = []
        /// KDBX 3.1: the first 32 bytes of the decrypted payload, the wrong-key check.
        var streamStartBytes: [UInt8] = []
        /// KDBX 3.1: the inner random stream's algorithm.
        var innerStreamID: UInt32 = 0
        /// KDBX 3.1: the AES-KDF seed and rounds (fields 5 and 6).
        var transformSeed: [UInt8] = []
        var transformRounds: UInt64?
        /// The offset of the first byte after the header.
        var end = 0
    }

    /// Parses the signature, version and header fields of `bytes`.
    static func parseHeader(_ bytes: [UInt8], name: String) throws(KeychainError) -> Header {
        let notKeePass = KeychainError(code: .corruptData, message: "'\(name)' is not a KeePass database (KDBX). Choose the .kdbx file that KeePass or KeePassXC saves.")
        var reader = KDBXByteReader(bytes)
        guard bytes.count >= 12,
            let first = try? reader.integer(4, "signature"), first == UInt64(signature1),
            let second = try? reader.integer(4, "signature")
        else { throw notKeePass }
        switch UInt32(second) {
        case signatureKDBX: break
        case signatureKDB:
            throw KDBXFailure.unsupported(
                "'\(name)' is a KeePass 1 database (.kdb), which this importer does not read. Open it in KeePassXC (Database > Import > KeePass 1 database), save it as KDBX 4, and import that file.")
        case signatureKDBXPreRelease:
            throw KDBXFailure.unsupported("'\(name)' is a pre-release KeePass 2 database, which this importer does not read. Open it in KeePassXC, save it as KDBX 4, and import that file.")
        default: throw notKeePass
        }
        let version = try reader.integer(4, "version")
        var header = Header()
        header.major = UInt16(truncatingIfNeeded: version >> 16)
        guard header.major == 3 || header.major == 4 else {
            if header.major < 3 {
                throw KDBXFailure.unsupported(
                    "'\(name)' is an old KeePass 2 database (KDBX \(header.major)), which this importer does not read. Open it in KeePassXC and save it as KDBX 4 (Database > Database settings > Encryption > Format), then import again."
                )
            }
            throw KDBXFailure.unsupported(
                "'\(name)' is a KeePass database of a newer format (KDBX \(header.major)) than this importer reads (KDBX 4). Save it as KDBX 4 in KeePassXC and import again.")
        }
        let sizeWidth = header.major == 4 ? 4 : 2
        var kdfParameters: [UInt8]?
        fieldLoop: while true {
            let id = try reader.integer(1, "header")
            let size = try reader.integer(sizeWidth, "header")
            guard size <= UInt64(reader.remaining) else { throw KDBXFailure.damaged("a header field runs past the end of the file") }
            let value = try reader.take(Int(size), "header")
            switch id {
            case 0: break fieldLoop
            case 1: continue  // a comment
            case 2:
                guard value.count == 16 else { throw KDBXFailure.damaged("the cipher identifier is not 16 bytes") }
                header.cipher = try Cipher(uuid: value)
            case 3:
                guard let flags = KDBXLittleEndian.value(value, width: 4), flags <= 1 else {
                    throw KDBXFailure.unsupported("The database uses an unknown compression; save it again in KeePassXC and import that file.")
                }
                header.compressed = flags == 1
            case 4: header.masterSeed = value
            case 5 where header.major == 3: header.transformSeed = value
            case 6 where header.major == 3:
                guard let rounds = KDBXLittleEndian.value(value, width: 8) else { throw KDBXFailure.damaged("the AES-KDF rounds field is malformed") }
                header.transformRounds = rounds
            case 7: header.encryptionIV = value
            case 8 where header.major == 3: header.protectedStreamKey = value
            case 9 where header.major == 3: header.streamStartBytes = value
            case 10 where header.major == 3:
                guard let stream = KDBXLittleEndian.value(value, width: 4) else { throw KDBXFailure.damaged("the inner stream field is malformed") }
                header.innerStreamID = UInt32(stream)
            case 11 where header.major == 4: kdfParameters = value
            default: continue  // public custom data (12) and fields of no use here
            }
        }
        header.end = reader.offset
        guard header.cipher != nil else { throw KDBXFailure.damaged("the header names no cipher") }
        guard header.masterSeed.count == 32 else { throw KDBXFailure.damaged("the master seed is not 32 bytes") }
        if header.major == 4 {
            guard let kdfParameters else { throw KDBXFailure.damaged("the header has no key derivation parameters") }
            header.kdf = try parseKDF(kdfParameters)
        } else {
            guard let rounds = header.transformRounds, header.transformSeed.count == 32 else {
                throw KDBXFailure.damaged("the header has no AES-KDF seed or rounds")
            }
            header.kdf = .aes(seed: header.transformSeed, rounds: rounds)
            guard header.streamStartBytes.count == 32 else { throw KDBXFailure.damaged("the header's stream start bytes are missing") }
        }
        let ivSize = header.cipher == .chacha20 ? 12 : 16
        guard header.encryptionIV.count == ivSize else { throw KDBXFailure.damaged("the encryption IV is not \(ivSize) bytes") }
        return header
    }

    /// The key derivation described by a KDBX 4 variant dictionary.
    static func parseKDF(_ bytes: [UInt8]) throws(KeychainError) -> KeyDerivation {
        let dictionary = try KDBXVariantDictionary(bytes)
        guard let uuid = dictionary.values["$UUID"]?.bytes, uuid.count == 16 else {
            throw KDBXFailure.damaged("the key derivation has no identifier")
        }
        func integer(_ key: String, _ type: UInt8) throws(KeychainError) -> UInt64 {
            guard let entry = dictionary.values[key], entry.type == type,
                let value = KDBXLittleEndian.value(entry.bytes, width: type == 0x04 ? 4 : 8)
            else { throw KDBXFailure.damaged("the key derivation's parameter \(key) is missing or malformed") }
            return value
        }
        func byteValue(_ key: String) throws(KeychainError) -> [UInt8] {
            guard let entry = dictionary.values[key], entry.type == 0x42 else {
                throw KDBXFailure.damaged("the key derivation's parameter \(key) is missing or malformed")
            }
            return entry.bytes
        }
        switch KDBXHex.string(uuid) {
        // KeePass's AES-KDF identifier, and the one KeePassXC also accepts for it in KDBX 4.
        case "c9d9f39a628a4460bf740d08c18a4fea", "7c02bb8279a74ac0927d114a00648238":
            return .aes(seed: try byteValue("S"), rounds: try integer("R", 0x05))
        case "ef636ddf8c29444b91f7a9a403e30a0c", "9e298b1956db4773b23dfc3ec6f0a1e6":
            if let secret = dictionary.values["K"], !secret.bytes.isEmpty {
                throw KDBXFailure.unsupported("The database's Argon2 key derivation uses a secret key, which this importer does not support. Save it in KeePassXC and import that file.")
            }
            if let associated = dictionary.values["A"], !associated.bytes.isEmpty {
                throw KDBXFailure.unsupported("The database's Argon2 key derivation uses associated data, which this importer does not support. Save it in KeePassXC and import that file.")
            }
            let type: Int32 = KDBXHex.string(uuid) == "ef636ddf8c29444b91f7a9a403e30a0c" ? 0 : 2
            return .argon2(
                type: type, salt: try byteValue("S"), iterations: try integer("I", 0x05), memory: try integer("M", 0x05),
                parallelism: try integer("P", 0x04), version: try integer("V", 0x04))
        default:
            throw KDBXFailure.unsupported(
                "The database uses an unknown key derivation function (\(KDBXHex.string(uuid))). In KeePassXC choose Argon2 or AES-KDF (Database > Database settings > Encryption), save, and import again."
            )
        }
    }

    // MARK: - Decryption

    /// The decrypted, decompressed XML of the KDBX file `bytes`.
    static func decrypt(_ bytes: [UInt8], password: String?, keyFile: Data?, name: String) throws(KeychainError) -> Payload {
        let header = try parseHeader(bytes, name: name)
        let compositeKey = try KDBXCompositeKey(password: password, keyFile: keyFile)
        guard let kdf = header.kdf, let cipher = header.cipher else { throw KDBXFailure.damaged("the header is incomplete") }
        if header.major == 3 { return try decryptVersion3(bytes, header: header, compositeKey: compositeKey, kdf: kdf, cipher: cipher) }

        var reader = KDBXByteReader(bytes, start: header.end)
        let storedHash = try reader.take(32, "header checksum")
        let storedHMAC = try reader.take(32, "header authentication code")
        let headerBytes = Array(bytes[0..<header.end])
        guard Array(SHA256.hash(data: headerBytes)) == storedHash else { throw KDBXFailure.damaged("the header checksum does not match") }

        let transformed = try kdf.transform(compositeKey.bytes)
        let hmacBase = Array(SHA512.hash(data: header.masterSeed + transformed + [1]))
        guard hmac(key: blockKey(index: UInt64.max, base: hmacBase), headerBytes) == storedHMAC else { throw KDBXFailure.wrongKey }

        // The HMAC block stream: each block is its code, its size and its data, ending with an empty block.
        var ciphertext: [UInt8] = []
        ciphertext.reserveCapacity(reader.remaining)
        var index: UInt64 = 0
        while true {
            let code = try reader.take(32, "block \(index)")
            let sizeBytes = try reader.take(4, "block \(index)")
            guard let rawSize = KDBXLittleEndian.value(sizeBytes, width: 4), rawSize <= UInt64(Int32.max),
                rawSize <= UInt64(reader.remaining)
            else { throw KDBXFailure.damaged("block \(index) is larger than what is left of the file") }
            let data = try reader.take(Int(rawSize), "block \(index)")
            let expected = hmac(key: blockKey(index: index, base: hmacBase), KDBXLittleEndian.bytes(index) + sizeBytes + data)
            guard expected == code else { throw KDBXFailure.damaged("block \(index) fails its integrity check") }
            if data.isEmpty { break }
            ciphertext += data
            index += 1
        }

        let key = Array(SHA256.hash(data: header.masterSeed + transformed))
        var plain = try decryptPayload(ciphertext, cipher: cipher, key: key, iv: header.encryptionIV, wrongKeyOnFailure: false)
        if header.compressed { plain = try KDBXPrimitives.gunzip(plain) }

        // The inner header: the inner random stream and the attachments.
        var inner = KDBXByteReader(plain)
        var streamID: UInt32?
        var streamKey: [UInt8]?
        innerLoop: while true {
            let id = try inner.integer(1, "inner header")
            let size = try inner.integer(4, "inner header")
            guard size <= UInt64(inner.remaining) else { throw KDBXFailure.damaged("an inner header field runs past the end") }
            switch id {
            case 0:
                try inner.skip(Int(size), "inner header")
                break innerLoop
            case 1:
                guard let value = KDBXLittleEndian.value(try inner.take(Int(size), "inner header"), width: 4) else {
                    throw KDBXFailure.damaged("the inner stream identifier is malformed")
                }
                streamID = UInt32(value)
            case 2: streamKey = try inner.take(Int(size), "inner header")
            default: try inner.skip(Int(size), "inner header")  // attachments (3), reported per entry instead
            }
        }
        guard let streamID, let streamKey else { throw KDBXFailure.damaged("the inner header has no inner stream") }
        let stream = try KDBXInnerStream(id: streamID, key: streamKey)
        return Payload(xml: Array(plain[inner.offset...]), innerStream: stream, innerHeader: Array(plain[0..<inner.offset]))
    }

    /// Decrypts a KDBX 3.1 payload: the whole rest of the file, whose first 32 bytes repeat the header's stream start
    /// bytes (the wrong-key check), then SHA-256-checked blocks.
    private static func decryptVersion3(
        _ bytes: [UInt8], header: Header, compositeKey: KDBXCompositeKey, kdf: KeyDerivation, cipher: Cipher
    ) throws(KeychainError) -> Payload {
        let transformed = try kdf.transform(compositeKey.bytes)
        let key = Array(SHA256.hash(data: header.masterSeed + transformed))
        let ciphertext = Array(bytes[header.end...])
        if ciphertext.isEmpty { throw KDBXFailure.damaged("it ends after the header") }
        if cipher == .aes256, ciphertext.count % 16 != 0 { throw KDBXFailure.damaged("the encrypted content is cut short") }
        let plain = try decryptPayload(ciphertext, cipher: cipher, key: key, iv: header.encryptionIV, wrongKeyOnFailure: true)
        guard plain.count >= 32, Array(plain[0..<32]) == header.streamStartBytes else { throw KDBXFailure.wrongKey }
        var reader = KDBXByteReader(plain, start: 32)
        var content: [UInt8] = []
        var index: UInt64 = 0
        while true {
            guard try reader.integer(4, "block \(index)") == index & 0xFFFF_FFFF else {
                throw KDBXFailure.damaged("block \(index) is out of order")
            }
            let hash = try reader.take(32, "block \(index)")
            let size = try reader.integer(4, "block \(index)")
            guard size <= UInt64(Int32.max), size <= UInt64(reader.remaining) else {
                throw KDBXFailure.damaged("block \(index) is larger than what is left of the file")
            }
            let data = try reader.take(Int(size), "block \(index)")
            if size == 0 {
                guard hash.allSatisfy({ $0 == 0 }) else { throw KDBXFailure.damaged("the last block is malformed") }
                break
            }
            guard Array(SHA256.hash(data: data)) == hash else { throw KDBXFailure.damaged("block \(index) fails its integrity check") }
            content += data
            index += 1
        }
        if header.compressed { content = try KDBXPrimitives.gunzip(content) }
        let stream = try KDBXInnerStream(id: header.innerStreamID, key: header.protectedStreamKey)
        return Payload(xml: content, innerStream: stream)
    }

    /// The outer cipher's decryption of `ciphertext`. A padding failure means a wrong key in KDBX 3.1 (where nothing
    /// checked the key before) and damage in KDBX 4 (where the header's code did).
    static func decryptPayload(_ ciphertext: [UInt8], cipher: Cipher, key: [UInt8], iv: [UInt8], wrongKeyOnFailure: Bool) throws(KeychainError) -> [UInt8] {
        switch cipher {
        case .chacha20:
            return try KDBXPrimitives.chacha20(ciphertext, key: key, nonce: iv)
        case .aes256:
            guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { throw KDBXFailure.damaged("the encrypted content is not whole AES blocks") }
            do {
                let aesIV = try AES._CBC.IV(ivBytes: iv)
                return Array(try AES._CBC.decrypt(ciphertext, using: SymmetricKey(data: key), iv: aesIV))
            } catch {
                if wrongKeyOnFailure { throw KDBXFailure.wrongKey }
                throw KDBXFailure.damaged("the encrypted content does not decrypt")
            }
        }
    }

    /// The HMAC-SHA-512-derived key of block `index` (UInt64.max for the header).
    static func blockKey(index: UInt64, base: [UInt8]) -> [UInt8] {
        Array(SHA512.hash(data: KDBXLittleEndian.bytes(index) + base))
    }

    /// HMAC-SHA-256 of `message` under `key`.
    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}

/// A KDBX 4 variant dictionary: typed values by name (the KDF parameters).
struct KDBXVariantDictionary {
    /// Each value's type byte and raw bytes.
    var values: [String: (type: UInt8, bytes: [UInt8])] = [:]

    /// Parses `bytes`, refusing an unknown major version or a length past the end.
    init(_ bytes: [UInt8]) throws(KeychainError) {
        var reader = KDBXByteReader(bytes)
        let version = try reader.integer(2, "key derivation parameters")
        guard version >> 8 == 1 else { throw KDBXFailure.damaged("the key derivation parameters have an unknown version") }
        while true {
            let type = UInt8(try reader.integer(1, "key derivation parameters"))
            if type == 0 { break }
            let keyLength = try reader.integer(4, "key derivation parameters")
            guard keyLength <= UInt64(reader.remaining) else { throw KDBXFailure.damaged("a key derivation parameter runs past the end") }
            let key = String(decoding: try reader.take(Int(keyLength), "key derivation parameters"), as: UTF8.self)
            let valueLength = try reader.integer(4, "key derivation parameters")
            guard valueLength <= UInt64(reader.remaining) else { throw KDBXFailure.damaged("a key derivation parameter runs past the end") }
            values[key] = (type, try reader.take(Int(valueLength), "key derivation parameters"))
        }
    }
}

/// The stream cipher that hides protected values in the XML, consumed in document order.
struct KDBXInnerStream {
    /// The algorithm.
    enum Algorithm {
        /// No protection: protected values are stored as they are (base64).
        case none
        /// Salsa20 with key SHA-256(inner key) and KeePass's fixed nonce.
        case salsa20(key: [UInt8])
        /// ChaCha20 with key and nonce from SHA-512(inner key).
        case chacha20(key: [UInt8], nonce: [UInt8])
    }

    /// The algorithm and its key.
    let algorithm: Algorithm

    /// The stream for the inner random stream identifier `id` with the inner key `key`.
    init(id: UInt32, key: [UInt8]) throws(KeychainError) {
        switch id {
        case 0: algorithm = .none
        case 2:
            algorithm = .salsa20(key: Array(SHA256.hash(data: key)))
        case 3:
            let digest = Array(SHA512.hash(data: key))
            algorithm = .chacha20(key: Array(digest[0..<32]), nonce: Array(digest[32..<44]))
        case 1:
            throw KDBXFailure.unsupported("The database protects its fields with ArcFour, which this importer does not read. Save it in KeePassXC as KDBX 4 and import that file.")
        default:
            throw KDBXFailure.damaged("unknown inner stream \(id)")
        }
    }

    /// The plain bytes of `ciphertext`, the concatenation of every protected value in document order.
    func apply(_ ciphertext: [UInt8]) throws(KeychainError) -> [UInt8] {
        switch algorithm {
        case .none: return ciphertext
        case .salsa20(let key): return try KDBXPrimitives.salsa20(ciphertext, key: key, nonce: [0xE8, 0x30, 0x09, 0x4B, 0x97, 0x20, 0x5D, 0x2A])
        case .chacha20(let key, let nonce): return try KDBXPrimitives.chacha20(ciphertext, key: key, nonce: nonce)
        }
    }
}

/// Lowercase hexadecimal.
enum KDBXHex {
    /// `bytes` as lowercase hexadecimal, two digits a byte.
    static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
