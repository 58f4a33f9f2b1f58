import CSystemdBus
#if canImport(Glibc)
import Glibc
#endif

/// One D-Bus value, as sent in a method call or read from a reply or signal.
///
/// Every basic type, arrays, structures, dictionary entries and variants can be sent and read, and Unix file
/// descriptors (`h`) as ``fileDescriptor(_:)``: a copy of the descriptor, closed when the last value holding it
/// goes. An array of bytes (`ay`) always reads as ``bytes(_:)``, one value holding them all.
package indirect enum DBusValue: Sendable, Hashable {
    /// `y`
    case byte(UInt8)
    /// `b`
    case bool(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`: UTF-8 without NUL bytes.
    case string(String)
    /// `o`: an object path such as `/net/reactivated/Fprint/Device/0`.
    case objectPath(String)
    /// `g`: a type signature.
    case signature(String)
    /// `ay`: bytes (a secret, a file's contents), kept together rather than as one ``byte(_:)`` each. Reading
    /// always gives this case for `ay`; ``array(elementSignature:_:)`` of ``byte(_:)`` values can still be sent.
    case bytes([UInt8])
    /// `a…`: the elements' signature (needed for an empty array) and the elements, each of that signature.
    case array(elementSignature: String, [DBusValue])
    /// `(…)`: a structure's fields.
    case structure([DBusValue])
    /// `{kv}`: a dictionary entry, found only as an element of an array (`a{sv}`).
    case dictEntry(DBusValue, DBusValue)
    /// `v`: a value with its type carried alongside.
    case variant(DBusValue)
    /// `h`: a Unix file descriptor passed with the message (the connection must allow passing them).
    case fileDescriptor(DBusFileDescriptor)
    /// A value of a type this library does not read, skipped; never sent.
    case unsupported(signature: String)

    /// An array of strings (`as`).
    package static func strings(_ values: [String]) -> DBusValue {
        .array(elementSignature: "s", values.map { .string($0) })
    }

    /// This value's D-Bus type signature.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        case .fileDescriptor: "h"
        case .unsupported(let signature): signature
        }
    }

    /// The text of a string, object path or signature (looking through a variant); nil for other types.
    package var string: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .variant(let inner): inner.string
        default: nil
        }
    }

    /// The value of a boolean (looking through a variant); nil for other types.
    package var bool: Bool? {
        switch self {
        case .bool(let value): value
        case .variant(let inner): inner.bool
        default: nil
        }
    }

    /// The value of an unsigned 32-bit integer (looking through a variant); nil for other types.
    package var uint32: UInt32? {
        switch self {
        case .uint32(let value): value
        case .variant(let inner): inner.uint32
        default: nil
        }
    }

    /// The texts of an array of strings or object paths (`as`, `ao`, looking through a variant); nil for other
    /// types.
    package var strings: [String]? {
        switch self {
        case .array(let element, let values) where element == "s" || element == "o" || element == "g":
            values.compactMap(\.string)
        case .variant(let inner): inner.strings
        default: nil
        }
    }
}

// MARK: Writing and reading messages

extension DBusValue {
    /// Appends this value to `message` (an `sd_bus_message` being built).
    func append(to message: OpaquePointer) throws(DBusError) {
        let result: Int32
        switch self {
        case .byte(let value): result = Self.appendBasic(message, "y", value)
        case .bool(let value): result = Self.appendBasic(message, "b", Int32(value ? 1 : 0))
        case .int16(let value): result = Self.appendBasic(message, "n", value)
        case .uint16(let value): result = Self.appendBasic(message, "q", value)
        case .int32(let value): result = Self.appendBasic(message, "i", value)
        case .uint32(let value): result = Self.appendBasic(message, "u", value)
        case .int64(let value): result = Self.appendBasic(message, "x", value)
        case .uint64(let value): result = Self.appendBasic(message, "t", value)
        case .double(let value): result = Self.appendBasic(message, "d", value)
        case .string(let text), .objectPath(let text), .signature(let text):
            guard !text.utf8.contains(0) else { throw .invalidArgument("a string contains a NUL byte") }
            // For string types sd_bus_message_append_basic takes the C string itself, not a pointer to it.
            result = text.withCString { sd_bus_message_append_basic(message, Self.typeCode(signature), $0) }
        case .bytes(let bytes):
            result = bytes.withUnsafeBytes { raw in
                // A non-null pointer even for no bytes: sd-bus wants one.
                withUnsafePointer(to: UInt8(0)) { empty in
                    sd_bus_message_append_array(
                        message, CChar(truncatingIfNeeded: UInt8(ascii: "y")),
                        raw.baseAddress ?? UnsafeRawPointer(empty), raw.count)
                }
            }
        case .array(let element, let values):
            for value in values where value.signature != element {
                throw .invalidArgument("an array of \(element) holds a \(value.signature)")
            }
            try Self.inContainer(message, "a", element) { () throws(DBusError) in
                for value in values { try value.append(to: message) }
            }
            return
        case .structure(let fields):
            try Self.inContainer(message, "r", fields.map(\.signature).joined()) { () throws(DBusError) in
                for field in fields { try field.append(to: message) }
            }
            return
        case .dictEntry(let key, let value):
            try Self.inContainer(message, "e", key.signature + value.signature) { () throws(DBusError) in
                try key.append(to: message)
                try value.append(to: message)
            }
            return
        case .variant(let inner):
            try Self.inContainer(message, "v", inner.signature) { () throws(DBusError) in try inner.append(to: message) }
            return
        case .fileDescriptor(let descriptor):
            // sd-bus sends a copy of the descriptor; this one stays open with its value.
            result = Self.appendBasic(message, "h", descriptor.rawValue)
        case .unsupported(let signature):
            throw .invalidArgument("a value of type \(signature) cannot be sent")
        }
        guard result >= 0 else { throw .invalidArgument("sd-bus refused a \(signature): \(DBusError.describe(errno: -result))") }
    }

    /// The type code of a basic type's one-character signature.
    private static func typeCode(_ signature: String) -> CChar {
        CChar(bitPattern: signature.utf8.first ?? 0)
    }

    /// Appends a fixed-size basic value of type `type` (`value` is its C representation).
    private static func appendBasic<T>(_ message: OpaquePointer, _ type: Unicode.Scalar, _ value: T) -> Int32 {
        withUnsafePointer(to: value) { sd_bus_message_append_basic(message, CChar(truncatingIfNeeded: type.value), $0) }
    }

    /// Opens a container (`type`, holding `contents`), appends what `body` appends, and closes it.
    private static func inContainer(
        _ message: OpaquePointer, _ type: Unicode.Scalar, _ contents: String,
        _ body: () throws(DBusError) -> Void
    ) throws(DBusError) {
        let opened = sd_bus_message_open_container(message, CChar(truncatingIfNeeded: type.value), contents)
        guard opened >= 0 else {
            throw .invalidArgument("sd-bus refused a container \(type)\(contents): \(DBusError.describe(errno: -opened))")
        }
        try body()
        let closed = sd_bus_message_close_container(message)
        guard closed >= 0 else { throw .invalidArgument("sd-bus refused to close \(type)\(contents)") }
    }

    /// Reads every value left at the current level of `message` (a reply or signal), within `limits`.
    /// - Throws: ``DBusError/system(operation:errno:)`` with `EBADMSG` for a value sd-bus cannot read, `E2BIG`
    ///   when the message holds more values than `limits` allow, `ELOOP` when its containers nest deeper.
    static func readAll(from message: OpaquePointer, limits: DBusReadLimits = .default) throws(DBusError) -> [DBusValue] {
        var budget = ReadBudget(remainingValues: limits.maximumValues, maximumDepth: limits.maximumDepth)
        return try readAll(from: message, budget: &budget, depth: 0)
    }

    /// What one read may still build: values left, and how deep containers may nest.
    struct ReadBudget {
        /// Values that may still be read before the message is refused.
        var remainingValues: Int
        /// The deepest nesting of containers (arrays, structures, dictionary entries, variants) accepted.
        let maximumDepth: Int
    }

    /// Reads every value left at the current level, `depth` containers deep, spending `budget`.
    private static func readAll(from message: OpaquePointer, budget: inout ReadBudget, depth: Int) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try read(from: message, budget: &budget, depth: depth) { values.append(value) }
        return values
    }

    /// Reads the next value of `message`; nil at the end of the current level.
    private static func read(from message: OpaquePointer, budget: inout ReadBudget, depth: Int) throws(DBusError) -> DBusValue? {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contentsPointer)
        guard peeked >= 0 else { throw .system(operation: "reading a D-Bus message", errno: -peeked) }
        if peeked == 0 { return nil }
        budget.remainingValues -= 1
        guard budget.remainingValues >= 0 else {
            throw .system(operation: "reading a D-Bus message of too many values", errno: E2BIG)
        }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        let code = UInt8(bitPattern: type)
        if code == UInt8(ascii: "a") || code == UInt8(ascii: "r") || code == UInt8(ascii: "e") || code == UInt8(ascii: "v") {
            guard depth < budget.maximumDepth else {
                throw .system(operation: "reading a D-Bus message nested too deeply", errno: ELOOP)
            }
        }
        switch code {
        case UInt8(ascii: "y"): return .byte(try readBasic(message, type, UInt8(0)))
        case UInt8(ascii: "b"): return .bool(try readBasic(message, type, Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try readBasic(message, type, Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try readBasic(message, type, UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try readBasic(message, type, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try readBasic(message, type, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try readBasic(message, type, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try readBasic(message, type, UInt64(0)))
        case UInt8(ascii: "d"): return .double(try readBasic(message, type, Double(0)))
        case UInt8(ascii: "s"): return .string(try readText(message, type))
        case UInt8(ascii: "o"): return .objectPath(try readText(message, type))
        case UInt8(ascii: "g"): return .signature(try readText(message, type))
        case UInt8(ascii: "h"):
            // The message owns the descriptor it read; the value keeps a copy of its own.
            let borrowed = try readBasic(message, type, Int32(-1))
            let copy = fcntl(borrowed, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw .system(operation: "copying a file descriptor passed on D-Bus", errno: errno) }
            return .fileDescriptor(DBusFileDescriptor(owning: copy))
        case UInt8(ascii: "a") where contents == "y":
            return .bytes(try readBytes(message))
        case UInt8(ascii: "a"):
            let elements = try readContainer(message, type, contents, budget: &budget, depth: depth)
            return .array(elementSignature: contents, elements)
        case UInt8(ascii: "r"):
            return .structure(try readContainer(message, type, contents, budget: &budget, depth: depth))
        case UInt8(ascii: "e"):
            let fields = try readContainer(message, type, contents, budget: &budget, depth: depth)
            guard fields.count == 2 else { throw .system(operation: "reading a D-Bus dictionary entry", errno: EBADMSG) }
            return .dictEntry(fields[0], fields[1])
        case UInt8(ascii: "v"):
            let inner = try readContainer(message, type, contents, budget: &budget, depth: depth)
            guard inner.count == 1 else { throw .system(operation: "reading a D-Bus variant", errno: EBADMSG) }
            return .variant(inner[0])
        default:
            let skipped = sd_bus_message_skip(message, nil)
            guard skipped >= 0 else { throw .system(operation: "skipping a D-Bus value", errno: -skipped) }
            let signature = String(UnicodeScalar(code))
            return .unsupported(signature: signature)
        }
    }

    /// Reads an array of bytes (`ay`) in one piece, straight from the message's buffer.
    private static func readBytes(_ message: OpaquePointer) throws(DBusError) -> [UInt8] {
        var pointer: UnsafeRawPointer?
        var size = 0
        let result = sd_bus_message_read_array(message, CChar(truncatingIfNeeded: UInt8(ascii: "y")), &pointer, &size)
        guard result > 0 else {
            throw .system(operation: "reading a D-Bus byte array", errno: result < 0 ? -result : EBADMSG)
        }
        guard let pointer, size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: size))
    }

    /// Reads a fixed-size basic value of type `type` into a value like `initial`.
    private static func readBasic<T>(_ message: OpaquePointer, _ type: CChar, _ initial: T) throws(DBusError) -> T {
        var value = initial
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, type, $0) }
        guard result > 0 else { throw .system(operation: "reading a D-Bus value", errno: result < 0 ? -result : EBADMSG) }
        return value
    }

    /// Reads a string, object path or signature.
    private static func readText(_ message: OpaquePointer, _ type: CChar) throws(DBusError) -> String {
        var text: UnsafePointer<CChar>?
        let result = sd_bus_message_read_basic(message, type, &text)
        guard result > 0, let text else {
            throw .system(operation: "reading a D-Bus string", errno: result < 0 ? -result : EBADMSG)
        }
        // sd-bus has checked that strings are valid UTF-8 without NUL bytes.
        return String(cString: text)
    }

    /// Reads the values of the container (`type`, holding `contents`) at the read position, one level deeper.
    private static func readContainer(
        _ message: OpaquePointer, _ type: CChar, _ contents: String,
        budget: inout ReadBudget, depth: Int
    ) throws(DBusError) -> [DBusValue] {
        let entered = sd_bus_message_enter_container(message, type, contents)
        guard entered > 0 else {
            throw .system(operation: "reading a D-Bus container", errno: entered < 0 ? -entered : EBADMSG)
        }
        let values = try readAll(from: message, budget: &budget, depth: depth + 1)
        let exited = sd_bus_message_exit_container(message)
        guard exited >= 0 else { throw .system(operation: "leaving a D-Bus container", errno: -exited) }
        return values
    }
}

/// Bounds on what reading one message builds, whatever its sender put in it (the bus bounds only its size).
package struct DBusReadLimits: Sendable, Hashable {
    /// The most values one message may hold, counting every element and container (an `ay` counts once).
    package var maximumValues: Int
    /// The deepest nesting of containers (arrays, structures, dictionary entries, variants) accepted. D-Bus
    /// allows 64 in all.
    package var maximumDepth: Int

    /// Limits with these values.
    package init(maximumValues: Int = 1_000_000, maximumDepth: Int = 64) {
        self.maximumValues = maximumValues
        self.maximumDepth = maximumDepth
    }

    /// One million values, 64 levels.
    package static let `default` = DBusReadLimits()
}
