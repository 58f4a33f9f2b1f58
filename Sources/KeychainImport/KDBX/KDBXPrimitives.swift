import CKeychainImport
import Crypto
import CryptoExtras
import Foundation

import KeychainCore

/// The errors the KeePass reader throws, worded for the person importing the database.
enum KDBXFailure {
    /// The password or key file does not open the database.
    static let wrongKey = KeychainError(
        code: .authenticationFailed,
        message:
            "The password or key file does not open this database. Check the password (it is case-sensitive) and, if the database uses a key file, give the same key file (and no key file if it uses none)."
    )

    /// The file is damaged or cut short; `detail` says where.
    static func damaged(_ detail: String) -> KeychainError {
        KeychainError(
            code: .corruptData,
            message: "The KeePass database is damaged or truncated (\(detail)). Check it opens in KeePassXC, or import a backup copy."
        )
    }

    /// A variant of the format this reader does not read.
    static func unsupported(_ message: String) -> KeychainError {
        KeychainError(code: .unimplemented, message: message)
    }

    /// Runs a swift-crypto call, turning what it throws into a `KeychainError` with `what` as the detail.
    static func crypto<T>(_ what: String, _ body: () throws -> T) throws(KeychainError) -> T {
        do {
            return try body()
        } catch {
            throw damaged("\(what): \(error)")
        }
    }
}

/// Little-endian reading of the bytes a KDBX file is made of, refusing to read past their end.
struct KDBXByteReader {
    /// The bytes being read.
    let bytes: [UInt8]
    /// The index of the next byte to read.
    private(set) var offset: Int
    /// The index one past the last readable byte.
    let end: Int

    /// A reader of `bytes[start..<end]` (all of `bytes` by default).
    init(_ bytes: [UInt8], start: Int = 0, end: Int? = nil) {
        self.bytes = bytes
        self.offset = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    /// How many bytes are left.
    var remaining: Int { end - offset }

    /// The next `count` bytes; `what` names them in the error when the data is too short.
    mutating func take(_ count: Int, _ what: String) throws(KeychainError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw KDBXFailure.damaged("it ends inside the \(what)") }
        let slice = Array(bytes[offset..<(offset + count)])
        offset += count
        return slice
    }

    /// Skips `count` bytes.
    mutating func skip(_ count: Int, _ what: String) throws(KeychainError) {
        guard count >= 0, count <= remaining else { throw KDBXFailure.damaged("it ends inside the \(what)") }
        offset += count
    }

    /// An unsigned little-endian integer of `width` bytes (at most 8).
    mutating func integer(_ width: Int, _ what: String) throws(KeychainError) -> UInt64 {
        guard width <= remaining else { throw KDBXFailure.damaged("it ends inside the \(what)") }
        var value: UInt64 = 0
        for index in 0..<width { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += width
        return value
    }
}

/// Little-endian decoding of a field's value.
enum KDBXLittleEndian {
    /// The unsigned integer held in `bytes` (at most 8 of them), or nil if `bytes.count` is not `width`.
    static func value(_ bytes: [UInt8], width: Int) -> UInt64? {
        guard bytes.count == width, width <= 8 else { return nil }
        var value: UInt64 = 0
        for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        return value
    }

    /// `value` as 8 little-endian bytes.
    static func bytes(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
}

/// The key derivation functions and stream ciphers a KDBX file uses.
enum KDBXPrimitives {
    /// The most AES-KDF rounds accepted: KeePassXC's 5-second benchmark on a current machine gives a few hundred
    /// million; this reader does about ten million a second, so the bound is a wait of a couple of minutes at most.
    static let maximumAESRounds: UInt64 = 1_000_000_000
    /// The most memory Argon2 may ask for (2 GiB).
    static let maximumArgon2Memory: UInt64 = 2 << 30
    /// The most Argon2 passes accepted.
    static let maximumArgon2Iterations: UInt64 = 100_000
    /// The most Argon2 lanes accepted.
    static let maximumArgon2Parallelism: UInt64 = 256
    /// The most decompressed data accepted (256 MiB).
    static let maximumDecompressedSize = 256 << 20

