import Foundation

/// Free-form attributes of a generic password: names and values chosen by the application, kept as given.
///
/// This is what the freedesktop Secret Service calls an item's attributes (`xdg:schema`, `username`, `server`,
/// …). They are stored as the private attribute `xatr` of the `genp` class, sealed with the item's other
/// attributes, and every name/value pair also gets a keyed hash in the `genp_xattr` table, so that a search by any
/// subset of them is an index lookup and the database holds none of them in the clear.
///
/// The encoded form (kept sealed in the item's attribute record) is fixed: a version byte (1), a 16-bit count, then
/// each pair in ascending order of name as two 32-bit length-prefixed UTF-8 strings. Golden vectors in
/// `ExtendedAttributesTests` hold it.
package struct ExtendedAttributes: Sendable, Hashable {
    /// The attributes, by name.
    package var values: [String: String]

    /// The most attributes one item may carry.
    package static let maximumCount = 128
    /// The longest name accepted, in UTF-8 bytes.
    package static let maximumNameLength = 1_024
    /// The longest value accepted, in UTF-8 bytes.
    package static let maximumValueLength = 16_384
    /// The schema code of the attribute that holds the encoded form.
    package static let code = "xatr"
    /// The table of keyed hashes, one row per name/value pair of each item.
    package static let indexTable = "genp_xattr"

    /// Attributes with these values.
    package init(_ values: [String: String] = [:]) { self.values = values }

    /// Refuses what cannot be stored as given: too many attributes, an empty or over-long name, an over-long value,
    /// or a NUL byte (D-Bus strings cannot hold one, and the index separates name from value with it).
    package func validate() throws(KeychainError) {
        guard values.count <= Self.maximumCount else {
            throw .param("An item may carry at most \(Self.maximumCount) attributes; this one has \(values.count). Keep what identifies the secret and put the rest in the secret itself.")
        }
        for (name, value) in values {
            guard !name.isEmpty, name.utf8.count <= Self.maximumNameLength else {
                throw .param("An attribute name must be 1 to \(Self.maximumNameLength) bytes of UTF-8; one has \(name.utf8.count).")
            }
            guard value.utf8.count <= Self.maximumValueLength else {
                throw .param("The value of attribute \"\(name.prefix(64))\" has \(value.utf8.count) bytes; at most \(Self.maximumValueLength) are kept.")
            }
            guard !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw .param("An attribute name or value cannot contain a NUL character.")
            }
        }
    }

    /// The encoded form, as sealed in the item's record.
    package var encoded: Data {
        var writer = BinaryWriter(capacity: 3 + values.count * 24)
        writer.u8(1)
        writer.u16(UInt16(clamping: values.count))
        for name in values.keys.sorted() {
            writer.lengthPrefixedUTF8(name)
            writer.lengthPrefixedUTF8(values[name] ?? "")
        }
        return writer.data
    }

    /// Reads the encoded form; a malformed one (a damaged record) is `errSecDecode`.
    package init(encoded: Data) throws(KeychainError) {
        let damaged = KeychainError(code: .corruptData, message: "An item's free-form attributes are damaged.")
        var reader = BinaryReader(encoded, truncated: damaged)
        guard try reader.u8() == 1 else { throw damaged }
        let count = Int(try reader.u16())
        guard count <= Self.maximumCount else { throw damaged }
        var values: [String: String] = [:]
        values.reserveCapacity(count)
        var previous: String?
        for _ in 0..<count {
            guard let name = String(validating: try reader.lengthPrefixed(), as: UTF8.self),
                let value = String(validating: try reader.lengthPrefixed(), as: UTF8.self)
            else { throw damaged }
            // The writer puts names in ascending order, each once: anything else was not written by it.
            if let previous, !(previous < name) { throw damaged }
            previous = name
            values[name] = value
        }
        guard reader.isAtEnd else { throw damaged }
        self.values = values
    }

    /// Whether every pair of `subset` is among these attributes (an empty subset matches anything).
    package func contains(_ subset: [String: String]) -> Bool {
        subset.allSatisfy { values[$0.key] == $0.value }
    }

    /// The bytes one pair is indexed under: the name, a NUL, the value.
    package static func indexTerm(name: String, value: String) -> AttributeValue {
        var bytes = Data(name.utf8)
        bytes.append(0)
        bytes.append(contentsOf: value.utf8)
        return .data(bytes)
    }
}
