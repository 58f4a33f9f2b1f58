import Foundation

/// Which items a query sees with respect to `kSecAttrSynchronizable`.
package enum SyncFilter: Sendable, Hashable {
    /// Only non-synchronizable items (the default when the key is absent).
    case local
    /// Only synchronizable items (`true`).
    case synchronizable
    /// Both (`kSecAttrSynchronizableAny`).
    case any
}

/// `kSecMatchLimit`.
package enum MatchLimit: Sendable, Hashable {
    case one
    case all
    case count(Int)

    /// Whether results are returned as an array.
    package var returnsArray: Bool {
        switch self {
        case .one: false
        case .all: true
        case .count(let n): n > 1
        }
    }

    package var maximum: Int? {
        switch self {
        case .one: 1
        case .all: nil
        case .count(let n): n
        }
    }
}

/// Which parts of each matching item a query returns.
package struct ReturnOptions: Sendable, Hashable {
    package var data = false
    package var attributes = false
    package var ref = false
    package var persistentRef = false

    package init(data: Bool = false, attributes: Bool = false, ref: Bool = false, persistentRef: Bool = false) {
        self.data = data
        self.attributes = attributes
        self.ref = ref
        self.persistentRef = persistentRef
    }

    package var any: Bool { data || attributes || ref || persistentRef }
}

/// A persistent reference: the class's four-character code followed by the item's 16-byte UUID.
package struct PersistentReference: Sendable, Hashable {
    package var itemClass: ItemClass
    package var uuid: Data

    package init(itemClass: ItemClass, uuid: Data) {
        self.itemClass = itemClass
        self.uuid = uuid
    }

    package init?(_ data: Data) {
        guard data.count == 4 + ItemCrypto.uuidLength,
            let cls = ItemClass(persistentRefPrefix: data.prefix(4)), cls != .identity
        else { return nil }
        self.init(itemClass: cls, uuid: Data(data.dropFirst(4)))
    }

    package var data: Data { Data(itemClass.rawValue.utf8) + uuid }
}

/// A parsed, validated keychain request: what an Add inserts, or what a query matches.
package struct ItemQuery: Sendable, Hashable {
    package var itemClass: ItemClass
    /// Attribute values by four-character code (coerced to the schema's kinds), excluding `sync`.
    package var attributes: [String: AttributeValue] = [:]
    package var sync: SyncFilter = .local
    package var limit: MatchLimit = .one
    package var returns = ReturnOptions()
    /// `kSecValueData`: the secret for Add; ignored by queries, as Apple's keychain ignores it.
    package var valueData: Data?
    package var persistentRef: PersistentReference?
    /// `kSecMatchHostOrSubdomainOfHost` (internet passwords only).
    package var hostOrSubdomain: String?
    /// Whether any `kSecMatch…` key was present (rejected by Update and Delete).
    package var hasMatchKeys = false
    /// Whether any `kSecReturn…` key was present (rejected by Update).
    package var hasReturnKeys = false
    /// Whether `kSecAttrSynchronizable` was given explicitly.
    package var syncGiven = false
    /// `kSecUseAuthenticationUI`, `kSecUseOperationPrompt`, `kSecUseAuthenticationContext`.
    package var authentication = AuthenticationOptions()
    /// Free-form attributes every matching generic password must carry (a subset of its ``ExtendedAttributes``);
    /// empty matches any item. Searched through the attributes' index, then checked on the decrypted item.
    package var extendedMatch: [String: String] = [:]
    /// The keychains the call acts on, in order: `kSecMatchSearchList` for a search, an update or a delete,
    /// `kSecUseKeychain` (one) for an add; nil: the user's search list, and the default keychain for an add.
    ///
    /// Not part of the query's wire encoding: a client sends it as the keychains a request is for
    /// (`KeychainRequest.onKeychains`).
    package var keychains: [KeychainName]?

    package init(itemClass: ItemClass) { self.itemClass = itemClass }

    package var accessGroup: String? { attributes["agrp"]?.stringValue }

    /// The same query with other authentication options (a retry with the context that now holds a proof).
    package func authenticated(_ options: AuthenticationOptions) -> ItemQuery {
        var query = self
        query.authentication = options
        return query
    }
}

/// What an update changes in every item it matches (Apple's `attributesToUpdate`, parsed).
package struct ItemChanges: Sendable, Hashable {
    /// New attribute values by four-character code.
    package var attributes: [String: AttributeValue]
    /// A new `kSecAttrSynchronizable`, when given.
    package var sync: Bool?
    /// A new secret (`kSecValueData`), when given.
    package var data: Data?

    package init(attributes: [String: AttributeValue] = [:], sync: Bool? = nil, data: Data? = nil) {
        self.attributes = attributes
        self.sync = sync
        self.data = data
    }
}
