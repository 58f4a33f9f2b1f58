import Crypto
import KeychainCore

/// OpenBSD's `bcrypt_pbkdf`: the key derivation of OpenSSH's passphrase-protected private keys (`kdfname "bcrypt"`).
///
/// PBKDF2's structure with bcrypt's hash: each round hashes the SHA-512 of the passphrase and of the salt (with a
/// 32-bit block counter appended) through Blowfish's expensive key schedule (one `expand(salt:key:)` and 64 rounds of
/// `expand(key:)` with each), then encrypts "OxychromaticBlowfishSwatDynamite" 64 times; the rounds' outputs are
/// XORed, and the output blocks are interleaved byte by byte into the key.
package enum BcryptPBKDF {
    /// The most rounds accepted: OpenSSH writes 16 by default and `ssh-keygen -a` more; past this a file is refused
    /// rather than keeping a request busy for minutes.
    package static let maximumRounds: UInt32 = 1024

    /// `length` bytes (1 to 1,024) derived from `passphrase` and `salt` (1 or more bytes) in `rounds` rounds (1 or more).
    package static func derive(passphrase: [UInt8], salt: [UInt8], rounds: UInt32, length: Int) -> [UInt8]? {
        guard rounds >= 1, rounds <= maximumRounds, !salt.isEmpty, length >= 1, length <= 1024 else { return nil }
        let blockLength = 32
        let stride = (length + blockLength - 1) / blockLength
        var amount = (length + stride - 1) / stride
        let hashedPassphrase = Array(SHA512.hash(data: passphrase))
        var key = [UInt8](repeating: 0, count: length)
        var remaining = length
        var count: UInt32 = 1
        while remaining > 0 {
            var countSalt = salt
            for shift in [24, 16, 8, 0] as [UInt32] { countSalt.append(UInt8(truncatingIfNeeded: count >> shift)) }
            var block = hash(passphrase: hashedPassphrase, salt: Array(SHA512.hash(data: countSalt)))
            var output = block
            for _ in 1..<rounds {
                block = hash(passphrase: hashedPassphrase, salt: Array(SHA512.hash(data: block)))
                for index in 0..<blockLength { output[index] ^= block[index] }
            }
            amount = min(amount, remaining)
            var written = 0
            while written < amount {
                let destination = written * stride + Int(count - 1)
                if destination >= length { break }
                key[destination] = output[written]
                written += 1
            }
            remaining -= written
            count += 1
        }
        return key
    }

    /// The 32-byte bcrypt hash of two SHA-512 digests.
    static func hash(passphrase: [UInt8], salt: [UInt8]) -> [UInt8] {
        var state = Blowfish()
        state.expand(salt: salt, key: passphrase)
        for _ in 0..<64 {
            state.expand(key: salt)
            state.expand(key: passphrase)
        }
        let magic = Array("OxychromaticBlowfishSwatDynamite".utf8)
        var words = [UInt32](repeating: 0, count: 8)
        for index in 0..<8 {
            for byte in magic[4 * index..<4 * index + 4] { words[index] = words[index] << 8 | UInt32(byte) }
        }
        for _ in 0..<64 {
            for block in 0..<4 {
                var left = words[2 * block], right = words[2 * block + 1]
                state.encrypt(&left, &right)
                words[2 * block] = left
                words[2 * block + 1] = right
            }
        }
        // The words are stored little-endian (as OpenBSD's code does).
        var output: [UInt8] = []
        output.reserveCapacity(32)
        for word in words {
            for shift in [0, 8, 16, 24] as [UInt32] { output.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        return output
    }
}
