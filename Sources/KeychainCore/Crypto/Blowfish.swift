/// Blowfish (Bruce Schneier, 1993), 16 rounds: the block cipher of KWallet's wallet files (a key of 1 to 56 bytes) and,
/// with its expensive key schedule, of bcrypt (`BcryptPBKDF` in KeychainSSH, which derives the key of a passphrase-protected OpenSSH
/// private key). Implemented here because libcrypto's copy is deprecated and may be left out of a build.
package struct Blowfish: Sendable {
    /// The 18 subkeys.
    private var p: [UInt32]
    /// The four S-boxes, one after the other (256 words each).
    private var s: [UInt32]

    /// The longest key Blowfish takes, in bytes (448 bits).
    package static let maximumKeyLength = 56

    /// Sets up the cipher for `key` (1 to ``maximumKeyLength`` bytes); `nil` for a key of another length.
    package init?(key: [UInt8]) {
        guard !key.isEmpty, key.count <= Self.maximumKeyLength else { return nil }
        self.init()
        expand(key: key)
    }

    /// The round function.
    @inline(__always)
    private func f(_ x: UInt32) -> UInt32 {
        ((s[Int(x >> 24)] &+ s[256 + Int((x >> 16) & 0xFF)]) ^ s[512 + Int((x >> 8) & 0xFF)]) &+ s[768 + Int(x & 0xFF)]
    }

    /// Encrypts the block whose halves are `left` and `right`, in place.
    package func encrypt(_ left: inout UInt32, _ right: inout UInt32) {
        var l = left, r = right
        for i in 0..<16 {
            l ^= p[i]
            r ^= f(l)
            swap(&l, &r)
        }
        swap(&l, &r)
        r ^= p[16]
        l ^= p[17]
        left = l
        right = r
    }

    /// Decrypts the block whose halves are `left` and `right`, in place.
    package func decrypt(_ left: inout UInt32, _ right: inout UInt32) {
        var l = left, r = right
        for i in stride(from: 17, to: 1, by: -1) {
            l ^= p[i]
            r ^= f(l)
            swap(&l, &r)
        }
        swap(&l, &r)
        r ^= p[1]
        l ^= p[0]
        left = l
        right = r
    }

    // MARK: bcrypt's expensive key schedule (EksBlowfish)

    /// The initial state (pi's digits), before any key: the start of bcrypt's key schedule.
    package init() {
        p = Self.initialP
        s = Self.initialS0 + Self.initialS1 + Self.initialS2 + Self.initialS3
    }

    /// The next 32-bit word of `bytes` from `index`, big-endian, going round to the start at the end.
    private static func word(_ bytes: [UInt8], _ index: inout Int) -> UInt32 {
        var word: UInt32 = 0
        for _ in 0..<4 {
            if index >= bytes.count { index = 0 }
            word = word << 8 | UInt32(bytes[index])
            index += 1
        }
        return word
    }

    /// bcrypt's `ExpandKey(state, salt, key)`: the key mixed into the subkeys, then every subkey and S-box entry
    /// replaced by the encryption of the previous block XORed with the salt's next 8 bytes (`salt` and `key` not
    /// empty).
    package mutating func expand(salt: [UInt8], key: [UInt8]) {
        var j = 0
        for i in 0..<18 { p[i] ^= Self.word(key, &j) }
        j = 0
        var left: UInt32 = 0, right: UInt32 = 0
        for i in stride(from: 0, to: 18, by: 2) {
            left ^= Self.word(salt, &j)
            right ^= Self.word(salt, &j)
            encrypt(&left, &right)
            p[i] = left
            p[i + 1] = right
        }
        for i in stride(from: 0, to: 1024, by: 2) {
            left ^= Self.word(salt, &j)
            right ^= Self.word(salt, &j)
            encrypt(&left, &right)
            s[i] = left
            s[i + 1] = right
        }
    }

    /// bcrypt's `ExpandKey(state, 0, key)`: Blowfish's own key schedule applied to the current state (`key` not empty).
    package mutating func expand(key: [UInt8]) {
        var j = 0
        for i in 0..<18 { p[i] ^= Self.word(key, &j) }
        var left: UInt32 = 0, right: UInt32 = 0
        for i in stride(from: 0, to: 18, by: 2) {
            encrypt(&left, &right)
            p[i] = left
            p[i + 1] = right
        }
        for i in stride(from: 0, to: 1024, by: 2) {
            encrypt(&left, &right)
            s[i] = left
            s[i + 1] = right
        }
    }
}
