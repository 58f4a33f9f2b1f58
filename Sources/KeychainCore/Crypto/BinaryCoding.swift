import Foundation

/// Big-endian binary writer for the keychain's on-disk formats (keybag, item blobs, attribute records).
package struct BinaryWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }
    package mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    package mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    package mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    package mutating func raw(_ v: some Sequence<UInt8>) { bytes.append(contentsOf: v) }
    /// A byte string with a 32-bit length prefix.
    package mutating func lengthPrefixed(_ v: some Collection<UInt8>) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }
    /// Bytes with a 32-bit length prefix (the concrete forms keep other modules off the generic path).
    package mutating func lengthPrefixed(_ v: [UInt8]) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    /// Data with a 32-bit length prefix.
    package mutating func lengthPrefixed(_ v: Data) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    /// A string's UTF-8 with a 32-bit length prefix.
    package mutating func lengthPrefixedUTF8(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A short byte string (≤ 255 bytes) with an 8-bit length prefix.
    package mutating func shortString(_ s: String) {
        let utf8 = Array(s.utf8.prefix(255))
        u8(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    package var data: Data { Data(bytes) }
}

/// Big-endian reader that reports truncation instead of trapping: every read past the end throws the
/// error the caller chose, so a parser is one `throws(KeychainError)` function with no catch-all.
package struct BinaryReader {
    private let bytes: [UInt8]
    private let truncated: KeychainError
    package private(set) var offset = 0

    package init(_ data: some Sequence<UInt8>,
                 truncated: KeychainError = KeychainError(code: .corruptData, message: "Stored data is truncated.")) {
        bytes = Array(data)
        self.truncated = truncated
    }

    /// A reader of `data` without copying it.
    package init(_ data: [UInt8], truncated: KeychainError) {
        bytes = data
        self.truncated = truncated
    }

    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { offset == bytes.count }

    package mutating func take(_ n: Int) throws(KeychainError) -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else { throw truncated }
        defer { offset += n }
        return bytes[offset ..< offset + n]
    }

    package mutating func u8() throws(KeychainError) -> UInt8 { try take(1).first ?? 0 }
    package mutating func u16() throws(KeychainError) -> UInt16 { UInt16(try integer(2)) }
    package mutating func u32() throws(KeychainError) -> UInt32 { UInt32(try integer(4)) }
    package mutating func u64() throws(KeychainError) -> UInt64 { try integer(8) }

    private mutating func integer(_ width: Int) throws(KeychainError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try take(width) { value = value << 8 | UInt64(byte) }
        return value
    }

    package mutating func lengthPrefixed() throws(KeychainError) -> ArraySlice<UInt8> {
        let n = try u32()
        return try take(Int(n))
    }

    /// A u8-prefixed UTF-8 string; invalid UTF-8 counts as damage.
    package mutating func shortString() throws(KeychainError) -> String {
        let n = try u8()
        let raw = try take(Int(n))
        guard let s = String(validating: raw, as: UTF8.self) else { throw truncated }
        return s
    }
}
