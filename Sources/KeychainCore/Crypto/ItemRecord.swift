import Foundation

/// An item's attributes, serialized for sealing into the `meta` column.
///
/// Format, version 1 (big-endian): `u8 version = 1 | u16 count | entries sorted by code`;
/// entry: `u8-prefixed code | u8 tag | payload`; tags: 1 string (u32-prefixed UTF-8), 2 data (u32-prefixed),
/// 3 int (u64 two's complement), 4 double (u64 IEEE-754 bits), 5 date (u64 bits of seconds since 2001-01-01).
package enum ItemRecord {
    package static let version: UInt8 = 1

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

    package static func decode(_ bytes: some Sequence<UInt8>) throws(KeychainError) -> [String: AttributeValue] {
        let corrupt = KeychainError(code: .corruptData, message: "An item's attribute record is malformed.")
        var r = BinaryReader(bytes, truncated: corrupt)
        guard try r.u8() == version else { throw corrupt }
        let count = try r.u16()
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(Int(count))
        for _ in 0 ..< count {
            let code = try r.shortString()
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
        guard r.isAtEnd else { throw corrupt }
        return out
    }
}
