import Foundation
import KeychainCore

/// An item as the keychain stores it: its class, its attributes by Apple's four-character codes, and its secret.
///
/// This is the keychain's whole view of an item, as tools need it (`security dump-keychain` prints every
/// attribute); most code uses ``Keychain``, which hides it.
public struct KeychainItem: Sendable, Hashable {
    /// Apple's item classes (`kSecClass`), with their four-character codes.
    public enum Class: String, Sendable, Hashable, CaseIterable {
        /// `kSecClassGenericPassword`.
        case genericPassword = "genp"
        /// `kSecClassInternetPassword`.
        case internetPassword = "inet"
        /// `kSecClassCertificate`.
        case certificate = "cert"
        /// `kSecClassKey`.
        case key = "keys"
        /// `kSecClassIdentity`: a certificate with its private key.
        case identity = "idnt"

        /// The four-character codes of the attributes that identify an item of this class (its primary key):
        /// two items of a class never share all of them. For generic passwords: access group, account,
        /// service and the sync flags.
        public var primaryKeyAttributes: [String] {
            (ItemClass(rawValue: rawValue) ?? .genericPassword).primaryKey.map(\.code)
        }
    }

    /// An attribute's value, as stored.
    public enum Value: Sendable, Hashable {
        /// Text (`kSecAttrAccount`, `kSecAttrService`, …).
        case string(String)
        /// Bytes (`kSecAttrGeneric`, hashes, …), and names given as bytes (an account or service that is not
        /// UTF-8 text). A name stored as bytes matches exactly those bytes; as in Apple's keychain, text and bytes
        /// with the same UTF-8 name the same item.
        case data(Data)
        /// An integer (`kSecAttrPort`, four-character codes such as `kSecAttrCreator`, …).
        case int(Int64)
        /// A floating-point number.
        case double(Double)
        /// A date (`kSecAttrCreationDate`, `kSecAttrModificationDate`).
        case date(Date)

        /// The text, when the value is text.
        public var stringValue: String? {
            if case .string(let s) = self { return s }
            return nil
        }

        /// The integer, when the value is an integer.
        public var intValue: Int64? {
            if case .int(let i) = self { return i }
            return nil
        }
    }

    /// The item's class.
    public let itemClass: Class
    /// Every stored attribute, by Apple's four-character code (`acct`, `svce`, `agrp`, `pdmn`, `cdat`, …).
    public let attributes: [String: Value]
    /// The secret (or, for certificates and keys, their data), when it was asked for. A key that never leaves the
    /// keychain has none.
    public let data: Data?
    /// The item's persistent reference (`kSecValuePersistentRef`).
    public let persistentReference: Data
    /// The public key (X9.63: `04`, x, y) of a key that never leaves the keychain, when it was asked for
    /// (``KeychainStore/tokenKeys(matching:)``).
    public let tokenPublicKey: Data?

    init(_ found: FoundItem) {
        itemClass = Class(rawValue: found.itemClass.rawValue) ?? .genericPassword
        attributes = found.attributes.mapValues(Value.init)
        data = found.data
        persistentReference = found.persistentRef.data
        tokenPublicKey = found.tokenPublicKey
    }
}

/// Which items a ``KeychainStore`` call matches: a class and attribute values (Apple's query dictionary, typed).
public struct KeychainQuery: Sendable, Hashable {
    /// How many matches a search returns (`kSecMatchLimit`).
    public enum Limit: Sendable, Hashable {
        /// The first match.
        case one
        /// Every match.
        case all
    }

    /// Which items a query sees with respect to `kSecAttrSynchronizable`.
    public enum Synchronizable: Sendable, Hashable {
        /// Items that stay on this device (the default).
        case local
        /// Items that sync.
        case synchronizable
        /// Both (`kSecAttrSynchronizableAny`).
        case any
    }

    /// The class searched.
    public var itemClass: KeychainItem.Class
    /// Attribute values an item must have, by four-character code.
    public var attributes: [String: KeychainItem.Value]
    /// How many matches a search returns.
    public var limit: Limit = .one
    /// Local items, synchronizable items, or both.
    public var synchronizable: Synchronizable = .local
    /// Whether a search returns each item's secret (decrypting it).
    public var returnsData = false
    /// One item's persistent reference, to match exactly that item.
    public var persistentReference: Data?
    /// How the call may ask for the user's presence when a matched item needs it
    /// (``KeychainAuthentication/allowPrompt`` unless set).
    public var authentication = KeychainAuthentication.allowPrompt
    /// The keychains searched, in order, by name (`kSecMatchSearchList`); nil: the store's keychain, or the
    /// user's search list.
    public var searchList: [String]?

    /// A query for the items of `itemClass` with `attributes`.
    public init(_ itemClass: KeychainItem.Class, attributes: [String: KeychainItem.Value] = [:]) {
        self.itemClass = itemClass
        self.attributes = attributes
    }

    /// `kSecAttrSynchronizable`'s four-character code. Given in ``attributes`` (`1` or `0`) it takes the place
    /// of ``synchronizable``: an added item syncs, a search sees only synchronizable (or only local) items.
    public static let synchronizableCode = "sync"

    /// The flag a `sync` attribute's value gives: 1 or 0 (a number, or its text).
    static func synchronizableFlag(_ value: KeychainItem.Value) throws(KeychainError) -> Bool {
        switch value {
        case .int(let flag) where flag == 0 || flag == 1: return flag == 1
        case .string("1"), .string("0"): return value == .string("1")
        default:
            throw KeychainError(code: .invalidParameter, message: "The attribute 'sync' (kSecAttrSynchronizable) must be 1 or 0.")
        }
    }

    /// The engine's form of this query.
    func itemQuery() throws(KeychainError) -> ItemQuery {
        var q = ItemQuery(itemClass: ItemClass(rawValue: itemClass.rawValue) ?? .genericPassword)
        q.limit = limit == .all ? .all : .one
        switch synchronizable {
        case .local: q.sync = .local
        case .synchronizable: q.sync = .synchronizable; q.syncGiven = true
        case .any: q.sync = .any; q.syncGiven = true
        }
        for (code, value) in attributes {
            if code == Self.synchronizableCode {
                // kSecAttrSynchronizable as an attribute: the item's (or the search's) sync flag, as Apple takes it.
                q.sync = try Self.synchronizableFlag(value) ? .synchronizable : .local
                q.syncGiven = true
                continue
            }
            guard let descriptor = q.itemClass.attribute(code) else {
                throw KeychainError(code: .noSuchAttribute, message: "'\(code)' is not an attribute of class \(itemClass.rawValue).")
            }
            // Stored in the schema's form, whether the keychain is in this process or keychaind.
            q.attributes[code] = try QueryParser.coerce(value.attributeValue.plist, to: descriptor)
        }
        q.returns.data = returnsData
        q.returns.attributes = true
        q.authentication = authentication.options
        if let searchList {
            q.keychains = try searchList.map { (name) throws(KeychainError) in try KeychainName(name) }
        }
        if let persistentReference {
            guard let reference = PersistentReference(persistentReference) else {
                throw KeychainError(code: .invalidParameter, message: "The persistent reference is not one this keychain returned.")
            }
            q.persistentRef = reference
        }
        return q
    }
}

extension KeychainItem.Value {
    init(_ value: AttributeValue) {
        switch value {
        case .string(let s): self = .string(s)
        case .data(let d): self = .data(d)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .date(let d): self = .date(d)
        }
    }

    var attributeValue: AttributeValue {
        switch self {
        case .string(let s): .string(s)
        case .data(let d): .data(d)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .date(let d): .date(d)
        }
    }
}
