#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
@_exported import Foundation

// The CoreFoundation names that Keychain Services code uses, as Foundation types, so that code written
// for Apple's platforms compiles unchanged on Linux.

/// A CoreFoundation object (`AnyObject` here).
public typealias CFTypeRef = AnyObject
/// An immutable dictionary (Foundation's `NSDictionary`).
public typealias CFDictionary = NSDictionary
/// A mutable dictionary (Foundation's `NSMutableDictionary`).
public typealias CFMutableDictionary = NSMutableDictionary
/// An immutable string (Foundation's `NSString`).
public typealias CFString = NSString
/// Immutable bytes (Foundation's `NSData`).
public typealias CFData = NSData
/// An immutable array (Foundation's `NSArray`).
public typealias CFArray = NSArray
/// A number (Foundation's `NSNumber`).
public typealias CFNumber = NSNumber
/// A boolean number (Foundation's `NSNumber`).
public typealias CFBoolean = NSNumber
/// A point in time (Foundation's `NSDate`).
public typealias CFDate = NSDate
/// An error object (Foundation's `NSError`).
public typealias CFError = NSError
/// A CoreFoundation index or count.
public typealias CFIndex = Int
/// The result code of a Security framework call: `errSecSuccess` or an `errSec…` code.
public typealias OSStatus = Int32
/// The identifier of a CoreFoundation type, as `CFGetTypeID` and the `…GetTypeID()` functions return it.
public typealias CFTypeID = UInt
/// A hash code, as `CFHash` returns it.
public typealias CFHashCode = UInt

/// A range of items or bytes: where it starts and how many it spans.
public struct CFRange: Sendable, Hashable {
    /// The index of the first item.
    public var location: CFIndex
    /// The number of items.
    public var length: CFIndex

    /// The empty range at 0.
    public init() {
        location = 0
        length = 0
    }

    /// A range of `length` items from `location`.
    public init(location: CFIndex, length: CFIndex) {
        self.location = location
        self.length = length
    }
}

/// A range of `len` items from `loc`.
public func CFRangeMake(_ loc: CFIndex, _ len: CFIndex) -> CFRange {
    CFRange(location: loc, length: len)
}

/// A memory allocator. Allocation is Swift's here: functions take one for compatibility and ignore it.
public final class CFAllocator: @unchecked Sendable {
    init() {}
}
/// The default allocator, the one every function uses (an object, as on Apple's platforms, so that
/// `let allocator: CFAllocator = kCFAllocatorDefault` holds one).
public let kCFAllocatorDefault: CFAllocator! = CFAllocator()

/// A string object hashes and compares as the `String` it holds when put in an `AnyHashable`, as on Apple's
/// platforms: so `attributes[kSecAttrAccount]`, on a `[AnyHashable: Any]` result whose keys are Swift strings, finds
/// the account (swift-corelibs-foundation leaves `NSString` out of `AnyHashable`'s bridging, and the lookup would
/// quietly find nothing).
extension NSString: @retroactive _HasCustomAnyHashableRepresentation {
    /// The `String` this object holds, as an `AnyHashable`.
    public func _toCustomAnyHashable() -> AnyHashable? {
        AnyHashable(String._unconditionallyBridgeFromObjectiveC(self))
    }
}

/// The boolean `true` object.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// The boolean `false` object.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)
#endif
