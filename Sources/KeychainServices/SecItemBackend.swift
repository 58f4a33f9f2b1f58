#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainClient
import KeychainCore
import LocalAuthentication
import Logging

/// Where SecItem calls go: the keychain ``KeychainConnector`` chooses (keychaind when it runs, else the store in
/// `$KEYCHAIN_HOME` opened in this process). Dictionaries are converted here; everything after is typed.
package enum SecItemBackend {
    static let logger = Logger(label: "swift-keychain.KeychainServices")

    /// The keychain for this call.
    static func connection() throws(KeychainError) -> any KeychainConnection {
        try KeychainConnector.environment()
    }

    static func run(_ body: (any KeychainConnection) throws(KeychainError) -> Void) -> OSStatus {
        do {
            try body(connection())
            return errSecSuccess
        } catch {
            logger.debug("SecItem call failed", metadata: ["status": "\(error.status.rawValue)"])
            return error.status.rawValue
        }
    }

    static func add(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        result?.pointee = nil
        let given: Entries
        do {
            given = try entries(attributes)
        } catch {
            logger.debug("SecItem call failed", metadata: ["status": "\(error.status.rawValue)"])
            return error.status.rawValue
        }
        if let identity = given.ref as? SecIdentity {
            return addIdentity(identity, attributes)
        }
        return run { (ctx) throws(KeychainError) in
            let value = try ctx.secItemAdd(try itemDictionary(given))
            if let result, let value { result.pointee = object(value) }
        }
    }

    static func copyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        result?.pointee = nil
        return run { (ctx) throws(KeychainError) in
            let value = try ctx.secItemCopyMatching(try queryDictionary(query))
            // A key found with a context keeps it for its private operations, as on Apple's systems.
            // (Looked up only when a key is made: a lookup in a Foundation dictionary costs a find a few percent.)
            if let result, let value {
                result.pointee = object(value, context: { query.object(forKey: kSecUseAuthenticationContext) as? LAContext })
            }
        }
    }

    static func update(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
        run { (ctx) throws(KeychainError) in
            try ctx.secItemUpdate(try queryDictionary(query), attributesToUpdate: try plistDictionary(attributesToUpdate))
        }
    }

    static func delete(_ query: CFDictionary) -> OSStatus {
        run { (ctx) throws(KeychainError) in
            try ctx.secItemDelete(try queryDictionary(query))
        }
    }

    /// Adds an identity as Apple does: its private key and its certificate, each with the dictionary's other
    /// attributes. If the certificate cannot be added, the key added for it is removed again.
    static func addIdentity(_ identity: SecIdentity, _ attributes: CFDictionary) -> OSStatus {
        run { (ctx) throws(KeychainError) in
            let given = attributes.mutableCopy() as? NSMutableDictionary ?? NSMutableDictionary()
            given.removeObject(forKey: "v_Ref")
            var shared = try plistDictionary(given)
            if let named = shared["class"], named != .string(ItemClass.identity.rawValue) {
                throw KeychainError(code: .invalidParameter, message: "kSecValueRef's identity does not belong to the kSecClass given.")
            }
            shared["class"] = nil
            var key = try SecKeyBackend.attributeDictionary(identity.privateKey.material, shared)
            key["class"] = .string(ItemClass.key.rawValue)
            key["perm"] = .int(1)
            var certificate = shared
            certificate["class"] = .string(ItemClass.certificate.rawValue)
            certificate["v_Data"] = .data(identity.certificate.data.der)
            _ = try ctx.secItemAdd(key)
            do throws(KeychainError) {
                _ = try ctx.secItemAdd(certificate)
            } catch {
                let label = try identity.privateKey.material.applicationLabel()
                try? ctx.secItemDelete(["class": .string(ItemClass.key.rawValue), "klbl": .data(label), "kcls": .int(1)])
                throw error
            }
        }
    }

    /// An add's dictionary, with a `kSecValueRef` object turned into what the item stores: a certificate's DER
    /// (the engine derives its attributes), a key's derived attributes and external representation. The class
    /// follows from the object when `kSecClass` is missing, as on Apple's platforms.
    static func itemDictionary(_ given: Entries) throws(KeychainError) -> [String: PlistValue] {
        guard let ref = given.ref else { return given.values }
        var out = given.values
        let itemClass: ItemClass
        switch ref {
        case let certificate as SecCertificate:
            itemClass = .certificate
            out["v_Data"] = .data(certificate.data.der)
        case let key as SecKey:
            itemClass = .key
            out.merge(try SecKeyBackend.attributeDictionary(key.material, [:])) { given, _ in given }
        default:
            throw KeychainError(code: .invalidParameter, message: "kSecValueRef must be a SecCertificate or a SecKey.")
        }
        if out["class"] == nil { out["class"] = .string(itemClass.rawValue) }
        guard out["class"] == .string(itemClass.rawValue) else {
            throw KeychainError(code: .invalidParameter, message: "kSecValueRef's object does not belong to the kSecClass given.")
        }
        return out
    }

    /// A search's dictionary, with a `kSecValueRef` object turned into the attributes that find exactly its item:
    /// a certificate by its issuer and serial number (its primary key), a key by its application label and key
    /// class, an identity by its certificate's. The class follows from the object when `kSecClass` is missing.
    static func queryDictionary(_ query: CFDictionary) throws(KeychainError) -> [String: PlistValue] {
        let given = try entries(query)
        guard let ref = given.ref else { return given.values }
        var out = given.values
        let itemClass: ItemClass
        var match: [String: PlistValue] = [:]
        func certificateKey(_ certificate: SecCertificate) {
            let derived = certificate.data.derivedAttributes
            match["issr"] = derived["issr"]
            match["slnr"] = derived["slnr"]
        }
        switch ref {
        case let certificate as SecCertificate:
            itemClass = .certificate
            certificateKey(certificate)
        case let identity as SecIdentity:
            itemClass = .identity
            certificateKey(identity.certificate)
        case let key as SecKey:
            itemClass = .key
            match["klbl"] = .data(try key.material.applicationLabel())
            match["kcls"] = .int(key.isPrivate ? KeyClass.privateKey.rawValue : KeyClass.publicKey.rawValue)
        default:
            throw KeychainError(code: .invalidParameter, message: "kSecValueRef must be a SecCertificate, a SecKey or a SecIdentity.")
        }
        if out["class"] == nil { out["class"] = .string(itemClass.rawValue) }
        guard out["class"] == .string(itemClass.rawValue) else {
            throw KeychainError(code: .invalidParameter, message: "kSecValueRef's object does not belong to the kSecClass given.")
        }
        out.merge(match) { given, _ in given }
        return out
    }

    // MARK: CoreFoundation ⇄ property-list values

    /// A SecItem dictionary's values, and its `kSecValueRef` object (an object, not a value) set apart.
    struct Entries {
        var values: [String: PlistValue]
        var ref: Any?
    }

    /// Converts a SecItem dictionary in one pass over it, setting `kSecValueRef`'s object apart; keys must be
    /// strings. (Looking a key up in a Foundation dictionary makes and hashes an `NSString`: one pass is cheaper.)
    static func entries(_ dict: NSDictionary) throws(KeychainError) -> Entries {
        var out = Entries(values: [:], ref: nil)
        out.values.reserveCapacity(dict.count)
        var badKey = false
        dict.enumerateKeysAndObjects(options: []) { key, value, stop in
            guard let name = key as? String else {
                badKey = true
                stop.pointee = true
                return
            }
            if name == "v_Ref" {
                out.ref = value
            } else {
                out.values[name] = plist(value)
            }
        }
        if badKey {
            throw KeychainError(code: .invalidParameter, message: "Every key of a SecItem dictionary must be a string (a kSec… constant).")
        }
        return out
    }

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
            let type = String(cString: number.objCType)
            // Booleans are never encoded as these; for the rest the runtime's type name is asked.
            if !["q", "i", "l", "d", "f", "Q", "L", "I"].contains(type), CoreFoundationTypeID.isBoolean(number) { return .bool(number.boolValue) }
            switch type {
            case "f", "d": return .double(number.doubleValue)
            case "Q", "L", "I":
                return number.uint64Value > UInt64(Int64.max) ? .double(number.doubleValue) : .int(number.int64Value)
            default: return .int(number.int64Value)
            }
        }
        if let array = value as? [Any] { return .array(array.map(plist)) }
        if let dict = value as? [String: Any] { return .dictionary(dict.mapValues(plist)) }
        // Last: these are rare, and every value of every call comes through here.
        if let control = value as? SecAccessControl { return .accessControl(control.control) }
        if let context = value as? LAContext { return .authenticationContext(context.value) }
        if let keychain = value as? SecKeychain { return .dictionary([QueryParser.keychainReferenceMarker: .string(keychain.name.rawValue)]) }
        return .unsupported(String(describing: type(of: value)))
    }

    /// The `NSString` of a result dictionary's key. An item's keys are the schema's attribute codes and a few
    /// `kSec…` names; each is made once and shared (immutable NSStrings are), so a query returning many items does
    /// not make a string per key per item. Other keys are made each time.
    static func keyObject(_ key: String) -> NSString {
        if let known = knownKeys[key] { return known }
        return NSString(string: key)
    }

    nonisolated(unsafe) private static let knownKeys: [String: NSString] = {
        var codes = Set(ItemClass.allCases.flatMap { $0.attributes.map(\.code) })
        codes.formUnion(["class", "musr", "v_Data", "v_PersistentRef", "v_Ref", "pub"])
        return Dictionary(uniqueKeysWithValues: codes.map { ($0, NSString(string: $0)) })
    }()

    /// Immutable number objects every result shares (Apple's are tagged pointers or shared too): the booleans,
    /// and the small integers attributes mostly hold (classes, protection flags, sync and tombstone markers).
    enum SharedObjects {
        static let yes = NSNumber(value: true)
        static let no = NSNumber(value: false)
        static let smallIntegers: [NSNumber] = (0...255).map { NSNumber(value: Int64($0)) }

        static func number(_ i: Int64) -> NSNumber {
            (0...255).contains(i) ? smallIntegers[Int(i)] : NSNumber(value: i)
        }
    }

    /// The CoreFoundation object Apple's API returns for a value.
    package static func object(_ value: PlistValue) -> AnyObject {
        object(value, context: { nil })
    }

    /// The CoreFoundation object for a value; keys in it keep `context` for their private operations.
    static func object(_ value: PlistValue, context: () -> LAContext?) -> AnyObject {
        switch value {
        case .string(let s): return NSString(string: s)
        case .data(let d): return NSData(data: d)
        case .bool(let b): return b ? SharedObjects.yes : SharedObjects.no
        case .int(let i): return SharedObjects.number(i)
        case .double(let d): return NSNumber(value: d)
        case .date(let d): return NSDate(timeIntervalSinceReferenceDate: d.timeIntervalSinceReferenceDate)
        case .array(let items):
            // From a buffer: `NSArray(array:)` would cast every element on its way in.
            let objects = items.map { object($0, context: context) }
            return objects.withUnsafeBufferPointer { NSArray(objects: $0.baseAddress, count: $0.count) }
        case .dictionary(let dict):
            if dict.count == 1, case .dictionary(let fields)? = dict[SecItemDictionaries.keyReferenceMarker],
                let key = SecKeyBackend.key(fromReference: fields, context: context())
            {
                return key
            }
            if dict.count == 1, case .dictionary(let fields)? = dict[SecItemDictionaries.identityReferenceMarker],
                let identity = SecKeyBackend.identity(fromReference: fields, context: context())
            {
                return identity
            }
            if dict.count == 1, case .dictionary(let fields)? = dict[SecItemDictionaries.certificateReferenceMarker],
                case .data(let der)? = fields["v_Data"], let certificate = try? CertificateData(der: der)
            {
                return SecCertificate(certificate)
            }
            // Built from two buffers by Foundation's designated initializer: assigning key by key goes through
            // AnyHashable and dynamic casts for every entry, and the array-taking initializer casts every value
            // again on its way in; together they dominated "return attributes" queries. Keys are the schema's few
            // codes, made into NSStrings once (see `keyObject`).
            var keys: [NSObject] = []
            var values: [AnyObject] = []
            keys.reserveCapacity(dict.count)
            values.reserveCapacity(dict.count)
            for (k, v) in dict {
                keys.append(keyObject(k))
                values.append(object(v, context: context))
            }
            return values.withUnsafeBufferPointer { values in
                keys.withUnsafeBufferPointer { keys in
                    NSMutableDictionary(objects: values.baseAddress, forKeys: keys.baseAddress, count: keys.count)
                }
            }
        case .unsupported(let name): return NSString(string: name)
        case .accessControl(let control): return SecAccessControl(control)
        case .authenticationContext: return NSString(string: "LAContext")
        }
    }
}

#endif
