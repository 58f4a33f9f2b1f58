import Foundation

/// The byte layout every sync format is built from: a domain label, then fields, each a 4-byte big-endian length
/// followed by its bytes (integers as 8 bytes big-endian). Two different sequences of fields never give the same
/// bytes, so what is signed or bound as associated data cannot be read two ways.
///
/// The layouts built from it (record and item-key associated data, zone-key HPKE info, the device list) are fixed
/// by golden vectors in `Tests/KeychainSyncTests`: changing one is a format change.
package struct SyncFields {
    /// The bytes so far.
    package private(set) var bytes: [UInt8]

    /// Starts with `domain` (`keychain-sync/record/v1`), itself length-prefixed.
    package init(domain: String) {
        bytes = []
        append(domain)
    }

    /// Appends `field`'s length and bytes.
    package mutating func append<Bytes: Collection>(bytes field: Bytes) where Bytes.Element == UInt8 {
        appendLength(field.count)
        bytes.append(contentsOf: field)
    }

    /// Appends a string's UTF-8 bytes as a field.
    package mutating func append(_ text: String) {
        append(bytes: Array(text.utf8))
    }

    /// Appends an unsigned integer as an 8-byte field.
    package mutating func append(_ value: UInt64) {
        appendLength(8)
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func appendLength(_ count: Int) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: count).bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The bytes as `Data`.
    package var data: Data { Data(bytes) }
}

/// Reads what ``SyncFields`` wrote, refusing anything else: every read is bounded by what is left.
package struct SyncFieldReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// A reader of `data`, whose first field must be `domain`.
    package init(_ data: Data, domain: String) throws(SyncFormatError) {
        bytes = Array(data)
        guard try field() == Array(domain.utf8) else { throw SyncFormatError("it is not a \(domain)") }
    }

    /// The next field's bytes.
    package mutating func field(maximum: Int = 1 << 20) throws(SyncFormatError) -> [UInt8] {
        guard bytes.count - offset >= 4 else { throw SyncFormatError("it ends inside a field's length") }
        let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        offset += 4
        guard length <= maximum else { throw SyncFormatError("a field is longer than \(maximum) bytes") }
        guard bytes.count - offset >= length else { throw SyncFormatError("it ends inside a field") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    /// The next field as UTF-8 text.
    package mutating func string(maximum: Int = 4_096) throws(SyncFormatError) -> String {
        guard let text = String(validating: try field(maximum: maximum), as: UTF8.self) else {
            throw SyncFormatError("a text field is not UTF-8")
        }
        return text
    }

    /// The next field as an 8-byte unsigned integer.
    package mutating func uint64() throws(SyncFormatError) -> UInt64 {
        let field = try field(maximum: 8)
        guard field.count == 8 else { throw SyncFormatError("an integer field is not 8 bytes") }
        return field.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Checks that nothing follows.
    package func finish() throws(SyncFormatError) {
        guard offset == bytes.count else { throw SyncFormatError("bytes follow its end") }
    }
}

/// Why bytes are not in a sync format.
package struct SyncFormatError: Error {
    /// What is wrong.
    package var reason: String
    /// An error saying `reason`.
    package init(_ reason: String) { self.reason = reason }
}
