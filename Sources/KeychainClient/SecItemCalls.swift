import Foundation
import KeychainCore

/// Apple's four SecItem calls on property-list dictionaries, over any keychain: the dictionary is parsed here,
/// in the caller's process, and only the typed request travels.
extension KeychainConnection {
    /// `SecItemAdd`. Returns the result object when a return key was set.
    package func secItemAdd(_ attributes: [String: PlistValue]) throws(KeychainError) -> PlistValue? {
        let q = try SecItemDictionaries.addQuery(attributes)
        return SecItemDictionaries.addResult(try add(q), q)
    }

    /// `SecItemCopyMatching`.
    package func secItemCopyMatching(_ query: [String: PlistValue]) throws(KeychainError) -> PlistValue? {
        let q = try QueryParser.parse(query, for: .copyMatching)
        return SecItemDictionaries.matchingResult(try find(q), q)
    }

    /// `SecItemUpdate`.
    package func secItemUpdate(_ query: [String: PlistValue], attributesToUpdate: [String: PlistValue]) throws(KeychainError) {
        let q = try QueryParser.parse(query, for: .update)
        try update(q, with: try QueryParser.parseUpdate(attributesToUpdate, itemClass: q.itemClass))
    }

    /// `SecItemDelete`.
    package func secItemDelete(_ query: [String: PlistValue]) throws(KeychainError) {
        try delete(try QueryParser.parse(query, for: .delete))
    }
}
