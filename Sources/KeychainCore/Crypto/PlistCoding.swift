import Foundation

/// The binary encoding of ``PlistValue`` used on keychaind's socket (and anywhere a dictionary must travel
/// as bytes): compact, length-prefixed, no JSON.
///
/// Encoding (big-endian): one tag byte, then
/// - `0x01` string: u32 length + UTF-8; `0x02` data: u32 length + bytes; `0x03` bool: u8 0/1;
/// - `0x04` int: 8 bytes two's complement; `0x05` double: 8 bytes IEEE-754;
/// - `0x06` date: 8 bytes IEEE-754 seconds since 2001-01-01;
/// - `0x07` array: u32 count + values; `0x08` dictionary: u32 count + (u32-prefixed UTF-8 key, value) pairs,
///   keys sorted so equal dictionaries encode to equal bytes;
/// - `0x09` unsupported: u32 length + the type's name.
package enum PlistCoding {
    /// Nesting deeper than this is refused when decoding (no stack exhaustion from a hostile peer).
    package static let maximumDepth = 32

    package static func encode(_ value: PlistValue) -> [UInt8] {
        var w = BinaryWriter(capacity: 128)
        encode(value, into: &w)
        return w.bytes
    }

    package static func encode(_ value: PlistValue, into w: inout BinaryWriter) {
        switch value {
        case .string(let s): w.u8(0x01); w.lengthPrefixed(Array(s.utf8))
        case .data(let d): w.u8(0x02); w.lengthPrefixed(d)
        case .bool(let b): w.u8(0x03); w.u8(b ? 1 : 0)
        case .int(let i): w.u8(0x04); w.u64(UInt64(bitPattern: i))
        case .double(let d): w.u8(0x05); w.u64(d.bitPattern)
        case .date(let d): w.u8(0x06); w.u64(d.timeIntervalSinceReferenceDate.bitPattern)
        case .array(let items):
            w.u8(0x07); w.u32(UInt32(items.count))
            for item in items { encode(item, into: &w) }
        case .dictionary(let dict):
            w.u8(0x08); w.u32(UInt32(dict.count))
            for key in dict.keys.sorted() {
                guard let item = dict[key] else { continue }
                w.lengthPrefixed(Array(key.utf8))
                encode(item, into: &w)
            }
        case .unsupported(let name): w.u8(0x09); w.lengthPrefixed(Array(name.utf8))
        case .accessControl(let control): w.u8(0x02); w.lengthPrefixed(control.encoded)
        case .authenticationContext: w.u8(0x09); w.lengthPrefixed(Array("LAContext".utf8))
        }
    }

    /// Decodes one value that must use every byte; malformed input is `errSecDecode`, never a trap.
    package static func decode(_ bytes: some Sequence<UInt8>) throws(KeychainError) -> PlistValue {
        var r = BinaryReader(bytes, truncated: malformed)
        let value = try decode(&r, depth: 0)
        guard r.isAtEnd else { throw malformed }
        return value
    }

    static let malformed = KeychainError(code: .corruptData, message: "A keychain message is malformed.")

    static func decode(_ r: inout BinaryReader, depth: Int) throws(KeychainError) -> PlistValue {
        guard depth < maximumDepth else { throw malformed }
        switch try r.u8() {
        case 0x01:
            guard let s = String(validating: try r.lengthPrefixed(), as: UTF8.self) else { throw malformed }
            return .string(s)
        case 0x02: return .data(Data(try r.lengthPrefixed()))
        case 0x03:
            switch try r.u8() {
            case 0: return .bool(false)
            case 1: return .bool(true)
            default: throw malformed
            }
        case 0x04: return .int(Int64(bitPattern: try r.u64()))
        case 0x05: return .double(Double(bitPattern: try r.u64()))
        case 0x06: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.u64())))
        case 0x07:
            let count = Int(try r.u32())
            // Every value takes at least two bytes: a count beyond that is a lie, refused before allocating.
            guard count <= r.remaining / 2 else { throw malformed }
            var items: [PlistValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try decode(&r, depth: depth + 1)) }
            return .array(items)
        case 0x08:
            let count = Int(try r.u32())
            guard count <= r.remaining / 6 else { throw malformed }
            var dict: [String: PlistValue] = [:]
            dict.reserveCapacity(count)
            for _ in 0..<count {
                guard let key = String(validating: try r.lengthPrefixed(), as: UTF8.self), dict[key] == nil else { throw malformed }
                dict[key] = try decode(&r, depth: depth + 1)
            }
            return .dictionary(dict)
        case 0x09:
            guard let s = String(validating: try r.lengthPrefixed(), as: UTF8.self) else { throw malformed }
            return .unsupported(s)
        default:
            throw malformed
        }
    }
}
