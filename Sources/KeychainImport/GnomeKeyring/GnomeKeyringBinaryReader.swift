import Foundation
import KeychainCore

/// Reads the fields of gnome-keyring's binary keyring format: big-endian 32-bit numbers, strings and byte arrays
/// as a 32-bit length (all ones: none) and the bytes, times as two 32-bit halves. Every length is checked against
/// what is left, so a damaged file ends in ``GnomeKeyringFile/damaged(_:)``, never in a read past the end.
struct GnomeKeyringBinaryReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    /// What the file is called in messages.
    let name: String

    init(_ bytes: [UInt8], offset: Int = 0, name: String) {
        self.bytes = bytes
        self.offset = offset
        self.name = name
    }

    var remaining: Int { bytes.count - offset }

    mutating func byte() throws(KeychainError) -> UInt8 {
        guard remaining >= 1 else { throw GnomeKeyringFile.damaged(name) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32() throws(KeychainError) -> UInt32 {
        guard remaining >= 4 else { throw GnomeKeyringFile.damaged(name) }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func take(_ count: Int) throws(KeychainError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw GnomeKeyringFile.damaged(name) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A byte array; nil for none (length all ones).
    mutating func byteArray() throws(KeychainError) -> [UInt8]? {
        let length = try uint32()
        if length == .max { return nil }
        return try take(Int(length))
    }

    /// A UTF-8 string; nil for none. Text that is not UTF-8 is damage (gnome-keyring refuses it too).
    mutating func string() throws(KeychainError) -> String? {
        guard let raw = try byteArray() else { return nil }
        guard let text = String(validating: raw, as: UTF8.self) else { throw GnomeKeyringFile.damaged(name) }
        return text
    }

    /// A time: seconds since 1970 as two 32-bit halves, high first.
    mutating func time() throws(KeychainError) -> Date {
        let high = UInt64(try uint32())
        let low = UInt64(try uint32())
        return Date(timeIntervalSince1970: TimeInterval(high << 32 | low))
    }

    /// An attribute list: a count, then each name, a type (0 text, 1 a 32-bit number, written out in decimal), and
    /// the value. In the unencrypted part, text values are MD5 digests of the real ones (kept there so that a locked
    /// keyring can be searched); the encrypted part holds the values themselves.
    mutating func attributes() throws(KeychainError) -> [String: String] {
        let count = try uint32()
        // Each attribute takes at least 12 bytes: a bound that a damaged count cannot get past.
        guard Int(count) <= remaining / 12 else { throw GnomeKeyringFile.damaged(name) }
        var out: [String: String] = [:]
        for _ in 0..<count {
            let key = try string() ?? ""
            switch try uint32() {
            case 0: out[key] = try string() ?? ""
            case 1: out[key] = String(try uint32())
            default: throw GnomeKeyringFile.damaged(name)
            }
        }
        return out
    }
}
