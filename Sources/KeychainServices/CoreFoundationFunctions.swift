#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation

// The CoreFoundation functions keychain code calls on the objects Keychain Services hands it (CFError, CFData,
// CFDictionary, CFArray), over the Foundation types those names stand for here. Memory is Swift's: there is no
// CFRetain or CFRelease to call, as in Swift on Apple's platforms.

/// MacTypes' "no error" (`noErr`), which Apple's code compares `OSStatus` results with: an `OSStatus`, as the
/// Darwin overlay declares it, so `let status: OSStatus = noErr` compiles as it does there.
public var noErr: OSStatus { 0 }

/// CoreFoundation's bit-flag options type.
public typealias CFOptionFlags = UInt

/// The name of an error domain (`CFErrorDomain`).
public typealias CFErrorDomain = CFString

/// The domain of errors whose code is an `OSStatus`: every Keychain Services error.
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFErrorDomain! = NSOSStatusErrorDomain as NSString
/// The domain of errors whose code is a POSIX `errno`.
nonisolated(unsafe) public let kCFErrorDomainPOSIX: CFErrorDomain! = NSPOSIXErrorDomain as NSString
/// The user-info key of an error's description for people to read.
nonisolated(unsafe) public let kCFErrorLocalizedDescriptionKey: CFString! = NSLocalizedDescriptionKey as NSString
/// The user-info key of an error's description for developers.
nonisolated(unsafe) public let kCFErrorDescriptionKey: CFString! = "NSDescription" as NSString

// MARK: CFType

/// The type of a CoreFoundation object, to compare with a `…GetTypeID()` function's result, as code written for
/// Apple's platforms checks what `SecItemCopyMatching` returned:
/// `CFGetTypeID(item) == SecKeyGetTypeID()`. Zero for `nil` or an object of no CoreFoundation type.
public func CFGetTypeID(_ cf: CFTypeRef!) -> CFTypeID {
    guard let cf else { return 0 }
    switch cf {
    case is SecKey: return SecKeyGetTypeID()
    case is SecCertificate: return SecCertificateGetTypeID()
    case is SecIdentity: return SecIdentityGetTypeID()
    case is SecTrust: return SecTrustGetTypeID()
    case is SecPolicy: return SecPolicyGetTypeID()
    case is SecAccessControl: return SecAccessControlGetTypeID()
    case is SecKeychain: return SecKeychainGetTypeID()
    default: break
    }
    if let number = cf as? NSNumber, !(cf is String) {
        return CoreFoundationTypeID.isBoolean(number) ? CFBooleanGetTypeID() : CFNumberGetTypeID()
    }
    switch cf {
    case is String, is NSString: return CFStringGetTypeID()
    case is Data, is NSData: return CFDataGetTypeID()
    case is Date, is NSDate: return CFDateGetTypeID()
    case is NSDictionary, is [AnyHashable: Any]: return CFDictionaryGetTypeID()
    case is NSArray, is [Any]: return CFArrayGetTypeID()
    case is NSError: return CFErrorGetTypeID()
    default: return 0
    }
}

/// The type identifier of strings (`CFString`).
public func CFStringGetTypeID() -> CFTypeID { CoreFoundationTypeID.string }
/// The type identifier of data objects (`CFData`).
public func CFDataGetTypeID() -> CFTypeID { CoreFoundationTypeID.data }
/// The type identifier of dictionaries (`CFDictionary`).
public func CFDictionaryGetTypeID() -> CFTypeID { CoreFoundationTypeID.dictionary }
/// The type identifier of arrays (`CFArray`).
public func CFArrayGetTypeID() -> CFTypeID { CoreFoundationTypeID.array }
/// The type identifier of numbers (`CFNumber`); booleans have their own (`CFBooleanGetTypeID`).
public func CFNumberGetTypeID() -> CFTypeID { CoreFoundationTypeID.number }
/// The type identifier of the two boolean objects (`CFBoolean`).
public func CFBooleanGetTypeID() -> CFTypeID { CoreFoundationTypeID.boolean }
/// The type identifier of dates (`CFDate`).
public func CFDateGetTypeID() -> CFTypeID { CoreFoundationTypeID.date }
/// The type identifier of errors (`CFError`).
public func CFErrorGetTypeID() -> CFTypeID { CoreFoundationTypeID.error }

