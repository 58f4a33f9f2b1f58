#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainCore
import Logging

/// Where SecItem calls go: keychaind when it runs (`KEYCHAIN_DAEMON_SOCKET`, or its default socket), else
/// the store in `$KEYCHAIN_HOME` opened in this process, with the caller's access groups from
/// `KEYCHAIN_ENTITLEMENTS`. Tests substitute a backend through the task-local ``SecItemBackend/override``
/// rather than a global.
package enum SecItemBackend {
    /// A backend that replaces the environment's for the current task.
    package struct Context: Sendable {
        package var backend: KeychainBackend
        /// An engine opened in this process, used with `caller`'s access groups.
        package init(engine: KeychainEngine, caller: AccessPolicy) {
            backend = .embedded(engine, caller)
        }
        /// Any backend (a daemon client, say).
        package init(backend: KeychainBackend) {
            self.backend = backend
        }
    }

    /// Set with `SecItemBackend.$override.withValue(context) { … }` to direct SecItem calls elsewhere.
    @TaskLocal package static var override: Context?

    static let logger = Logger(label: "swift-keychain.KeychainServices")

    /// The engine and caller for this call: the task's override, else the one the environment names.
    static func context() throws(KeychainError) -> Context {
        if let override { return override }
        return Context(backend: try EngineRegistry.shared.environmentBackend())
    }

    static func run(_ body: (Context) throws(KeychainError) -> Void) -> OSStatus {
        do {
            try body(context())
            return errSecSuccess
        } catch {
            logger.debug("SecItem call failed", metadata: ["status": "\(error.status.rawValue)"])
            return error.status.rawValue
        }
    }

    static func add(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        result?.pointee = nil
        return run { (ctx) throws(KeychainError) in
            let value = try ctx.backend.secItemAdd(try plistDictionary(attributes))
            if let result, let value { result.pointee = object(value) }
        }
    }

    static func copyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        result?.pointee = nil
        return run { (ctx) throws(KeychainError) in
            let value = try ctx.backend.secItemCopyMatching(try plistDictionary(query))
            if let result, let value { result.pointee = object(value) }
        }
    }

    static func update(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
        run { (ctx) throws(KeychainError) in
            try ctx.backend.secItemUpdate(try plistDictionary(query), attributesToUpdate: try plistDictionary(attributesToUpdate))
        }
    }

    static func delete(_ query: CFDictionary) -> OSStatus {
        run { (ctx) throws(KeychainError) in
            try ctx.backend.secItemDelete(try plistDictionary(query))
        }
    }

    // MARK: CoreFoundation ⇄ property-list values

    /// Converts a query dictionary; keys must be strings.
    package static func plistDictionary(_ dict: NSDictionary) throws(KeychainError) -> [String: PlistValue] {
        var out: [String: PlistValue] = [:]
        out.reserveCapacity(dict.count)
        for (key, value) in dict {
            guard let name = key as? String else {
                throw KeychainError(code: .invalidParameter, message: "Every key of a SecItem dictionary must be a string (a kSec… constant).")
            }
            out[name] = plist(value)
        }
        return out
    }

    /// Classifies one value. Booleans are told apart from numbers the way CoreFoundation does
    /// (`CFBoolean` is its own type), so `kSecReturnData: 1` is rejected like on Apple platforms.
    package static func plist(_ value: Any) -> PlistValue {
        if type(of: value) == Bool.self, let flag = value as? Bool { return .bool(flag) }
        if let s = value as? String { return .string(s) }
        if let d = value as? Data { return .data(d) }
        if let date = value as? Date { return .date(date) }
        if let number = value as? NSNumber {
            if String(describing: type(of: number)).contains("Boolean") { return .bool(number.boolValue) }
            switch String(cString: number.objCType) {
            case "f", "d": return .double(number.doubleValue)
            case "Q", "L", "I":
                return number.uint64Value > UInt64(Int64.max) ? .double(number.doubleValue) : .int(number.int64Value)
            default: return .int(number.int64Value)
            }
        }
        if let array = value as? [Any] { return .array(array.map(plist)) }
        if let dict = value as? [String: Any] { return .dictionary(dict.mapValues(plist)) }
        return .unsupported(String(describing: type(of: value)))
    }

    /// The CoreFoundation object Apple's API returns for a value.
    package static func object(_ value: PlistValue) -> AnyObject {
        switch value {
        case .string(let s): return NSString(string: s)
        case .data(let d): return NSData(data: d)
        case .bool(let b): return NSNumber(value: b)
        case .int(let i): return NSNumber(value: i)
        case .double(let d): return NSNumber(value: d)
        case .date(let d): return NSDate(timeIntervalSinceReferenceDate: d.timeIntervalSinceReferenceDate)
        case .array(let items): return NSArray(array: items.map(object))
        case .dictionary(let dict):
            let out = NSMutableDictionary(capacity: dict.count)
            for (k, v) in dict { out[NSString(string: k)] = object(v) }
            return out
        case .unsupported(let name): return NSString(string: name)
        }
    }
}

#endif
