/// What ``QDataStreamReader`` met: a value that runs past the end of its data, or a length that cannot be.
struct QDataStreamError: Error, Sendable {}

/// Reads the big-endian values Qt's `QDataStream` writes, as KWallet stores them: `quint32`/`qint32`, `QString`
/// (a byte length, `0xFFFFFFFF` for a null string, then UTF-16BE), `QByteArray` (a length, `0xFFFFFFFF` for a null
/// array, then the bytes) and `QMap<QString, QString>` (a count, then key and value pairs).
///
/// The layout of these types is the same in every `QDataStream` version Qt 4, 5 and 6 write, except that from
/// `Qt_6_7` a length of `0xFFFFFFFE` is followed by the real one as a 64-bit number (for sizes past 4 GiB); that
/// is read too. Every length is checked against the bytes left before anything is read or allocated.
struct QDataStreamReader {
    /// The bytes read.
    private let bytes: [UInt8]
    /// Where the next value starts.
    private(set) var offset: Int
    /// Where the data ends (exclusive).
    let end: Int

    /// A reader of `bytes[range]` (a range within `bytes`: the caller checks).
    init(_ bytes: [UInt8], range: Range<Int>) {
        self.bytes = bytes
        offset = range.lowerBound
        end = range.upperBound
    }

    /// A reader of all of `bytes`.
    init(_ bytes: [UInt8]) {
        self.init(bytes, range: 0..<bytes.count)
    }

    /// How many bytes are left.
    var remaining: Int { end - offset }

    /// Whether every byte was read.
    var isAtEnd: Bool { offset >= end }

    /// The next `count` bytes.
    mutating func raw(_ count: Int) throws(QDataStreamError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw QDataStreamError() }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A `quint32`.
    mutating func uint32() throws(QDataStreamError) -> UInt32 {
        guard remaining >= 4 else { throw QDataStreamError() }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    /// A `qint32`.
    mutating func int32() throws(QDataStreamError) -> Int32 {
        Int32(bitPattern: try uint32())
    }

    /// A `quint64`.
    mutating func uint64() throws(QDataStreamError) -> UInt64 {
        let high = try uint32()
        let low = try uint32()
        return UInt64(high) << 32 | UInt64(low)
    }

    /// The length before a string or byte array: `nil` for a null one, otherwise at most the bytes left.
    private mutating func length() throws(QDataStreamError) -> Int? {
        let short = try uint32()
        if short == 0xFFFF_FFFF {
            return nil
        }
        let length: UInt64 = short == 0xFFFF_FFFE ? try uint64() : UInt64(short)
        guard length <= UInt64(remaining) else { throw QDataStreamError() }
        return Int(length)
    }

    /// A `QByteArray` (empty for a null one).
    mutating func byteArray() throws(QDataStreamError) -> [UInt8] {
        guard let count = try length() else { return [] }
        return try raw(count)
    }

    /// A `QString` (empty for a null one); unpaired surrogates become U+FFFD.
    mutating func string() throws(QDataStreamError) -> String {
        guard let count = try length() else { return "" }
        guard count % 2 == 0 else { throw QDataStreamError() }
        let data = try raw(count)
        var units: [UInt16] = []
        units.reserveCapacity(count / 2)
        for i in stride(from: 0, to: count, by: 2) {
            units.append(UInt16(data[i]) << 8 | UInt16(data[i + 1]))
        }
        return String(decoding: units, as: UTF16.self)
    }

    /// A `QMap<QString, QString>` (Qt 5 writes its pairs last key first; where a key comes twice, the later pair
    /// read is kept).
    mutating func stringMap() throws(QDataStreamError) -> [String: String] {
        let count = try uint32()
        // Each pair takes at least 8 bytes (two empty strings' lengths).
        guard UInt64(count) * 8 <= UInt64(remaining) else { throw QDataStreamError() }
        var map: [String: String] = [:]
        for _ in 0..<count {
            let key = try string()
            map[key] = try string()
        }
        return map
    }
}
