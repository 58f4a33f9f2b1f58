#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation

// Keychain Services item functions, with Apple's signatures (SecItem.h). The store, its cryptography and
// the entitlement checks live behind `SecItemBackend`; this file only declares the API.

/// Adds one or more items to a keychain.
///
/// - Parameters:
///   - attributes: A dictionary with the item's class (`kSecClass`), its attributes, its data
///     (`kSecValueData`), and optional return keys that ask for a result.
///   - result: On return, the added item in the form the return keys ask for; pass `nil` when you don't need it.
/// - Returns: `errSecSuccess`, or an `errSec…` code such as `errSecDuplicateItem` or `errSecParam`.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    SecItemBackend.add(attributes, result)
}

/// Returns one or more keychain items that match a search query, or copies attributes of specific items.
///
/// - Parameters:
///   - query: A dictionary with the item class, the attributes to match, search keys such as
///     `kSecMatchLimit`, and return keys.
///   - result: On return, the found items in the form the return keys ask for.
/// - Returns: `errSecSuccess`, `errSecItemNotFound` when nothing matches, or another `errSec…` code.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    SecItemBackend.copyMatching(query, result)
}

/// Modifies items that match a search query.
///
/// - Parameters:
///   - query: A dictionary with the item class and the attributes to match, or `kSecValueRef` with a key or
///     certificate to update exactly its item. It may not contain return or search keys.
///   - attributesToUpdate: The attributes (and `kSecValueData`) to change in every matching item.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecDuplicateItem` (nothing changed), or another code.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    SecItemBackend.update(query, attributesToUpdate)
}

/// Deletes every item that matches a search query.
///
/// - Parameter query: A dictionary with the item class and the attributes to match, or `kSecValueRef` with a
///   key, certificate or identity to delete exactly its item (an identity: its certificate and private key).
///   `kSecMatchLimit` may only be `kSecMatchLimitAll` (which a delete does anyway, and which code written for
///   macOS passes); a finite limit or another `kSecMatch…` key is `errSecParam`.
/// - Returns: `errSecSuccess`, `errSecItemNotFound` when nothing matched, or another `errSec…` code.
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    SecItemBackend.delete(query)
}
#endif
