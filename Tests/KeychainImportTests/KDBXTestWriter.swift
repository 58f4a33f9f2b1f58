import Crypto
import CryptoExtras
import Foundation

import KeychainCore

@testable import KeychainImport

/// Writes a KDBX 4 file from a decrypted payload, with a chosen cipher and KDF: the way the tests get databases that
/// keepassxc-cli cannot make (Argon2, ChaCha20). keepassxc-cli then opens each, which checks this writer.
enum KDBXTestWriter {
    /// The key derivations the tests use (small costs, to keep the tests fast).
    enum KDF: Sendable, CustomStringConvertible {
        case argon2d, argon2id, aesKDF

        var description: String {
            switch self {
            case .argon2d: "Argon2d"
            case .argon2id: "Argon2id"
            case .aesKDF: "AES-KDF"
            }
        }
    }

    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func le32(_ value: UInt32) -> [UInt8] { Array(KDBXLittleEndian.bytes(UInt64(value)).prefix(4)) }

    static func variant(_ type: UInt8, _ key: String, _ value: [UInt8]) -> [UInt8] {
        [type] + le32(UInt32(key.utf8.count)) + Array(key.utf8) + le32(UInt32(value.count)) + value
    }

    static func field(_ id: UInt8, _ value: [UInt8]) -> [UInt8] { [id] + le32(UInt32(value.count)) + value }

    /// The KDBX 4 file holding `payload` (its inner header and XML), locked with `password`.
    static func write(payload: KDBXFile.Payload, password: String, cipher: KDBXFile.Cipher, kdf: KDF, compressed: Bool) throws -> Data {
        let masterSeed = random(32)
        let iv = random(cipher == .chacha20 ? 12 : 16)
        var parameters: [UInt8] = [0x00, 0x01]
        let derivation: KDBXFile.KeyDerivation
        switch kdf {
        case .argon2d, .argon2id:
            let salt = random(32)
            let uuid: [UInt8] =
                kdf == .argon2d
                ? HexDigits.decode("ef636ddf8c29444b91f7a9a403e30a0c") ?? []
                : HexDigits.decode("9e298b1956db4773b23dfc3ec6f0a1e6") ?? []
            parameters += variant(0x42, "$UUID", uuid)
            parameters += variant(0x42, "S", salt)
            parameters += variant(0x04, "P", le32(2))
            parameters += variant(0x05, "M", KDBXLittleEndian.bytes(1 << 20))
            parameters += variant(0x05, "I", KDBXLittleEndian.bytes(3))
            parameters += variant(0x04, "V", le32(0x13))
            derivation = .argon2(type: kdf == .argon2d ? 0 : 2, salt: salt, iterations: 3, memory: 1 << 20, parallelism: 2, version: 0x13)
        case .aesKDF:
            let seed = random(32)
            parameters += variant(0x42, "$UUID", HexDigits.decode("c9d9f39a628a4460bf740d08c18a4fea") ?? [])
            parameters += variant(0x05, "R", KDBXLittleEndian.bytes(10_000))
            parameters += variant(0x42, "S", seed)
            derivation = .aes(seed: seed, rounds: 10_000)
        }
        parameters.append(0)

        let cipherID = cipher == .chacha20 ? "d6038a2b8b6f4cb5a524339a31dbb59a" : "31c1f2e6bf714350be5805216afc5aff"
        var header: [UInt8] = [0x03, 0xD9, 0xA2, 0x9A, 0x67, 0xFB, 0x4B, 0xB5, 0x00, 0x00, 0x04, 0x00]
        header += field(2, HexDigits.decode(cipherID) ?? [])
        header += field(3, le32(compressed ? 1 : 0))
        header += field(4, masterSeed)
        header += field(7, iv)
        header += field(11, parameters)
        header += field(0, [0x0D, 0x0A, 0x0D, 0x0A])

        let composite = try KDBXCompositeKey(password: password, keyFile: nil)
        let transformed = try derivation.transform(composite.bytes)
        let hmacBase = Array(SHA512.hash(data: masterSeed + transformed + [1]))
        let key = Array(SHA256.hash(data: masterSeed + transformed))

        var plain = payload.innerHeader + payload.xml
        if compressed { plain = try gzip(plain) }
        let ciphertext: [UInt8]
        switch cipher {
        case .chacha20: ciphertext = try KDBXPrimitives.chacha20(plain, key: key, nonce: iv)
        case .aes256: ciphertext = Array(try AES._CBC.encrypt(plain, using: SymmetricKey(data: key), iv: AES._CBC.IV(ivBytes: iv)))
        }

        var file = header
        file += Array(SHA256.hash(data: header))
        file += KDBXFile.hmac(key: KDBXFile.blockKey(index: UInt64.max, base: hmacBase), header)
        // Blocks of at most 1 MiB, then the empty one.
        var blocks: [[UInt8]] = stride(from: 0, to: ciphertext.count, by: 1 << 20).map {
            Array(ciphertext[$0..<min($0 + (1 << 20), ciphertext.count)])
        }
        blocks.append([])
        for (index, block) in blocks.enumerated() {
            let size = le32(UInt32(block.count))
            file += KDBXFile.hmac(key: KDBXFile.blockKey(index: UInt64(index), base: hmacBase), KDBXLittleEndian.bytes(UInt64(index)) + size + block)
            file += size + block
        }
        return Data(file)
    }

    /// `data` compressed with the system's gzip program.
    static func gzip(_ data: [UInt8]) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kdbx-gzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("payload")
        try Data(data).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-n", file.path]
        try process.run()
        process.waitUntilExit()
        return Array(try Data(contentsOf: folder.appendingPathComponent("payload.gz")))
    }
}
