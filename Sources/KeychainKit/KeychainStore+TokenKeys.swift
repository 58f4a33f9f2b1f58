import Foundation
import KeychainCore

extension KeychainStore {
    /// Creates a P-256 private key that never leaves the keychain — Apple's `kSecAttrTokenIDSecureEnclave` key:
    /// generated inside the machine's TPM when keychaind has one, else held by keychaind (or this process) and
    /// sealed at rest like every item. Its private part is never returned; it signs and agrees keys only through
    /// the keychain.
    ///
    /// - Parameters:
    ///   - attributes: The key item's attributes (label, application tag, access group, …); the token ID, key type,
    ///     size and class are set here.
    ///   - accessControl: What each use of the key needs (give ``KeychainAccessControl/Constraints/privateKeyUsage``
    ///     with the constraints); nil: none, and the key is `kSecAttrAccessibleWhenUnlockedThisDeviceOnly`.
    /// - Returns: The key's item, with its public key in ``KeychainItem/tokenPublicKey``.
    /// - Throws: `KeychainError` with `KeychainStatus/param` for an accessibility that is not ThisDeviceOnly.
    public func createTokenKey(attributes: [String: KeychainItem.Value], accessControl: KeychainAccessControl?) throws(KeychainError) -> KeychainItem {
        var query = try KeychainQuery(.key, attributes: attributes).itemQuery()
        query.attributes["tkid"] = .string(TokenKeys.secureEnclave)
        if let accessControl {
            query.attributes["accc"] = accessControl.attributeValue
            query.attributes["pdmn"] = .string(accessControl.control.protection.rawValue)
        }
        guard case .key(let item) = try connection.tokenKey(.create(query)) else {
            throw KeychainError(code: .internal, message: "keychaind answered a key creation with something else.")
        }
        return KeychainItem(item)
    }

    /// The keys `query` matches (of class ``KeychainItem/Class/key``), with their attributes and, for keys that never
    /// leave the keychain, their public key in ``KeychainItem/tokenPublicKey``.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when none match.
    public func tokenKeys(matching query: KeychainQuery) throws(KeychainError) -> [KeychainItem] {
        var q = try query.itemQuery()
        guard q.itemClass == .key else { throw KeychainError(code: .invalidParameter, message: "Only keys have public keys to return.") }
        q.returns.ref = true
        return try connection.find(q).map(KeychainItem.init)
    }
}
