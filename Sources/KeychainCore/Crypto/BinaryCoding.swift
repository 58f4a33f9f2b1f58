import Foundation

/// Big-endian binary writer for the keychain's on-disk formats (keybag, item blobs, attribute records) and
/// keychaind's messages. The small writes are inlinable: a message is many of them, and a call into another
/// module for each byte would cost more than the byte.
package struct BinaryWriter {
    @usableFromInline package private(set) var bytes: [UInt8] = []

    @inlinable package init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    @inlinable package mutating func u8(_ v: UInt8) { bytes.append(v) }
    @inlinable package mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    @inlinable package mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    @inlinable package mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    package mutating func raw(_ v: some Sequence<UInt8>) { bytes.append(contentsOf: v) }
    /// A byte string with a 32-bit length prefix.
    package mutating func lengthPrefixed(_ v: some Collection<UInt8>) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }
    /// Bytes with a 32-bit length prefix (the concrete forms keep other modules off the generic path).
    @inlinable package mutating func lengthPrefixed(_ v: [UInt8]) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    /// Data with a 32-bit length prefix.
    @inlinable package mutating func lengthPrefixed(_ v: Data) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    /// A string's UTF-8 with a 32-bit length prefix.
    @inlinable package mutating func lengthPrefixedUTF8(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A short byte string (its first 255 bytes at most) with an 8-bit length prefix.
    @inlinable package mutating func shortString(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            let kept = UnsafeBufferPointer(rebasing: utf8.prefix(255))
            u8(UInt8(kept.count))
            bytes.append(contentsOf: kept)
        }
    }

    /// Overwrites the four bytes at `offset` with `v` (a length known only once what follows is written).
    @inlinable package mutating func patchU32(_ v: UInt32, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: v >> 24)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: v >> 16)
        bytes[offset + 2] = UInt8(truncatingIfNeeded: v >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: v)
    }

    package var data: Data { Data(bytes) }
}

/// Big-endian reader that reports truncation instead of trapping: every read past the end throws the
/// error the caller chose, so a parser is one `throws(KeychainError)` function with no catch-all. The small reads
/// are inlinable and index the array directly, without making a slice for each integer.
package struct BinaryReader {
    @usableFromInline let bytes: [UInt8]
    @usableFromInline let truncated: KeychainError
    @usableFromInline package private(set) var offset = 0

    package init(
        _ data: some Sequence<UInt8>,
        truncated: KeychainError = KeychainError(code: .corruptData, message: "Stored data is truncated.")
    ) {
        bytes = Array(data)
        self.truncated = truncated
    }

    /// A reader of `data` without copying it.
    @inlinable package init(_ data: [UInt8], truncated: KeychainError) {
        bytes = data
        self.truncated = truncated
    }

    /// A reader of `data` from `offset` on (clamped to its bounds), without copying it.
    @inlinable package init(_ data: [UInt8], from offset: Int, truncated: KeychainError) {
        bytes = data
        self.truncated = truncated
        self.offset = min(max(offset, 0), data.count)
    }

    @inlinable package var remaining: Int { bytes.count - offset }
    @inlinable package var isAtEnd: Bool { offset == bytes.count }
    /// The next byte, not consumed; nil at the end.
    @inlinable package var nextByte: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    @inlinable package mutating func take(_ n: Int) throws(KeychainError) -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else { throw truncated }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    @inlinable package mutating func u8() throws(KeychainError) -> UInt8 {
        guard offset < bytes.count else { throw truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inlinable package mutating func u16() throws(KeychainError) -> UInt16 { UInt16(try integer(2)) }
    @inlinable package mutating func u32() throws(KeychainError) -> UInt32 { UInt32(try integer(4)) }
    @inlinable package mutating func u64() throws(KeychainError) -> UInt64 { try integer(8) }

    @inlinable mutating func integer(_ width: Int) throws(KeychainError) -> UInt64 {
        guard width <= remaining else { throw truncated }
        var value: UInt64 = 0
        for index in offset..<offset + width { value = value << 8 | UInt64(bytes[index]) }
        offset += width
        return value
    }

    @inlinable package mutating func lengthPrefixed() throws(KeychainError) -> ArraySlice<UInt8> {
        let n = try u32()
        return try take(Int(n))
    }

    /// A u8-prefixed UTF-8 string; invalid UTF-8 counts as damage.
    @inlinable package mutating func shortString() throws(KeychainError) -> String {
        let n = try u8()
        guard let s = BinaryReader.utf8String(try take(Int(n))) else { throw truncated }
        return s
    }

    /// The string `bytes` hold as UTF-8, or nil when they are not valid UTF-8. ASCII (attribute codes, most
    /// names) takes a fast path; anything else is validated in full.
    @inlinable package static func utf8String(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            if buffer.allSatisfy({ $0 < 0x80 }) { return String(decoding: buffer, as: UTF8.self) }
            return String(validating: buffer, as: UTF8.self)
        }
    }
}
