/// SHA-1 as KWallet's own implementation computes it, which depends on the byte order it was built with (see
/// ``KWalletWordOrder``): with ``KWalletWordOrder/bigEndian`` it is the standard SHA-1; with
/// ``KWalletWordOrder/littleEndian`` (KDE Frameworks 5 and 6) the padded message's 32-bit words are read, and the
/// digest's five words written, little-endian, which gives a different (non-standard) digest.
///
/// KWallet uses it to stretch a password into a key (wallets of format 0.0) and to check a decrypted wallet.
enum KWalletSHA1 {
    /// The 20-byte digest of `message`, words in `order`.
    static func hash(_ message: [UInt8], order: KWalletWordOrder) -> [UInt8] {
        // Standard padding: 0x80, zeros up to 56 bytes mod 64, the length in bits (64-bit big-endian).
        var padded = message
        padded.append(0x80)
        while padded.count % 64 != 56 {
            padded.append(0)
        }
        let bits = UInt64(message.count) &* 8
        for shift in stride(from: 56, through: 0, by: -8) {
            padded.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var w = [UInt32](repeating: 0, count: 80)
        padded.withUnsafeBufferPointer { bytes in
            var block = 0
            while block + 64 <= bytes.count {
                for t in 0..<16 {
                    w[t] = order.load(bytes, block + 4 * t)
                }
                for t in 16..<80 {
                    let x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
                    w[t] = x << 1 | x >> 31
                }
                var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4]
                for t in 0..<80 {
                    let f: UInt32, k: UInt32
                    switch t {
                    case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
                    case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
                    case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
                    default: f = b ^ c ^ d; k = 0xCA62_C1D6
                    }
                    let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[t]
                    e = d
                    d = c
                    c = b << 30 | b >> 2
                    b = a
                    a = temp
                }
                h[0] &+= a
                h[1] &+= b
                h[2] &+= c
                h[3] &+= d
                h[4] &+= e
                block += 64
            }
        }
        var digest = [UInt8](repeating: 0, count: 20)
        digest.withUnsafeMutableBufferPointer { out in
            for i in 0..<5 {
                order.store(h[i], out, 4 * i)
            }
        }
        return digest
    }
}
