import CKeychainPKCS12

/// RFC 2409's second Oakley group (section 6.2): the 1024-bit MODP prime p = 2^1024 − 2^960 − 1 + 2^64 ·
/// (⌊2^894 π⌋ + 129093), a safe prime, with generator 2. `dh-ietf1024-sha256-aes128-cbc-pkcs7` exchanges keys in it.
enum OakleyGroup2 {
    /// The length of p, and so of every public key and shared secret once left-padded: 128 bytes.
    static let byteCount = 128

    /// p, big-endian.
    static let prime: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC9, 0x0F, 0xDA, 0xA2, 0x21, 0x68, 0xC2, 0x34,
        0xC4, 0xC6, 0x62, 0x8B, 0x80, 0xDC, 0x1C, 0xD1, 0x29, 0x02, 0x4E, 0x08, 0x8A, 0x67, 0xCC, 0x74,
        0x02, 0x0B, 0xBE, 0xA6, 0x3B, 0x13, 0x9B, 0x22, 0x51, 0x4A, 0x08, 0x79, 0x8E, 0x34, 0x04, 0xDD,
        0xEF, 0x95, 0x19, 0xB3, 0xCD, 0x3A, 0x43, 0x1B, 0x30, 0x2B, 0x0A, 0x6D, 0xF2, 0x5F, 0x14, 0x37,
        0x4F, 0xE1, 0x35, 0x6D, 0x6D, 0x51, 0xC2, 0x45, 0xE4, 0x85, 0xB5, 0x76, 0x62, 0x5E, 0x7E, 0xC6,
        0xF4, 0x4C, 0x42, 0xE9, 0xA6, 0x37, 0xED, 0x6B, 0x0B, 0xFF, 0x5C, 0xB6, 0xF4, 0x06, 0xB7, 0xED,
        0xEE, 0x38, 0x6B, 0xFB, 0x5A, 0x89, 0x9F, 0xA5, 0xAE, 0x9F, 0x24, 0x11, 0x7C, 0x4B, 0x1F, 0xE6,
        0x49, 0x28, 0x66, 0x51, 0xEC, 0xE6, 0x53, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]

    /// p − 1, big-endian (p ends in 0xFF, so only the last byte changes).
    static let primeMinusOne: [UInt8] = prime.dropLast() + [0xFE]

    /// The generator, 2.
    static let generator: [UInt8] = [2]

    /// The length of a private exponent this side draws: 256 bits, twice the security level of the 1024-bit group.
    static let privateExponentByteCount = 32

    /// A fresh private exponent from the system's random number generator (getrandom), never 0 or 1.
    static func randomPrivateExponent() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        while true {
            var exponent = [UInt8]()
            exponent.reserveCapacity(privateExponentByteCount)
            for _ in 0..<(privateExponentByteCount / 8) {
                withUnsafeBytes(of: generator.next() as UInt64) { exponent.append(contentsOf: $0) }
            }
            if isAboveOne(exponent) { return exponent }
        }
    }

    /// A peer's public key checked and left-padded to ``byteCount`` bytes: leading zero bytes are ignored, the rest
    /// must be at most 128 bytes and in 2…p − 2 (0, 1 and p − 1 would make the shared secret 0, 1 or ±1; p is a
    /// safe prime, so every other value has an order of at least (p − 1) / 2).
    static func validatedPublicKey(_ bytes: [UInt8]) throws(SecretTransferError) -> [UInt8] {
        let significant = bytes.drop { $0 == 0 }
        guard significant.count <= byteCount else {
            throw .invalidPublicKey(.tooLong(byteCount: significant.count))
        }
        let padded = leftPadded(Array(significant))
        // Public values: an ordinary comparison (big-endian, same length, so lexicographic order is numeric order).
        guard isAboveOne(padded), padded.lexicographicallyPrecedes(primeMinusOne) else {
            throw .invalidPublicKey(.outOfRange)
        }
        return padded
    }

    /// `base^exponent mod p`, ``byteCount`` bytes, left-padded; constant-time in `exponent` (libcrypto's
    /// `BN_mod_exp_mont_consttime`, through the libcrypto that CKeychainPKCS12 opens on first use).
    static func power(_ base: [UInt8], _ exponent: [UInt8]) throws(SecretTransferError) -> [UInt8] {
        try modularPower(base: base, exponent: exponent, modulus: prime)
    }

    /// `base^exponent mod modulus` as `modulus.count` bytes, left-padded, with `ckeychain_dh_modexp`.
    static func modularPower(base: [UInt8], exponent: [UInt8], modulus: [UInt8]) throws(SecretTransferError) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: modulus.count)
        var error = [CChar](repeating: 0, count: 256)
        let status = base.withUnsafeBufferPointer { base in
            exponent.withUnsafeBufferPointer { exponent in
                modulus.withUnsafeBufferPointer { modulus in
                    result.withUnsafeMutableBufferPointer { out in
                        error.withUnsafeMutableBufferPointer { error in
                            ckeychain_dh_modexp(
                                base.baseAddress, base.count, exponent.baseAddress, exponent.count,
                                modulus.baseAddress, modulus.count, out.baseAddress, error.baseAddress, error.count)
                        }
                    }
                }
            }
        }
        guard status == 0 else {
            let text = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw status == -1 ? .cryptoLibraryUnavailable(text) : .cryptoFailed(text)
        }
        return result
    }

    /// `bytes` with zeros prepended up to ``byteCount`` (unchanged when already that long or longer).
    static func leftPadded(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8](repeating: 0, count: max(0, byteCount - bytes.count)) + bytes
    }

    /// Whether the big-endian number `bytes` is greater than 1.
    static func isAboveOne(_ bytes: [UInt8]) -> Bool {
        guard let last = bytes.last else { return false }
        return last > 1 || bytes.dropLast().contains { $0 != 0 }
    }
}