/// Whether two objects are equal (two strings with the same characters, two data objects with the same bytes,
/// the same key, …).
public func CFEqual(_ cf1: CFTypeRef!, _ cf2: CFTypeRef!) -> Bool {
    switch (cf1, cf2) {
    case (nil, nil): return true
    case (let a?, let b?):
        if a === b { return true }
        // The Security objects compare as Hashable says, Foundation's as isEqual(_:) does.
        if let a = a as? any Hashable, let b = b as? any Hashable { return AnyHashable(a) == AnyHashable(b) }
        return false
    default: return false
    }
}

/// A hash code for the object, equal for objects `CFEqual` finds equal.
public func CFHash(_ cf: CFTypeRef!) -> CFHashCode {
    guard let cf else { return 0 }
    if let value = cf as? any Hashable { return CFHashCode(bitPattern: AnyHashable(value).hashValue) }
    return CFHashCode(bitPattern: ObjectIdentifier(cf).hashValue)
}

/// A description of the object for developers (never a key's or an item's secret bytes).
public func CFCopyDescription(_ cf: CFTypeRef!) -> CFString! {
    guard let cf else { return nil }
    return String(describing: cf) as NSString
}

/// The value of a boolean object (`kCFBooleanTrue` or `kCFBooleanFalse`); `false` for `nil`.
public func CFBooleanGetValue(_ boolean: CFBoolean!) -> Bool {
    boolean?.boolValue ?? false
}

// MARK: CFError

/// The error's domain, such as `kCFErrorDomainOSStatus` for an `OSStatus`; `nil` for no error.
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! {
    err.map { $0.domain as NSString }
}

/// The error's code: for Keychain Services errors, the `OSStatus`; 0 for no error.
public func CFErrorGetCode(_ err: CFError!) -> CFIndex {
    err?.code ?? 0
}

/// The error's user-info dictionary (its description and underlying error, when it has them).
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    err.map { $0.userInfo as NSDictionary }
}

/// A description of the error for people to read.
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    err.map { $0.localizedDescription as NSString }
}

/// A new error in `domain` with `code` and, optionally, a user-info dictionary with string keys; `nil` without a
/// domain.
public func CFErrorCreate(_ allocator: CFAllocator!, _ domain: CFErrorDomain!, _ code: CFIndex, _ userInfo: CFDictionary!) -> CFError! {
    guard let domain else { return nil }
    var info: [String: Any] = [:]
    userInfo?.forEach { key, value in
        if let name = key as? String { info[name] = value }
    }
    return NSError(domain: domain as String, code: code, userInfo: info.isEmpty ? nil : info)
}

// MARK: CFData

/// The number of bytes in `theData` (0 for `nil`).
public func CFDataGetLength(_ theData: CFData!) -> CFIndex {
    theData?.length ?? 0
}

/// The bytes of `theData`, valid while it lives.
public func CFDataGetBytePtr(_ theData: CFData!) -> UnsafePointer<UInt8>! {
    guard let theData, theData.length > 0 else { return nil }
    return theData.bytes.assumingMemoryBound(to: UInt8.self)
}

/// Copies the bytes of `range` out of `theData` into `buffer`, which must hold `range.length` bytes. A range
/// that is not inside the data, or no data or buffer, copies nothing (Apple's traps).
public func CFDataGetBytes(_ theData: CFData!, _ range: CFRange, _ buffer: UnsafeMutablePointer<UInt8>!) {
    guard let theData, let buffer, range.location >= 0, range.length > 0, range.location <= theData.length - range.length else { return }
    theData.getBytes(buffer, range: NSRange(location: range.location, length: range.length))
}

/// A data object holding a copy of `length` bytes at `bytes`.
public func CFDataCreate(_ allocator: CFAllocator!, _ bytes: UnsafePointer<UInt8>!, _ length: CFIndex) -> CFData! {
    guard length >= 0 else { return nil }
    guard let bytes, length > 0 else { return NSData() }
    return NSData(bytes: bytes, length: length)
}

// MARK: CFDictionary and CFArray

/// The number of entries in `theDict` (0 for `nil`).
public func CFDictionaryGetCount(_ theDict: CFDictionary!) -> CFIndex {
    theDict?.count ?? 0
}

/// The value stored under `key` (a pointer to a key object, as `Unmanaged.passUnretained(kSecValueData).toOpaque()`
/// gives it), or `nil`. As on Apple's platforms the value is not retained for the caller: it stays valid while
/// the dictionary lives and holds it (`Unmanaged<AnyObject>.fromOpaque(value).takeUnretainedValue()`).
public func CFDictionaryGetValue(_ theDict: CFDictionary!, _ key: UnsafeRawPointer!) -> UnsafeRawPointer! {
    guard let theDict, let key else { return nil }
    let name = Unmanaged<AnyObject>.fromOpaque(key).takeUnretainedValue()
    guard let value = theDict.object(forKey: name) else { return nil }
    return BorrowedObjects.shared.pointer(to: value, in: theDict, slot: BorrowedObjects.slot(name))
}

