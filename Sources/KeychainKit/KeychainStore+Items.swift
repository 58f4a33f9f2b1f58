import Foundation
import KeychainClient
import KeychainCore
import Logging

extension KeychainStore {
    /// The store of the user's own admin tool (`security`): every access group, new items in
    /// `defaultAccessGroup`, in the keychain the environment names.
    ///
    /// In-process this is what a process that can read the keychain's files can do anyway. Through keychaind it is
    /// granted only to the `security` tool installed beside keychaind, and only after it has given the keychain's
    /// passcode when one is set (calls fail with `KeychainStatus/interactionNotAllowed` until then; give it with
    /// ``unlock(passcode:)``).
    ///
    /// - Parameters:
    ///   - defaultAccessGroup: Where new items go; nil: the first group of the environment's entitlements, else
    ///     the executable's name.
    ///   - createIfMissing: false for read-only work: a keychain that does not exist yet is not created, and the
    ///     call fails with `KeychainStatus/noSuchKeychain` instead.
    public static func administrator(defaultAccessGroup: String? = nil, createIfMissing: Bool = true) throws(KeychainError) -> KeychainStore {
        var group = defaultAccessGroup ?? AccessPolicy.currentExecutableName()
        if defaultAccessGroup == nil, let first = try AccessPolicy.fromEnvironment().groups.first { group = first }
        let connection = try KeychainConnector.connection(
            for: .administrator(defaultGroup: group), createIfMissing: createIfMissing,
            logger: KeychainStore.quietLogger)
        let directory = (try? connection.status().home) ?? KeychainLocation.fromEnvironment().home
        return KeychainStore(connection: connection, directory: directory, accessGroups: [group, "*"])
    }

    /// The keychain's database file, as `security` prints it for each item.
    public var databasePath: String { KeychainLocation(home: directory).databasePath }

    /// The items `query` matches, with their attributes (and secrets when ``KeychainQuery/returnsData``).
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when none match.
    public func items(matching query: KeychainQuery) throws(KeychainError) -> [KeychainItem] {
        try connection.find(query.itemQuery()).map(KeychainItem.init)
    }

    /// Adds an item of `itemClass` with `attributes` and the secret `data`.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/duplicateItem` when an item with the same primary key
    ///   exists.
    public func addItem(_ itemClass: KeychainItem.Class, attributes: [String: KeychainItem.Value], data: Data?) throws(KeychainError) {
        try addItem(itemClass, attributes: attributes, data: data, accessControl: nil)
    }

    /// Adds an item of `itemClass` with `attributes`, the secret `data` and an access control
    /// (`kSecAttrAccessControl`), whose accessibility the item takes.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/duplicateItem` when an item with the same primary key
    ///   exists, or `KeychainStatus/param` when `attributes` give an accessibility (`pdmn`) as well.
    public func addItem(
        _ itemClass: KeychainItem.Class, attributes: [String: KeychainItem.Value], data: Data?,
        accessControl: KeychainAccessControl?
    ) throws(KeychainError) {
        var query = try KeychainQuery(itemClass, attributes: attributes).itemQuery()
        if let accessControl {
            guard query.attributes["pdmn"] == nil else {
                throw KeychainError(code: .invalidParameter, message: "Give the accessibility in the access control only: an item cannot have both an accessibility and an access control.")
            }
            query.attributes["accc"] = accessControl.attributeValue
            query.attributes["pdmn"] = .string(accessControl.control.protection.rawValue)
        }
        query.valueData = data
        _ = try connection.add(query)
    }

    /// Adds a certificate, with the attributes Apple derives from it (subject, issuer, serial number, key hash).
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/duplicateItem` when the certificate is there already.
    public func add(_ certificate: KeychainCertificate) throws(KeychainError) {
        _ = try connection.secItemAdd(["class": .string(ItemClass.certificate.rawValue), "v_Data": .data(certificate.der)])
    }

    /// Adds a key as a permanent `kSecClassKey` item, with the attributes Apple gives it.
    public func add(_ key: KeychainKey) throws(KeychainError) {
        var item = try key.material.itemAttributes(["perm": .int(1)])
        item["class"] = .string(ItemClass.key.rawValue)
        _ = try connection.secItemAdd(item)
    }

    /// Changes `attributes` and, when given, the secret of every item `query` matches.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when none match.
    public func updateItems(matching query: KeychainQuery, attributes: [String: KeychainItem.Value], data: Data?) throws(KeychainError) {
        try updateItems(matching: query, attributes: attributes, data: data, accessControl: nil)
    }

    /// Changes `attributes`, the secret when given, and the access control when given (with the accessibility it
    /// carries) of every item `query` matches. Changing a protected item needs the user's presence, asked for as
    /// the query's ``KeychainQuery/authentication`` allows.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when none match.
    public func updateItems(
        matching query: KeychainQuery, attributes: [String: KeychainItem.Value], data: Data?,
        accessControl: KeychainAccessControl?
    ) throws(KeychainError) {
        let itemQuery = try query.itemQuery()
        // The changes in the schema's form, as the query's attributes are.
        let changeQuery = try KeychainQuery(query.itemClass, attributes: attributes).itemQuery()
        var changes = changeQuery.attributes
        // A `sync` attribute makes the items synchronizable (1) or local (0).
        let sync = changeQuery.syncGiven ? changeQuery.sync == .synchronizable : nil
        if let accessControl {
            guard changes["pdmn"] == nil else {
                throw KeychainError(code: .invalidParameter, message: "Give the accessibility in the access control only: an item cannot have both an accessibility and an access control.")
            }
            changes["accc"] = accessControl.attributeValue
            changes["pdmn"] = .string(accessControl.control.protection.rawValue)
        }
        try connection.update(itemQuery, with: ItemChanges(attributes: changes, sync: sync, data: data))
    }

    /// Deletes every item `query` matches; returns how many.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/itemNotFound` when none match.
    @discardableResult
    public func deleteItems(matching query: KeychainQuery) throws(KeychainError) -> Int {
        var q = try query.itemQuery()
        q.returns = ReturnOptions()
        return try connection.delete(q)
    }

    /// Only errors reach standard error from the admin tool's keychain (its output is macOS's exact text).
    static let quietLogger: Logger = {
        var logger = Logger(label: "security")
        logger.logLevel = .error
        return logger
    }()
}