    /// AES-KDF: each half of `key` encrypted `rounds` times with AES-256-ECB under `seed`, then SHA-256 of both.
    static func aesKDF(key: [UInt8], seed: [UInt8], rounds: UInt64) throws(KeychainError) -> [UInt8] {
        guard key.count == 32 else { throw KDBXFailure.damaged("the composite key is not 32 bytes") }
        guard seed.count == 32 else { throw KDBXFailure.damaged("the AES-KDF seed is not 32 bytes") }
        guard rounds <= maximumAESRounds else {
            throw KDBXFailure.unsupported(
                "The database asks for \(rounds) AES-KDF rounds, more than the \(maximumAESRounds) this importer accepts. Lower them in KeePassXC (Database > Database settings > Encryption) and import again."
            )
        }
        let symmetricKey = SymmetricKey(data: seed)
        var output: [UInt8] = []
        for half in 0..<2 {
            var block = Array(key[(half * 16)..<(half * 16 + 16)])
            // ECB applied `rounds` times to one block is CBC over `rounds` zero blocks with that block as the IV: each
            // ciphertext block is the encryption of the previous one. Chunks keep the memory bounded.
            var left = rounds
            let chunkBlocks: UInt64 = 65_536
            while left > 0 {
                let count = Int(min(left, chunkBlocks))
                let zeros = [UInt8](repeating: 0, count: count * 16)
                let iv = try KDBXFailure.crypto("AES-KDF") { try AES._CBC.IV(ivBytes: block) }
                let encrypted = try KDBXFailure.crypto("AES-KDF") {
                    try AES._CBC.encrypt(zeros, using: symmetricKey, iv: iv, noPadding: true)
                }
                guard encrypted.count == count * 16 else { throw KDBXFailure.damaged("AES-KDF produced too little") }
                block = Array(encrypted.suffix(16))
                left -= UInt64(count)
            }
            output += block
        }
        return Array(SHA256.hash(data: output))
    }

    /// Argon2d (`type` 0) or Argon2id (`type` 2) of `key`, 32 bytes long, through libargon2.
    static func argon2(
        key: [UInt8], salt: [UInt8], iterations: UInt64, memoryBytes: UInt64, parallelism: UInt64, version: UInt64, type: Int32
    ) throws(KeychainError) -> [UInt8] {
        guard memoryBytes <= maximumArgon2Memory else {
            throw KDBXFailure.unsupported(
                "The database asks for \(memoryBytes >> 20) MiB of memory to open (Argon2); this importer refuses more than \(maximumArgon2Memory >> 20) MiB. Lower the memory in KeePassXC (Database > Database settings > Encryption) and import again."
            )
        }
        guard (1...maximumArgon2Iterations).contains(iterations) else {
            throw KDBXFailure.unsupported(
                "The database asks for \(iterations) Argon2 iterations; this importer accepts 1 to \(maximumArgon2Iterations). Change them in KeePassXC (Database > Database settings > Encryption) and import again."
            )
        }
        guard (1...maximumArgon2Parallelism).contains(parallelism) else {
            throw KDBXFailure.damaged("the Argon2 parallelism \(parallelism) is out of range")
        }
        guard version == 0x10 || version == 0x13 else { throw KDBXFailure.damaged("unknown Argon2 version \(version)") }
        guard (8...1024).contains(salt.count) else { throw KDBXFailure.damaged("the Argon2 salt has \(salt.count) bytes") }
        let memoryKiB = UInt32(memoryBytes / 1024)
        guard memoryKiB >= 8 * UInt32(parallelism) else { throw KDBXFailure.damaged("the Argon2 memory is too small") }
        var hash = [UInt8](repeating: 0, count: 32)
        var message = [CChar](repeating: 0, count: 512)
        let status = key.withUnsafeBytes { keyBytes in
            salt.withUnsafeBytes { saltBytes in
                hash.withUnsafeMutableBytes { hashBytes in
                    ckeychain_argon2_hash(
                        UInt32(iterations), memoryKiB, UInt32(parallelism), keyBytes.baseAddress, keyBytes.count,
                        saltBytes.baseAddress, saltBytes.count, hashBytes.baseAddress, hashBytes.count, type,
                        UInt32(version), &message, message.count)
                }
            }
        }
        guard status == CKEYCHAIN_IMPORT_OK else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if status == CKEYCHAIN_IMPORT_UNAVAILABLE { throw KeychainError(code: .notAvailable, message: text) }
            if status == CKEYCHAIN_IMPORT_NO_MEMORY {
                throw KeychainError(code: .notAvailable, message: "There is not enough memory to open the database (\(text)).")
            }
            throw KDBXFailure.damaged(text)
        }
        return hash
    }