/// Whether `theDict` has an entry for `key` (a pointer to a key object, as for `CFDictionaryGetValue`).
public func CFDictionaryContainsKey(_ theDict: CFDictionary!, _ key: UnsafeRawPointer!) -> Bool {
    guard let theDict, let key else { return false }
    return theDict.object(forKey: Unmanaged<AnyObject>.fromOpaque(key).takeUnretainedValue()) != nil
}

/// The number of values in `theArray` (0 for `nil`).
public func CFArrayGetCount(_ theArray: CFArray!) -> CFIndex {
    theArray?.count ?? 0
}

/// The value at `idx`, not retained for the caller: it stays valid while the array lives
/// (`Unmanaged<AnyObject>.fromOpaque(value).takeUnretainedValue()`). `nil` for an index outside the array
/// (Apple's traps), or for no array.
public func CFArrayGetValueAtIndex(_ theArray: CFArray!, _ idx: CFIndex) -> UnsafeRawPointer! {
    guard let theArray, idx >= 0, idx < theArray.count else { return nil }
    return BorrowedObjects.shared.pointer(to: theArray.object(at: idx), in: theArray, slot: AnyHashable(idx))
}

// MARK: Support

/// The type identifiers: distinct and the same for the life of the process (Apple assigns them at run time too).
enum CoreFoundationTypeID {
    static let string: CFTypeID = 7
    static let dictionary: CFTypeID = 18
    static let array: CFTypeID = 19
    static let data: CFTypeID = 20
    static let boolean: CFTypeID = 21
    static let number: CFTypeID = 22
    static let date: CFTypeID = 42
    static let error: CFTypeID = 43
    static let secCertificate: CFTypeID = 300
    static let secIdentity: CFTypeID = 301
    static let secKey: CFTypeID = 302
    static let secPolicy: CFTypeID = 303
    static let secTrust: CFTypeID = 304
    static let secAccessControl: CFTypeID = 305
    static let secKeychain: CFTypeID = 310

    /// Whether a number object is one of the two booleans (CoreFoundation's `CFBoolean` is a type of its own).
    ///
    /// The class's name comes from `_typeName`, the runtime's own name of the type: `String(describing:)` on a
    /// metatype asks the runtime first whether the type conforms to each printing protocol, and in a program with
    /// the Swift runtime linked in each first-time question scans every conformance of the program (about a tenth
    /// of a `git-credential-keychain get` process).
    static func isBoolean(_ number: NSNumber) -> Bool {
        _typeName(type(of: number), qualified: false).contains("Boolean")
    }
}

/// What the pointer-returning "Get" functions point at. Foundation hands values that bridge to Swift (strings,
/// data, dictionaries) out as a new object on every read, which would die as the function returns; the object
/// handed out is kept here instead, for as long as its container lives, as CoreFoundation's container keeps it.
final class BorrowedObjects: @unchecked Sendable {
    static let shared = BorrowedObjects()

    private struct Entry {
        weak var container: AnyObject?
        var values: [AnyHashable: AnyObject] = [:]
    }

    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// The number of entries at which dead containers are swept out next.
    private var sweepAt = 64

    /// The slot a dictionary key names.
    static func slot(_ key: AnyObject) -> AnyHashable {
        (key as? NSObject).map(AnyHashable.init) ?? AnyHashable(ObjectIdentifier(key))
    }

    /// A pointer to `value`, the content of `slot` in `container`, valid while `container` lives and holds it.
    func pointer(to value: Any, in container: AnyObject, slot: AnyHashable) -> UnsafeRawPointer {
        let object = value as AnyObject
        lock.lock()
        defer { lock.unlock() }
        let id = ObjectIdentifier(container)
        var entry = entries[id] ?? Entry(container: container)
        if entry.container !== container { entry = Entry(container: container) }  // the address of a container gone
        let kept: AnyObject
        if let previous = entry.values[slot], previous === object || (previous as? NSObject)?.isEqual(object) == true {
            kept = previous
        } else {
            kept = object
            entry.values[slot] = object
        }
        entries[id] = entry
        if entries.count >= sweepAt {
            entries = entries.filter { $0.value.container != nil }
            sweepAt = max(64, entries.count * 2)
        }
        return UnsafeRawPointer(Unmanaged.passUnretained(kept).toOpaque())
    }
}
#endif
