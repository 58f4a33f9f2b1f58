#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation

// The CoreFoundation functions keychain code calls on the objects Keychain Services hands it (CFError, CFData,
// CFDictionary), over the Foundation types those names stand for here.

/// MacTypes' "no error" (`noErr`), which Apple's code compares `OSStatus` results with.
public var noErr: Int { 0 }

/// CoreFoundation's bit-flag options type.
public typealias CFOptionFlags = UInt

/// The name of an error domain (`CFErrorDomain`).
public typealias CFErrorDomain = CFString

/// The error's domain, such as `NSOSStatusErrorDomain` for an `OSStatus`.
public func CFErrorGetDomain(_ err: CFError) -> CFErrorDomain {
    err.domain as NSString
}

/// The error's code: for Keychain Services errors, the `OSStatus`.
public func CFErrorGetCode(_ err: CFError) -> CFIndex {
    err.code
}

/// The error's user-info dictionary (its description and underlying error, when it has them).
public func CFErrorCopyUserInfo(_ err: CFError) -> CFDictionary? {
    err.userInfo as NSDictionary
}

/// A description of the error for people to read.
public func CFErrorCopyDescription(_ err: CFError) -> CFString? {
    err.localizedDescription as NSString
}

/// The number of bytes in `theData`.
public func CFDataGetLength(_ theData: CFData) -> CFIndex {
    theData.length
}

/// The bytes of `theData`, valid while it lives.
public func CFDataGetBytePtr(_ theData: CFData) -> UnsafePointer<UInt8>? {
    theData.length == 0 ? nil : theData.bytes.assumingMemoryBound(to: UInt8.self)
}

/// A data object holding a copy of `length` bytes at `bytes`.
public func CFDataCreate(_ allocator: CFAllocator?, _ bytes: UnsafePointer<UInt8>?, _ length: CFIndex) -> CFData? {
    guard length >= 0 else { return nil }
    guard let bytes, length > 0 else { return NSData() }
    return NSData(bytes: bytes, length: length)
}

/// The number of entries in `theDict`.
public func CFDictionaryGetCount(_ theDict: CFDictionary) -> CFIndex {
    theDict.count
}
#endif