    /// The gzip data `compressed`, inflated to at most `maximumDecompressedSize` bytes.
    static func gunzip(_ compressed: [UInt8]) throws(KeychainError) -> [UInt8] {
        var output: UnsafeMutableRawPointer?
        var length = 0
        var message = [CChar](repeating: 0, count: 512)
        let status = compressed.withUnsafeBytes { input in
            ckeychain_gunzip(input.baseAddress, input.count, maximumDecompressedSize, &output, &length, &message, message.count)
        }
        defer { ckeychain_import_free(output) }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case CKEYCHAIN_IMPORT_OK:
            guard let output else { return [] }
            return Array(UnsafeRawBufferPointer(start: output, count: length))
        case CKEYCHAIN_IMPORT_UNAVAILABLE:
            throw KeychainError(code: .notAvailable, message: text)
        case CKEYCHAIN_IMPORT_TOO_LARGE:
            throw KDBXFailure.unsupported(
                "The database's content is larger than \(maximumDecompressedSize >> 20) MiB once decompressed, more than this importer accepts. Remove large attachments in KeePassXC and import again."
            )
        case CKEYCHAIN_IMPORT_NO_MEMORY:
            throw KeychainError(code: .notAvailable, message: "There is not enough memory to decompress the database.")
        default:
            throw KDBXFailure.damaged("its content does not decompress: \(text)")
        }
    }

    /// ChaCha20 (RFC 8439, 96-bit nonce, counter from 0) applied to `data`; encryption and decryption are the same.
    static func chacha20(_ data: [UInt8], key: [UInt8], nonce: [UInt8]) throws(KeychainError) -> [UInt8] {
        guard key.count == 32, nonce.count == 12 else { throw KDBXFailure.damaged("a ChaCha20 key or nonce has the wrong size") }
        if data.isEmpty { return [] }
        let result = try KDBXFailure.crypto("ChaCha20") {
            try Insecure.ChaCha20CTR.encrypt(
                data, using: SymmetricKey(data: key), counter: Insecure.ChaCha20CTR.Counter(),
                nonce: Insecure.ChaCha20CTR.Nonce(data: nonce))
        }
        return Array(result)
    }

    /// Salsa20/20 with a 256-bit key and 64-bit nonce, counter from 0, applied to `data`.
    static func salsa20(_ data: [UInt8], key: [UInt8], nonce: [UInt8]) throws(KeychainError) -> [UInt8] {
        guard key.count == 32, nonce.count == 8 else { throw KDBXFailure.damaged("a Salsa20 key or nonce has the wrong size") }
        func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        // "expand 32-byte k"
        let constants: [UInt32] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]
        var state = [UInt32](repeating: 0, count: 16)
        state[0] = constants[0]
        for index in 0..<4 { state[1 + index] = word(key, index * 4) }
        state[5] = constants[1]
        state[6] = word(nonce, 0)
        state[7] = word(nonce, 4)
        state[10] = constants[2]
        for index in 0..<4 { state[11 + index] = word(key, 16 + index * 4) }
        state[15] = constants[3]
        var output = data
        var counter: UInt64 = 0
        var position = 0
        var block = [UInt32](repeating: 0, count: 16)
        while position < output.count {
            state[8] = UInt32(truncatingIfNeeded: counter)
            state[9] = UInt32(truncatingIfNeeded: counter >> 32)
            block = state
            func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
                block[b] ^= (block[a] &+ block[d]).rotatedLeft(7)
                block[c] ^= (block[b] &+ block[a]).rotatedLeft(9)
                block[d] ^= (block[c] &+ block[b]).rotatedLeft(13)
                block[a] ^= (block[d] &+ block[c]).rotatedLeft(18)
            }
            for _ in 0..<10 {
                quarter(0, 4, 8, 12); quarter(5, 9, 13, 1); quarter(10, 14, 2, 6); quarter(15, 3, 7, 11)
                quarter(0, 1, 2, 3); quarter(5, 6, 7, 4); quarter(10, 11, 8, 9); quarter(15, 12, 13, 14)
            }
            for index in 0..<16 {
                let value = block[index] &+ state[index]
                for byte in 0..<4 where position + index * 4 + byte < output.count {
                    output[position + index * 4 + byte] ^= UInt8(truncatingIfNeeded: value >> (8 * UInt32(byte)))
                }
            }
            position += 64
            counter &+= 1
        }
        return output
    }
}

extension UInt32 {
    /// The bits rotated left by `count`.
    fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}
