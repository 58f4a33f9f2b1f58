import Foundation

/// A property-list value: the neutral form in which SecItem dictionaries travel from the API layer into the
/// engine (and, later, over the daemon's wire), independent of Foundation's bridging.
package enum PlistValue: Sendable, Hashable {
    case string(String)
    case data(Data)
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case date(Date)
    case array([PlistValue])
    case dictionary([String: PlistValue])
    /// A value of a type the engine cannot use (a Swift object, a SecAccessControl, …); carries its type name
    /// for error messages.
    case unsupported(String)
    /// A `SecAccessControl` (`kSecAttrAccessControl`).
    case accessControl(AccessControl)
    /// An authentication context (`kSecUseAuthenticationContext`, our `LAContext`).
    case authenticationContext(AuthenticationContextValue)

    package var typeName: String {
        switch self {
        case .string: "string"
        case .data: "data"
        case .bool: "boolean"
        case .int, .double: "number"
        case .date: "date"
        case .array: "array"
        case .dictionary: "dictionary"
        case .unsupported(let name): name
        case .accessControl: "SecAccessControl"
        case .authenticationContext: "LAContext"
        }
    }
}

/// An attribute value as the keychain stores it: a string, bytes, a number or a date. Booleans are stored
/// as the numbers 0 and 1, as Apple's keychain does.
package enum AttributeValue: Sendable, Hashable {
    case string(String)
    case data(Data)
    case int(Int64)
    case double(Double)
    case date(Date)

    /// The byte representation Apple matches on: UTF-8 for strings, raw bytes for data.
    package var matchBytes: [UInt8] {
        switch self {
        case .string(let s): Array(s.utf8)
        case .data(let d): Array(d)
        case .int(let i): Array("#i\(i)".utf8)
        case .double(let d): Array("#d\(d.bitPattern)".utf8)
        case .date(let d): Array("#t\(d.timeIntervalSinceReferenceDate.bitPattern)".utf8)
        }
    }

    /// Runs `body` with ``matchBytes``, without copying a string's or data's bytes into an array first.
    package func withMatchBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .string(var s): s.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        case .data(let d): d.withUnsafeBytes(body)
        default: matchBytes.withUnsafeBytes(body)
        }
    }

    package var plist: PlistValue {
        switch self {
        case .string(let s): .string(s)
        case .data(let d): .data(d)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .date(let d): .date(d)
        }
    }

    package var stringValue: String? {
        switch self {
        case .string(let s): s
        case .data(let d): String(validating: d, as: UTF8.self)
        default: nil
        }
    }

    package var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }
}
