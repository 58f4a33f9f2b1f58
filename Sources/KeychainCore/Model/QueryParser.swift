import Foundation

/// Parses SecItem dictionaries the way Apple's `securityd` does (`SecDbQuery.c`, `query_applier`):
/// keys are classified by length and first character, values coerced by the schema's kinds.
package enum QueryParser {
    /// The operation a dictionary is parsed for; each accepts a different set of keys.
    package enum Operation: Sendable { case add, copyMatching, update, delete }

    static let accessibleValues = Set(ProtectionClass.allCases.map(\.rawValue))
    static let synchronizableAny = "syna"

    /// Parses the query (or Add attributes) dictionary.
    package static func parse(_ dict: [String: PlistValue], for operation: Operation) throws(KeychainError) -> ItemQuery {
        let itemClass: ItemClass
        var persistentRef: PersistentReference?
        if let refValue = dict["v_PersistentRef"], operation != .add {
            guard case .data(let data) = refValue, let ref = PersistentReference(data) else {
                throw .param("kSecValuePersistentRef must be a persistent reference returned by this keychain (Data).")
            }
            persistentRef = ref
        }
        switch dict["class"] {
        case .string(let raw)?:
            guard let cls = ItemClass(rawValue: raw) else {
                throw KeychainError(
                    code: .noSuchClass,
                    message: "kSecClass '\(raw)' is not an item class. Use kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey or kSecClassIdentity.")
            }
            if let persistentRef, persistentRef.itemClass != cls {
                throw .param("kSecClass does not match the class of kSecValuePersistentRef.")
            }
            itemClass = cls
        case nil:
            guard let persistentRef else { throw .param("The query has no kSecClass. Add kSecClass (for example kSecClassGenericPassword).") }
            itemClass = persistentRef.itemClass
        case let other?:
            throw .param("kSecClass must be a string such as kSecClassGenericPassword, not a \(other.typeName).")
        }

        var query = ItemQuery(itemClass: itemClass)
        query.persistentRef = persistentRef
        for key in dict.keys.sorted() {
            guard let value = dict[key] else { continue }
            try apply(key: key, value: value, to: &query, operation: operation)
        }
        if persistentRef != nil, !query.attributes.isEmpty || query.syncGiven {
            throw .param("A query by kSecValuePersistentRef cannot also match attributes.")
        }
        if operation == .add, query.itemClass == .identity {
            throw .param("Identities cannot be added by attributes: add the certificate and its private key instead.")
        }
        try takeProtection(from: &query.attributes)
        return query
    }

    private static func apply(key: String, value: PlistValue, to query: inout ItemQuery, operation: Operation) throws(KeychainError) {
        if key.utf8.count == 4 {
            try applyAttribute(key, value, to: &query, operation: operation)
            return
        }
        switch key.first {
        case "c":
            guard key == "class" else { throw .param("Unknown key '\(key)' in the query dictionary.") }
        case "m":
            // A delete removes every match, and kSecMatchLimitAll says just that. Code written for macOS passes it
            // (its file keychain deletes only the first match without it), and macOS's SecItemDelete strips every
            // kSecMatch key before the data-protection keychain sees it; iOS's securityd refuses them all. We
            // accept kSecMatchLimitAll and refuse a finite limit, which would promise fewer deletions than happen.
            if !(operation == .delete && key == "m_Limit" && value == .string("m_LimitAll")) && key != "m_SearchList" { query.hasMatchKeys = true }
            try applyMatch(key, value, to: &query, operation: operation)
        case "r":
            query.hasReturnKeys = true
            let flag = try boolean(value, key: key)
            switch key {
            case "r_Data": query.returns.data = flag
            case "r_Attributes": query.returns.attributes = flag
            case "r_Ref": query.returns.ref = flag
            case "r_PersistentRef": query.returns.persistentRef = flag
            default: throw .param("Unknown return key '\(key)'.")
            }
        case "u":
            if key == "u_Keychain" {
                // Where an add puts the item; in a search, a search list of one.
                query.keychains = [try keychainName(value, key: "kSecUseKeychain")]
            } else {
                try applyUse(key, value, to: &query.authentication)
            }
        case "v":
            switch key {
            case "v_Data":
                guard case .data(let data) = value else {
                    throw .param("kSecValueData must be Data, not a \(value.typeName). Encode strings with Data(string.utf8).")
                }
                query.valueData = data
            case "v_PersistentRef":
                if operation == .add { throw .param("kSecValuePersistentRef cannot be used to add an item.") }
            case "v_Ref":
                throw .param("kSecValueRef must be a SecKey, SecCertificate or SecIdentity object.")
            default:
                throw .param("Unknown value key '\(key)'.")
            }
        case "f":
            break
        default:
            throw .param("Unknown key '\(key)' in the query dictionary.")
        }
    }

    private static func applyMatch(_ key: String, _ value: PlistValue, to query: inout ItemQuery, operation: Operation) throws(KeychainError) {
        switch key {
        case "m_Limit":
            switch value {
            case .string("m_LimitOne"): query.limit = .one
            case .string("m_LimitAll"): query.limit = .all
            case .int(let n) where n >= 1: query.limit = n == 1 ? .one : .count(Int(clamping: n))
            case .double(let d) where d >= 1 && d < 1e15 && d.rounded() == d: query.limit = d == 1 ? .one : .count(Int(d))
            default: throw .param("kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a positive number.")
            }
        case "m_CaseInsensitive":
            // Accepted and ignored, as on Apple's data-protection keychain: matching is always byte-exact.
            _ = try boolean(value, key: key)
        case "m_SearchList":
            guard case .array(let entries) = value else {
                throw .param("kSecMatchSearchList must be an array of SecKeychain objects (SecKeychainOpen, SecKeychainCopySearchList).")
            }
            guard entries.count <= KeychainSearchList.maximumCount else {
                throw .param("kSecMatchSearchList holds at most \(KeychainSearchList.maximumCount) keychains.")
            }
            query.keychains = try entries.map { (entry) throws(KeychainError) in try keychainName(entry, key: "kSecMatchSearchList") }
        case "m_ItemList", "m_DiacriticInsensitive", "m_WidthInsensitive":
            break  // Accepted and not filtered on, as securityd does.
        case "m_HostOrSubdomainOfHost":
            guard query.itemClass == .internetPassword else {
                throw KeychainError(code: .unimplemented, message: "kSecMatchHostOrSubdomainOfHost applies to internet passwords only.")
            }
            guard case .string(let host) = value else { throw .param("kSecMatchHostOrSubdomainOfHost must be a string.") }
            query.hostOrSubdomain = host
        case "m_Policy", "m_Issuers", "m_EmailAddressIfPresent", "m_SubjectContains", "m_SubjectStartsWith",
            "m_SubjectEndsWith", "m_SubjectWholeString", "m_TrustedOnly", "m_ValidOnDate":
            throw KeychainError(code: .unimplemented, message: "\(key) is not supported yet.")
        default:
            throw .param("Unknown match key '\(key)'.")
        }
    }

    private static func applyAttribute(_ code: String, _ value: PlistValue, to query: inout ItemQuery, operation: Operation) throws(KeychainError) {
        switch code {
        case "nleg", "musr":
            return  // kSecUseDataProtectionKeychain; the single-user keychain ignores musr.
        case "sync":
            query.syncGiven = true
            switch value {
            case .string(synchronizableAny):
                guard operation != .add else { throw .param("kSecAttrSynchronizableAny cannot be used to add an item; use true or false.") }
                query.sync = .any
            default:
                let flag: Bool
                switch value {
                case .bool(let b): flag = b
                case .int(let i) where i == 0 || i == 1: flag = i == 1
                case .string("0"), .string("1"): flag = value == .string("1")
                default: throw .param("kSecAttrSynchronizable must be a boolean or kSecAttrSynchronizableAny.")
                }
                query.sync = flag ? .synchronizable : .local
            }
            return
        default:
            break
        }
        guard let descriptor = query.itemClass.attribute(code) else {
            throw KeychainError(code: .noSuchAttribute, message: "'\(code)' is not an attribute of class \(query.itemClass.rawValue).")
        }
        query.attributes[code] = try coerce(value, to: descriptor)
    }

    /// Coerces a value to an attribute's kind (Apple's `SecDbItem.c` `copyBlob/copyNumber/…`).
    package static func coerce(_ value: PlistValue, to descriptor: AttributeDescriptor) throws(KeychainError) -> AttributeValue {
        // Built only when needed: the message's interpolation would cost more than the coercion itself.
        var bad: KeychainError { .param("The value of attribute '\(descriptor.code)' has the wrong type (\(value.typeName)).") }
        switch descriptor.kind {
        case .blob:
            switch value {
            case .string(let s): return .string(s)
            case .data(let d): return .data(d)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            default: throw bad
            }
        case .number:
            switch value {
            case .int(let i): return .int(i)
            case .double(let d): return d.rounded() == d && abs(d) < 9e18 ? .int(Int64(d)) : .double(d)
            case .bool(let b): return .int(b ? 1 : 0)
            case .string(let s):
                if let i = Int64(s) { return .int(i) }
                return .string(s)
            default: throw bad
            }
        case .date:
            guard case .date(let d) = value else { throw bad }
            return .date(d)
        case .string:
            switch value {
            case .string(let s): return .string(s)
            case .data(let d):
                guard let s = String(validating: d, as: UTF8.self) else { throw bad }
                return .string(s)
            default: throw bad
            }
        case .data:
            switch value {
            case .data(let d): return .data(d)
            case .string(let s): return .data(Data(s.utf8))
            default: throw bad
            }
        case .accessibility:
            guard case .string(let s) = value, accessibleValues.contains(s) else {
                throw .param("kSecAttrAccessible must be one of the kSecAttrAccessible… constants.")
            }
            return .string(s)
        case .accessControl:
            switch value {
            case .accessControl(let control): return .data(control.encoded)
            case .data(let bytes) where AccessControl(encoded: bytes) != nil: return .data(bytes)
            default: throw .param("kSecAttrAccessControl must be a SecAccessControl made by SecAccessControlCreateWithFlags, not a \(value.typeName).")
            }
        case .trustedApplications:
            // An array of terms (an empty one: none), or the stored form (terms joined by newlines).
            let terms: [String]
            switch value {
            case .array(let entries):
                terms = try entries.map { (entry) throws(KeychainError) -> String in
                    guard case .string(let term) = entry else {
                        throw .param("kSecAttrTrustedApplications must be an array of strings (paths, flatpak:ID, snap:NAME, teamid:TEAM, or \"*\"), not one holding a \(entry.typeName).")
                    }
                    return term
                }
            case .string(let joined):
                terms = joined.split(separator: "\n").map(String.init)
            default:
                throw .param("kSecAttrTrustedApplications must be an array of strings, not a \(value.typeName).")
            }
            return try TrustedApplications(terms).attributeValue
        }
    }

    /// The marker a `SecKeychain` object becomes in a SecItem dictionary: `[marker: name]`.
    package static let keychainReferenceMarker = "swift-keychain.SecKeychain"

    /// The keychain a `SecKeychain` object names (as its marker dictionary).
    static func keychainName(_ value: PlistValue, key: String) throws(KeychainError) -> KeychainName {
        guard case .dictionary(let fields) = value, fields.count == 1, case .string(let name)? = fields[keychainReferenceMarker] else {
            throw .param("\(key) must name keychains with SecKeychain objects (SecKeychainOpen, SecKeychainCopyDefault), not a \(value.typeName).")
        }
        return try KeychainName(name)
    }

    /// `kSecUseAuthenticationUI`, `kSecUseOperationPrompt`, `kSecUseAuthenticationContext` and the older
    /// `kSecUseNoAuthenticationUI`; other `kSecUse…` keys are accepted and have nothing to do here.
    private static func applyUse(_ key: String, _ value: PlistValue, to options: inout AuthenticationOptions) throws(KeychainError) {
        switch key {
        case "u_AuthUI":
            guard case .string(let raw) = value, let ui = AuthenticationUI(rawValue: raw) else {
                throw .param("kSecUseAuthenticationUI must be kSecUseAuthenticationUIAllow, kSecUseAuthenticationUIFail or kSecUseAuthenticationUISkip.")
            }
            options.ui = ui
        case "u_NoAuthUI":
            if try boolean(value, key: key), options.ui == .allow { options.ui = .fail }
        case "u_OpPrompt":
            guard case .string(let text) = value else { throw .param("kSecUseOperationPrompt must be a string.") }
            options.operationPrompt = text
        case "u_AuthCtx":
            guard case .authenticationContext(let context) = value else {
                throw .param("kSecUseAuthenticationContext must be an LAContext, not a \(value.typeName).")
            }
            options.apply(context)
        default:
            break
        }
    }

    /// A `SecAccessControl` carries the item's accessibility: `pdmn` is taken from it, and may not be given as
    /// well (Apple: "kSecAttrAccessible and kSecAttrAccessControl are mutually exclusive").
    static func takeProtection(from attributes: inout [String: AttributeValue]) throws(KeychainError) {
        guard case .data(let bytes)? = attributes["accc"], let control = AccessControl(encoded: bytes) else { return }
        if attributes["pdmn"] != nil {
            throw .param("Give the accessibility in the SecAccessControl only: kSecAttrAccessible and kSecAttrAccessControl cannot both be set.")
        }
        attributes["pdmn"] = .string(control.protection.rawValue)
    }

    private static func boolean(_ value: PlistValue, key: String) throws(KeychainError) -> Bool {
        guard case .bool(let flag) = value else {
            throw .param("\(key) must be a boolean (true or kCFBooleanTrue), not a \(value.typeName).")
        }
        return flag
    }

    /// Parses the attributes-to-update dictionary of SecItemUpdate for `itemClass` (Apple's
    /// `query_update_applier`): every key other than `kSecValueData` must be an attribute of the class.
    package static func parseUpdate(_ dict: [String: PlistValue], itemClass: ItemClass) throws(KeychainError) -> ItemChanges {
        var attributes: [String: AttributeValue] = [:]
        var sync: Bool?
        var data: Data?
        for key in dict.keys.sorted() {
            guard let value = dict[key] else { continue }
            switch key {
            case "v_Data":
                guard case .data(let d) = value else { throw .param("kSecValueData must be Data, not a \(value.typeName).") }
                data = d
            case "musr", "nleg":
                continue
            case "sync":
                switch value {
                case .bool(let b): sync = b
                case .int(let i) where i == 0 || i == 1: sync = i == 1
                default: throw .param("kSecAttrSynchronizable in an update must be true or false.")
                }
            default:
                guard let descriptor = itemClass.attribute(key) else {
                    throw KeychainError(code: .noSuchAttribute, message: "'\(key)' cannot be updated: it is not an attribute of class \(itemClass.rawValue).")
                }
                if descriptor.readOnly { continue }  // cdat/mdat are set by the keychain.
                attributes[key] = try coerce(value, to: descriptor)
            }
        }
        try takeProtection(from: &attributes)
        return ItemChanges(attributes: attributes, sync: sync, data: data)
    }
}
