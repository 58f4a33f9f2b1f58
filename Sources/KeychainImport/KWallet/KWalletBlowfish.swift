import KeychainCore

/// The byte order in which KWallet's C++ code read bytes into 32-bit words, for Blowfish and for its own SHA-1.
///
/// KWallet chose it with `#if Q_BYTE_ORDER == Q_BIG_ENDIAN` in files that, from KDE Frameworks 5 on, no longer
/// defined `Q_BYTE_ORDER`, so the test became `0 == 0` (kept since, to keep wallets readable). The two eras of
/// wallet files written on little-endian machines (all of them, in practice) differ:
/// - KDE 4 (`kwalletd`): Blowfish on little-endian words (not the standard one), standard SHA-1.
/// - KDE Frameworks 5 and 6 (`kwalletd5`, `kwalletd6`): standard (big-endian) Blowfish, SHA-1 on little-endian words
///   (not the standard one; see ``KWalletSHA1``).
enum KWalletWordOrder: Sendable, CaseIterable {
    /// Bytes `b0 b1 b2 b3` are the word `b0b1b2b3` (the standard algorithms' order).
    case bigEndian
    /// Bytes `b0 b1 b2 b3` are the word `b3b2b1b0`.
    case littleEndian

    /// The word at `bytes[index ..< index + 4]` (the caller keeps `index + 4` within `bytes`).
    func load(_ bytes: UnsafeBufferPointer<UInt8>, _ index: Int) -> UInt32 {
        let b0 = UInt32(bytes[index]), b1 = UInt32(bytes[index + 1]), b2 = UInt32(bytes[index + 2]), b3 = UInt32(bytes[index + 3])
        switch self {
        case .bigEndian: return b0 << 24 | b1 << 16 | b2 << 8 | b3
        case .littleEndian: return b3 << 24 | b2 << 16 | b1 << 8 | b0
        }
    }

    /// Writes `word` to `bytes[index ..< index + 4]` (the caller keeps `index + 4` within `bytes`).
    func store(_ word: UInt32, _ bytes: UnsafeMutableBufferPointer<UInt8>, _ index: Int) {
        let b0 = UInt8(truncatingIfNeeded: word >> 24), b1 = UInt8(truncatingIfNeeded: word >> 16)
        let b2 = UInt8(truncatingIfNeeded: word >> 8), b3 = UInt8(truncatingIfNeeded: word)
        switch self {
        case .bigEndian:
            (bytes[index], bytes[index + 1], bytes[index + 2], bytes[index + 3]) = (b0, b1, b2, b3)
        case .littleEndian:
            (bytes[index], bytes[index + 1], bytes[index + 2], bytes[index + 3]) = (b3, b2, b1, b0)
        }
    }
}

extension Blowfish {
    /// How a wallet's blocks are chained.
    enum Mode: Sendable {
        /// Each 8-byte block on its own (wallets marked cipher 0, written before KWallet's CBC was fixed).
        case ecb
        /// Cipher block chaining from an all-zero initialization vector (cipher 3).
        case cbc
    }

    /// Decrypts `data` (a whole number of 8-byte blocks: the caller checks) in `mode`, its words in `order`.
    func decrypt(_ data: [UInt8], mode: Mode, order: KWalletWordOrder) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: data.count)
        data.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                var previousLeft: UInt32 = 0, previousRight: UInt32 = 0
                var index = 0
                while index + 8 <= input.count {
                    let cipherLeft = order.load(input, index), cipherRight = order.load(input, index + 4)
                    var left = cipherLeft, right = cipherRight
                    decrypt(&left, &right)
                    if mode == .cbc {
                        // XOR is byte by byte, so chaining on words read in either order is the same.
                        left ^= previousLeft
                        right ^= previousRight
                        previousLeft = cipherLeft
                        previousRight = cipherRight
                    }
                    order.store(left, out, index)
                    order.store(right, out, index + 4)
                    index += 8
                }
            }
        }
        return output
    }

    /// Encrypts `data` (a whole number of 8-byte blocks: the caller checks) in `mode`, its words in `order`: the
    /// inverse of ``decrypt(_:mode:order:)``, for tests that build wallets.
    func encrypt(_ data: [UInt8], mode: Mode, order: KWalletWordOrder) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: data.count)
        data.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                var previousLeft: UInt32 = 0, previousRight: UInt32 = 0
                var index = 0
                while index + 8 <= input.count {
                    var left = order.load(input, index), right = order.load(input, index + 4)
                    if mode == .cbc {
                        left ^= previousLeft
                        right ^= previousRight
                    }
                    encrypt(&left, &right)
                    previousLeft = left
                    previousRight = right
                    order.store(left, out, index)
                    order.store(right, out, index + 4)
                    index += 8
                }
            }
        }
        return output
    }
}
