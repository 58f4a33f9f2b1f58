import Foundation

/// One item as read back from the store, as it travels to the caller (in-process, or through keychaind).
package struct FoundItem: Sendable, Hashable {
    package var itemClass: ItemClass
    package var uuid: Data
    /// Every stored attribute, by four-character code.
    package var attributes: [String: AttributeValue]
    /// The secret, when it was requested and the item has one. Never set for a key that never leaves the
    /// keychain (a token key): see ``tokenPublicKey``.
    package var data: Data?
    /// For a token key (`kSecAttrTokenID`): its public key, in place of the private bytes that stay in the engine.
    package var tokenPublicKey: Data?
    /// For an identity (this item being its certificate): its private key.
    package var identityKey: IdentityKey?

    /// The private key half of an identity.
    package struct IdentityKey: Sendable, Hashable {
        package var uuid: Data
        package var attributes: [String: AttributeValue]
        package var data: Data?
        /// The key's public key when it is a token key (then `data` is nil).
        package var tokenPublicKey: Data?

        package init(uuid: Data, attributes: [String: AttributeValue], data: Data?, tokenPublicKey: Data? = nil) {
            self.uuid = uuid
            self.attributes = attributes
            self.data = data
            self.tokenPublicKey = tokenPublicKey
        }

        /// The key as an item of its own.
        package var item: FoundItem {
            var key = FoundItem(itemClass: .key, uuid: uuid, attributes: attributes, data: data)
            key.tokenPublicKey = tokenPublicKey
            return key
        }
    }

    package var persistentRef: PersistentReference { PersistentReference(itemClass: itemClass, uuid: uuid) }

    package init(itemClass: ItemClass, uuid: Data, attributes: [String: AttributeValue], data: Data?) {
        self.itemClass = itemClass
        self.uuid = uuid
        self.attributes = attributes
        self.data = data
    }

    /// The item as it may leave the engine: a token key's private bytes are replaced by its public key (for
    /// the item itself and for an identity's key half).
    package func leavingEngine() -> FoundItem {
        var out = self
        if itemClass == .key, TokenKeys.isTokenKey(attributes) {
            out.tokenPublicKey = data.flatMap { try? TokenKeys.publicKey(attributes, privateBytes: $0) }
            out.data = nil
        }
        if let key = identityKey, TokenKeys.isTokenKey(key.attributes) {
            let redacted = key.item.leavingEngine()
            out.identityKey = IdentityKey(uuid: key.uuid, attributes: key.attributes, data: nil, tokenPublicKey: redacted.tokenPublicKey)
        }
        return out
    }

    /// The item with only what a result of `returns` is made from: attributes for attributes and references,
    /// the secret for data and references (a key's or certificate's reference carries its data). What travels
    /// from keychaind to a client is no more than the call asked for.
    package func trimmed(to returns: ReturnOptions) -> FoundItem {
        var out = self
        if !(returns.attributes || returns.ref) { out.attributes = [:] }
        if !(returns.data || returns.ref) { out.data = nil }
        return out
    }
}
