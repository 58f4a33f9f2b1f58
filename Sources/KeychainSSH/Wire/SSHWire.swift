import Foundation
import KeychainCore

/// Reads the SSH wire types (RFC 4251 §5) from bytes a peer or a file gave, refusing anything that runs past the end.
package struct SSHWireReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    /// A reader of `bytes` from their start.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A reader of `data` from its start.
    package init(_ data: Data) { self.bytes = Array(data) }

    /// Whether every byte was read.
    package var isAtEnd: Bool { offset == bytes.count }

    /// The bytes not read yet.
    package var remaining: [UInt8] { Array(bytes[offset...]) }

    static func truncated(_ what: String) -> KeychainError {
        KeychainError(code: .corruptData, message: "The SSH data ends in the middle of \(what).")
    }

    /// One byte.
    package mutating func byte() throws(KeychainError) -> UInt8 {
        guard offset < bytes.count else { throw Self.truncated("a byte") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A `boolean`: any non-zero byte is true.
    package mutating func boolean() throws(KeychainError) -> Bool { try byte() != 0 }

    /// A big-endian `uint32`.
    package mutating func uint32() throws(KeychainError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw Self.truncated("a number") }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// `count` raw bytes.
    package mutating func raw(_ count: Int) throws(KeychainError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw Self.truncated("a field") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A `string`: a `uint32` length and that many bytes.
    package mutating func string() throws(KeychainError) -> [UInt8] {
        let length = try uint32()
        guard UInt64(length) <= UInt64(bytes.count - offset) else { throw Self.truncated("a string") }
        return try raw(Int(length))
    }

    /// A `string` that must be UTF-8 text.
    package mutating func text() throws(KeychainError) -> String {
        let value = try string()
        guard let text = String(validating: value, as: UTF8.self) else {
            throw KeychainError(code: .corruptData, message: "An SSH name or comment is not UTF-8.")
        }
        return text
    }

    /// An `mpint` that must not be negative, as its big-endian magnitude without leading zeros.
    package mutating func unsignedMPInt() throws(KeychainError) -> [UInt8] {
        let value = try string()
        guard value.first.map({ $0 & 0x80 == 0 }) ?? true else {
            throw KeychainError(code: .corruptData, message: "An SSH key holds a negative number.")
        }
        return Array(value.drop(while: { $0 == 0 }))
    }
}

/// Writes the SSH wire types (RFC 4251 §5).
package struct SSHWireWriter {
    /// What was written.
    package private(set) var bytes: [UInt8] = []

    /// An empty writer.
    package init() {}

    /// One byte.
    package mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// A `boolean`.
    package mutating func boolean(_ value: Bool) { bytes.append(value ? 1 : 0) }

    /// A big-endian `uint32`.
    package mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// Raw bytes.
    package mutating func raw(_ value: some Sequence<UInt8>) { bytes += value }

    /// A `string` of bytes.
    package mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes += value
    }

    /// A `string` of UTF-8 text.
    package mutating func string(_ text: String) { string(Array(text.utf8)) }

    /// An `mpint` from a non-negative big-endian magnitude: leading zeros dropped, one zero byte added when the top bit
    /// is set.
    package mutating func mpint(unsigned magnitude: some Collection<UInt8>) {
        let trimmed = Array(magnitude.drop(while: { $0 == 0 }))
        string(trimmed.first.map { $0 & 0x80 != 0 } == true ? [0] + trimmed : trimmed)
    }
}
