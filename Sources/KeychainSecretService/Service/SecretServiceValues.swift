import Foundation
import KeychainDBus

/// Reading and building the Secret Service's D-Bus values: attribute dictionaries (`a{ss}`), property
/// dictionaries (`a{sv}`), secrets (`(oayays)`), object path lists (`ao`).
enum SecretValues {
    /// The bytes of an `ay` (which KeychainDBus always reads as one ``DBusValue/bytes(_:)``).
    static func bytes(_ value: DBusValue) -> [UInt8]? {
        switch value {
        case .bytes(let bytes): return bytes
        case .variant(let inner): return bytes(inner)
        default: return nil
        }
    }

    /// An `ay` of `bytes`.
    static func byteArray(_ bytes: some Sequence<UInt8>) -> DBusValue {
        .bytes(Array(bytes))
    }

    /// The entries of an `a{ss}`; nil for any other value, and for two keys Swift takes for the same text (the
    /// same name in two Unicode normalization forms), which a dictionary would silently merge.
    static func stringDictionary(_ value: DBusValue) -> [String: String]? {
        guard case .array(let element, let entries) = value, element == "{ss}" else {
            if case .variant(let inner) = value { return stringDictionary(inner) }
            return nil
        }
        var out: [String: String] = [:]
        for entry in entries {
            guard case .dictEntry(.string(let key), .string(let text)) = entry, out[key] == nil else { return nil }
            out[key] = text
        }
        return out
    }

    /// An `a{ss}` of `dictionary`, sorted by key.
    static func stringDictionary(_ dictionary: [String: String]) -> DBusValue {
        .array(elementSignature: "{ss}", dictionary.keys.sorted().map { .dictEntry(.string($0), .string(dictionary[$0] ?? "")) })
    }

    /// The entries of an `a{sv}` (values still in their variants' contents); nil for any other value.
    static func propertyDictionary(_ value: DBusValue) -> [String: DBusValue]? {
        guard case .array(let element, let entries) = value, element == "{sv}" else { return nil }
        var out: [String: DBusValue] = [:]
        for entry in entries {
            guard case .dictEntry(.string(let key), .variant(let inner)) = entry else { return nil }
            out[key] = inner
        }
        return out
    }

    /// An `a{sv}` of `properties`, sorted by key.
    static func propertyDictionary(_ properties: [(String, DBusValue)]) -> DBusValue {
        .array(elementSignature: "{sv}", properties.map { .dictEntry(.string($0.0), .variant($0.1)) })
    }

    /// The paths of an `ao`.
    static func paths(_ value: DBusValue) -> [String]? {
        guard case .array(let element, let values) = value, element == "o" else { return nil }
        var out: [String] = []
        for case .objectPath(let path) in values { out.append(path) }
        return out.count == values.count ? out : nil
    }

    /// An `ao` of `paths`.
    static func paths(_ paths: [String]) -> DBusValue {
        .array(elementSignature: "o", paths.map { .objectPath($0) })
    }

    /// A secret as it travels: the session, the algorithm's parameters, the (encrypted) value, the content type.
    struct Secret {
        var session: String
        var parameters: [UInt8]
        var value: [UInt8]
        var contentType: String

        init(session: String, parameters: [UInt8], value: [UInt8], contentType: String) {
            self.session = session
            self.parameters = parameters
            self.value = value
            self.contentType = contentType
        }

        /// Reads a `(oayays)`; nil for any other value.
        init?(_ value: DBusValue) {
            guard case .structure(let fields) = value, fields.count == 4, case .objectPath(let session) = fields[0],
                let parameters = SecretValues.bytes(fields[1]), let bytes = SecretValues.bytes(fields[2]),
                case .string(let contentType) = fields[3]
            else { return nil }
            self.init(session: session, parameters: parameters, value: bytes, contentType: contentType)
        }

        /// The `(oayays)`.
        var encoded: DBusValue {
            .structure([.objectPath(session), SecretValues.byteArray(parameters), SecretValues.byteArray(value), .string(contentType)])
        }
    }

    /// Seconds since 1970 as the spec's `t`.
    static func timestamp(_ date: Date) -> DBusValue {
        .uint64(UInt64(max(0, date.timeIntervalSince1970)))
    }
}
