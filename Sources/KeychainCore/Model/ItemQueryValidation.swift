import Foundation

/// What keychaind checks of a typed request before the engine sees it. The client parsed Apple's dictionary, but
/// a client is not trusted: a hand-made frame gets the same answers a malformed dictionary would, as if the daemon
/// had parsed it itself.
extension ItemQuery {
    /// Throws unless every attribute belongs to the class and is in the form the parser gives it, and the other
    /// fields are ones the parser can produce.
    package func validate() throws(KeychainError) {
        try ItemQuery.validate(attributes, of: itemClass)
        if let persistentRef, persistentRef.itemClass != itemClass {
            throw .param("kSecClass does not match the class of kSecValuePersistentRef.")
        }
        if hostOrSubdomain != nil, itemClass != .internetPassword {
            throw KeychainError(code: .unimplemented, message: "kSecMatchHostOrSubdomainOfHost applies to internet passwords only.")
        }
        if case .count(let n) = limit, n < 1 { throw .param("kSecMatchLimit must be a positive number.") }
        try ItemQuery.validateProtection(attributes)
    }

    /// An access control's accessibility and the item's `pdmn` agree (the parser sets one from the other).
    static func validateProtection(_ attributes: [String: AttributeValue]) throws(KeychainError) {
        guard case .data(let bytes)? = attributes["accc"] else { return }
        guard let control = AccessControl(encoded: bytes), attributes["pdmn"]?.stringValue == control.protection.rawValue else {
            throw .param("kSecAttrAccessControl's accessibility and kSecAttrAccessible disagree.")
        }
    }

    /// Throws unless each attribute is one of `itemClass`'s, with a value its kind allows, as the parser coerced it.
    package static func validate(_ attributes: [String: AttributeValue], of itemClass: ItemClass) throws(KeychainError) {
        for (code, value) in attributes {
            guard let descriptor = itemClass.attribute(code) else {
                throw KeychainError(code: .noSuchAttribute, message: "'\(code)' is not an attribute of class \(itemClass.rawValue).")
            }
            guard try QueryParser.coerce(value.plist, to: descriptor) == value else {
                throw .param("The value of attribute '\(code)' is not in the form the keychain stores.")
            }
        }
    }
}

extension ItemChanges {
    /// Throws unless every changed attribute belongs to `itemClass`, may be changed, and is in its stored form.
    package func validate(for itemClass: ItemClass) throws(KeychainError) {
        try ItemQuery.validate(attributes, of: itemClass)
        try ItemQuery.validateProtection(attributes)
        if let readOnly = attributes.keys.first(where: { itemClass.attribute($0)?.readOnly == true }) {
            throw .param("'\(readOnly)' is set by the keychain and cannot be updated.")
        }
    }
}
