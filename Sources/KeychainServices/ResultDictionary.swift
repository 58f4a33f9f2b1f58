#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainCore

/// A result dictionary of `SecItemCopyMatching` and `SecItemAdd` (an item's attributes, and its data or
/// references when asked): an immutable `NSDictionary` over the typed values, whose objects are made when they are
/// read.
///
/// Building a Foundation dictionary eagerly made and hashed an `NSString` per key and an object per value for every
/// item, which cost more than finding and decrypting the item; a query returning the attributes of many items
/// spent most of its time there. Callers see an ordinary `NSDictionary` (`CFDictionary`): it bridges to
/// `[String: Any]`, answers `CFDictionaryGetValue`, copies and enumerates as any other.
final class ResultDictionary: NSDictionary {
    // Immutable after init: safe to read from any thread, as an immutable NSDictionary is.
    private let entries: [String: PlistValue]

    init(_ entries: [String: PlistValue]) {
        self.entries = entries
        super.init(objects: nil, forKeys: nil, count: 0)
    }

    required init(objects: UnsafePointer<AnyObject>!, forKeys keys: UnsafePointer<NSObject>!, count: Int) {
        var entries: [String: PlistValue] = [:]
        for index in 0 ..< count {
            guard let key = keys?[index] as? String, let object = objects?[index] else { continue }
            entries[key] = SecItemBackend.plist(object)
        }
        self.entries = entries
        super.init(objects: nil, forKeys: nil, count: 0)
    }

    required convenience init?(coder: NSCoder) {
        guard let decoded = NSDictionary(coder: coder) else { return nil }
        var entries: [String: PlistValue] = [:]
        for (key, value) in decoded {
            guard let key = key as? String else { continue }
            entries[key] = SecItemBackend.plist(value)
        }
        self.init(entries)
    }

    required convenience init(dictionaryLiteral elements: (Any, Any)...) {
        var entries: [String: PlistValue] = [:]
        for (key, value) in elements {
            guard let key = key as? String else { continue }
            entries[key] = SecItemBackend.plist(value)
        }
        self.init(entries)
    }

    override var count: Int { entries.count }

    override func object(forKey key: Any) -> Any? {
        let name: String
        if let string = key as? String {
            name = string
        } else if let string = key as? NSString {
            name = string as String
        } else {
            return nil
        }
        return entries[name].map(SecItemBackend.object)
    }

    override func keyEnumerator() -> NSEnumerator {
        NSArray(array: entries.keys.map { NSString(string: $0) }).objectEnumerator()
    }

    override func copy(with zone: NSZone? = nil) -> Any { self }
}
#endif
