import Foundation

/// An item's attributes, serialized for sealing into the `meta` column.
///
/// Format, version 1 (big-endian): `u8 version = 1 | u16 count | entries sorted by code`;
/// entry: `u8-prefixed code | u8 tag | payload`; tags: 1 string (u32-prefixed UTF-8), 2 data (u32-prefixed),
/// 3 int (u64 two's complement), 4 double (u64 IEEE-754 bits), 5 date (u64 bits of seconds since 2001-01-01).
package enum ItemRecord {
    package static let version: UInt8 = 1
    /// Made once: decoding runs for every row a query opens.
    static let malformed = KeychainError(code: .corruptData, message: "An item's attribute record is malformed.")

    package static func encode(_ attributes: [String: AttributeValue]) -> [UInt8] {
        var w = BinaryWriter(capacity: 256)
        w.u8(version)
        w.u16(UInt16(attributes.count))
        for code in attributes.keys.sorted() {
            guard let value = attributes[code] else { continue }
            w.shortString(code)
            switch value {
            case .string(let s): w.u8(1); w.lengthPrefixed(Array(s.utf8))
            case .data(let d): w.u8(2); w.lengthPrefixed(d)
            case .int(let i): w.u8(3); w.u64(UInt64(bitPattern: i))
            case .double(let d): w.u8(4); w.u64(d.bitPattern)
            case .date(let d): w.u8(5); w.u64(d.timeIntervalSinceReferenceDate.bitPattern)
            }
        }
        return w.bytes
    }

    /// Decodes a record. With `keeping`, only those attributes are made into values (the rest of the record is
    /// still read through and checked for shape): a query that returns only an item's data needs no more than the
    /// attributes it matches on.
    package static func decode(_ bytes: some Sequence<UInt8>, keeping: [String]? = nil) throws(KeychainError) -> [String: AttributeValue] {
        let corrupt = ItemRecord.malformed
        var r = BinaryReader(bytes, truncated: corrupt)
        guard try r.u8() == version else { throw corrupt }
        let count = try r.u16()
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(keeping?.count ?? Int(count))
        for _ in 0..<count {
            if let keeping {
                let length = try r.u8()
                let raw = try r.take(Int(length))
                guard let code = keeping.first(where: { $0.utf8.elementsEqual(raw) }) else {
                    switch try r.u8() {
                    case 1, 2: _ = try r.lengthPrefixed()
                    case 3, 4, 5: _ = try r.take(8)
                    default: throw corrupt
                    }
                    continue
                }
                try decodeValue(&r, code: code, into: &out, corrupt: corrupt)
                continue
            }
            let code = try r.shortString()
            try decodeValue(&r, code: code, into: &out, corrupt: corrupt)
        }
        guard r.isAtEnd else { throw corrupt }
        return out
    }

    private static func decodeValue(
        _ r: inout BinaryReader, code: String, into out: inout [String: AttributeValue],
        corrupt: KeychainError
    ) throws(KeychainError) {
        switch try r.u8() {
        case 1:
            guard let s = BinaryReader.utf8String(try r.lengthPrefixed()) else { throw corrupt }
            out[code] = .string(s)
        case 2: out[code] = .data(Data(try r.lengthPrefixed()))
        case 3: out[code] = .int(Int64(bitPattern: try r.u64()))
        case 4: out[code] = .double(Double(bitPattern: try r.u64()))
        case 5: out[code] = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.u64())))
        default: throw corrupt
        }
    }
}
