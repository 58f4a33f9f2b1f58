import Foundation

/// A collection's items (identifier, label, attributes, dates; never secrets) packed into one byte array, for
/// ``SecretServiceLocks``: 10,000 items take about 1.5 MiB in one allocation, where as many ``SecretItem`` values
/// would take several times that in small allocations scattered among the heap's free space. Items are decoded
/// when asked for; a search compares the packed bytes and decodes only what matches.
///
/// Each item: its identifier and label, its dates (two `Double`s, as `Date` keeps them, so they come back exact), the number of attributes,
/// then each attribute's name and value. A string is a 32-bit length and its UTF-8 bytes. Numbers are in the host's
/// order: the bytes never leave the process.
struct PackedSecretItems: Sendable {
    private var bytes: [UInt8] = []
    private var starts: [Int] = []
    /// The collection's identifier.
    let collection: String

    /// `items` of `collection`, packed.
    init(_ items: [SecretItem], collection: String) {
        self.collection = collection
        starts.reserveCapacity(items.count)
        for item in items {
            starts.append(bytes.count)
            append(item.id)
            append(item.label)
            append(item.created.timeIntervalSinceReferenceDate)
            append(item.modified.timeIntervalSinceReferenceDate)
            append(UInt32(item.attributes.count))
            for (name, value) in item.attributes {
                append(name)
                append(value)
            }
        }
        bytes = Array(bytes[...])  // no room to grow kept
    }

    /// How many items there are.
    var count: Int { starts.count }

    private mutating func append(_ text: String) {
        append(UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }

    private mutating func append(_ value: Double) {
        append(value.bitPattern)
    }

    // MARK: Reading

    /// Reads one item's fields from `offset` (the packing above; nothing outside this type writes it).
    private struct Cursor {
        let bytes: [UInt8]
        var offset: Int

        mutating func number<T: FixedWidthInteger>(_: T.Type) -> T {
            var value: T = 0
            withUnsafeMutableBytes(of: &value) { target in
                bytes.withUnsafeBytes { source in
                    target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + MemoryLayout<T>.size]))
                }
            }
            offset += MemoryLayout<T>.size
            return value
        }

        /// The next string's bytes, without making a string.
        mutating func slice() -> Range<Int> {
            let length = Int(number(UInt32.self))
            defer { offset += length }
            return offset..<offset + length
        }

        mutating func string() -> String {
            String(decoding: bytes[slice()], as: UTF8.self)
        }

        mutating func date() -> Date {
            Date(timeIntervalSinceReferenceDate: Double(bitPattern: number(UInt64.self)))
        }
    }

    private func decode(at start: Int) -> SecretItem {
        var cursor = Cursor(bytes: bytes, offset: start)
        let id = cursor.string()
        let label = cursor.string()
        let created = cursor.date()
        let modified = cursor.date()
        var attributes: [String: String] = [:]
        for _ in 0..<cursor.number(UInt32.self) {
            let name = cursor.string()
            attributes[name] = cursor.string()
        }
        return SecretItem(collection: collection, id: id, label: label, attributes: attributes, created: created, modified: modified)
    }

    /// Whether the item at `start` has identifier `id` (when given) and every pair of `matching`.
    private func matches(at start: Int, id: [UInt8]?, matching: [(name: [UInt8], value: [UInt8])]) -> Bool {
        var cursor = Cursor(bytes: bytes, offset: start)
        let itemID = cursor.slice()
        if let id, !bytes[itemID].elementsEqual(id) { return false }
        guard !matching.isEmpty else { return true }
        _ = cursor.slice()  // label
        _ = cursor.number(UInt64.self)
        _ = cursor.number(UInt64.self)
        var found = 0
        for _ in 0..<cursor.number(UInt32.self) {
            let name = cursor.slice()
            let value = cursor.slice()
            if let wanted = matching.first(where: { bytes[name].elementsEqual($0.name) }) {
                guard bytes[value].elementsEqual(wanted.value) else { return false }
                found += 1
            }
        }
        return found == matching.count
    }

    /// The items whose attributes include every pair of `matching` (all of them when empty).
    func items(matching: [String: String]) -> [SecretItem] {
        let wanted = matching.map { (name: Array($0.key.utf8), value: Array($0.value.utf8)) }
        return starts.filter { matches(at: $0, id: nil, matching: wanted) }.map(decode(at:))
    }

    /// The item `id`, or nil.
    func item(_ id: String) -> SecretItem? {
        let wanted = Array(id.utf8)
        return starts.first { matches(at: $0, id: wanted, matching: []) }.map(decode(at:))
    }
}
