#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainClient
import KeychainCore

// Keychain Services' file-based keychains, with Apple's signatures (SecKeychain.h): a user's several keychains
// (login, the ones made with SecKeychainCreate, System, SystemRoots), the search list that SecItem calls search in
// order, and the default keychain new items go to. A SecKeychain names a keychain; it is passed in kSecUseKeychain
// and kSecMatchSearchList. The keychains are the engine's (`KeychainEngine+Keychains.swift`), reached through
// keychaind when it runs.

/// One of the user's keychains.
public final class SecKeychain: @unchecked Sendable {
    let name: KeychainName

    init(_ name: KeychainName) { self.name = name }
}

/// What `SecKeychainCreate`'s `initialAccess` would set: access lists are not kept (access groups decide who reads
/// an item), so the only value is nil.
public final class SecAccess: @unchecked Sendable {
    private init() {}
}

/// Keychains compare as CoreFoundation compares them (`CFEqual`): equal when they name the same keychain.
extension SecKeychain: Hashable {
    /// Whether both name the same keychain.
    public static func == (left: SecKeychain, right: SecKeychain) -> Bool { left.name == right.name }

    /// Hashes the keychain's name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A keychain's status bits (`SecKeychainGetStatus`).
public typealias SecKeychainStatus = UInt32
/// The keychain is unlocked.
public var kSecUnlockStateStatus: SecKeychainStatus { 1 }
/// The keychain's items can be read.
public var kSecReadPermStatus: SecKeychainStatus { 2 }
/// Items can be added to the keychain and changed in it.
public var kSecWritePermStatus: SecKeychainStatus { 4 }

/// The type identifier of keychains, to compare with `CFGetTypeID` of an object a call returned.
public func SecKeychainGetTypeID() -> CFTypeID { CoreFoundationTypeID.secKeychain }

/// Opens the keychain at `pathName`: a keychain's name (`work`, `work.keychain-db`) or a path ending in one; the
/// login keychain's folder names the login keychain. As on macOS the keychain need not exist: calls that use it
/// report `errSecNoSuchKeychain`.
public func SecKeychainOpen(_ pathName: UnsafePointer<CChar>, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    keychain.pointee = nil
    return SecKeychainCall.run { () throws(KeychainError) in
        keychain.pointee = SecKeychain(try SecKeychainCall.name(String(cString: pathName)))
    }
}

/// Makes a keychain named by `pathName` beside the login keychain, protected by `password` (`passwordLength` bytes
/// of UTF-8; none when zero), and opens it. `promptUser` asks for the password instead, which a library cannot
/// do: `errSecInteractionNotAllowed`. Through keychaind only the `security` tool may make keychains.
public func SecKeychainCreate(
    _ pathName: UnsafePointer<CChar>, _ passwordLength: UInt32, _ password: UnsafeRawPointer?,
    _ promptUser: Bool, _ initialAccess: SecAccess?,
    _ keychain: UnsafeMutablePointer<SecKeychain?>
) -> OSStatus {
    keychain.pointee = nil
    return SecKeychainCall.run { () throws(KeychainError) in
        let name = try SecKeychainCall.name(String(cString: pathName))
        if promptUser {
            throw KeychainError(code: .interactionNotAllowed, message: "SecKeychainCreate cannot ask for a password here; pass it.")
        }
        let passcode = try SecKeychainCall.password(passwordLength, password)
        try KeychainConnector.environment().createKeychain(name, passcode: passcode)
        keychain.pointee = SecKeychain(name)
    }
}

/// Deletes the keychain and its items; it leaves the search list. Through keychaind only the `security` tool may.
public func SecKeychainDelete(_ keychainOrArray: SecKeychain?) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        guard let keychainOrArray else { throw KeychainError(code: .invalidParameter, status: .noSuchKeychain, message: "SecKeychainDelete needs a keychain.") }
        try KeychainConnector.environment().deleteKeychain(keychainOrArray.name)
    }
}

/// The keychain new items go to when an add names none.
public func SecKeychainCopyDefault(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    keychain.pointee = nil
    return SecKeychainCall.run { () throws(KeychainError) in
        keychain.pointee = SecKeychain(try KeychainConnector.environment().keychains().defaultKeychain)
    }
}

/// Makes `keychain` the one new items go to.
public func SecKeychainSetDefault(_ keychain: SecKeychain?) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        guard let keychain else { throw KeychainError(code: .invalidParameter, status: .noDefaultKeychain, message: "SecKeychainSetDefault needs a keychain.") }
        try KeychainConnector.environment().setSearchList(nil, defaultKeychain: keychain.name)
    }
}

/// The keychains SecItem calls search when a query has no `kSecMatchSearchList`, in order.
public func SecKeychainCopySearchList(_ searchList: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    searchList.pointee = nil
    return SecKeychainCall.run { () throws(KeychainError) in
        let names = try KeychainConnector.environment().keychains().searchList
        searchList.pointee = names.map(SecKeychain.init) as CFArray
    }
}

/// Replaces the search list with the keychains of `searchList` (an array of `SecKeychain`).
public func SecKeychainSetSearchList(_ searchList: CFArray) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        guard let keychains = searchList as? [SecKeychain] else {
            throw KeychainError(code: .invalidParameter, message: "SecKeychainSetSearchList takes an array of SecKeychain objects.")
        }
        try KeychainConnector.environment().setSearchList(keychains.map(\.name), defaultKeychain: nil)
    }
}

/// Locks `keychain` (nil: the default keychain).
public func SecKeychainLock(_ keychain: SecKeychain?) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in try SecKeychainCall.connection(keychain).lock() }
}

/// Locks every keychain of the user that is open.
public func SecKeychainLockAll() -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        let connection = try KeychainConnector.environment()
        for summary in try connection.keychains().keychains where summary.lockState == .unlocked {
            try connection.keychain(named: summary.name).lock()
        }
    }
}

/// Unlocks `keychain` (nil: the default keychain) with `password` (`passwordLength` bytes of UTF-8). Without
/// `usePassword` macOS asks the user, which a library cannot: `errSecInteractionNotAllowed`.
public func SecKeychainUnlock(_ keychain: SecKeychain?, _ passwordLength: UInt32, _ password: UnsafeRawPointer?, _ usePassword: Bool) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        guard usePassword else {
            throw KeychainError(code: .interactionNotAllowed, message: "SecKeychainUnlock cannot ask for the password here; pass it with usePassword true.")
        }
        try SecKeychainCall.connection(keychain).unlock(passcode: try SecKeychainCall.password(passwordLength, password) ?? "")
    }
}

/// Whether `keychain` (nil: the default keychain) is unlocked, readable and writable.
public func SecKeychainGetStatus(_ keychain: SecKeychain?, _ keychainStatus: UnsafeMutablePointer<SecKeychainStatus>) -> OSStatus {
    keychainStatus.pointee = 0
    return SecKeychainCall.run { () throws(KeychainError) in
        let name: KeychainName
        if let keychain { name = keychain.name } else { name = try KeychainConnector.environment().keychains().defaultKeychain }
        let state = try SecKeychainCall.connection(keychain).status().lockState
        var status: SecKeychainStatus = kSecReadPermStatus
        if state == .unlocked || state == .noPasscode { status |= kSecUnlockStateStatus }
        if !name.isReadOnly { status |= kSecWritePermStatus }
        keychainStatus.pointee = status
    }
}

/// The folder holding `keychain`'s files (nil: the default keychain), as a NUL-terminated string in `pathName`
/// (`ioPathLength` bytes long; on return, the path's length). `errSecBufferTooSmall` when it does not fit.
public func SecKeychainGetPath(_ keychain: SecKeychain?, _ ioPathLength: UnsafeMutablePointer<UInt32>, _ pathName: UnsafeMutablePointer<CChar>) -> OSStatus {
    SecKeychainCall.run { () throws(KeychainError) in
        let listing = try KeychainConnector.environment().keychains()
        let name = keychain?.name ?? listing.defaultKeychain
        guard let summary = listing.summary(of: name) else {
            throw KeychainError(code: .notAvailable, status: .noSuchKeychain, message: "There is no keychain named \(name).")
        }
        let bytes = Array(summary.path.utf8)
        guard bytes.count < Int(ioPathLength.pointee) else {
            ioPathLength.pointee = UInt32(bytes.count)
            throw KeychainError(code: .invalidParameter, status: .bufferTooSmall, message: "The path is longer than the buffer.")
        }
        for (index, byte) in bytes.enumerated() { pathName[index] = CChar(bitPattern: byte) }
        pathName[bytes.count] = 0
        ioPathLength.pointee = UInt32(bytes.count)
    }
}

/// How the SecKeychain functions reach the keychains.
enum SecKeychainCall {
    static func run(_ body: () throws(KeychainError) -> Void) -> OSStatus {
        do {
            try body()
            return errSecSuccess
        } catch {
            return error.status.rawValue
        }
    }

    /// The keychain a path or name given to SecKeychainOpen or SecKeychainCreate names.
    static func name(_ path: String) throws(KeychainError) -> KeychainName {
        try KeychainName(argument: path, keychainFolder: KeychainLocation.fromEnvironment().home)
    }

    /// `keychain`'s connection; nil: the default keychain's.
    static func connection(_ keychain: SecKeychain?) throws(KeychainError) -> any KeychainConnection {
        let connection = try KeychainConnector.environment()
        if let keychain { return connection.keychain(named: keychain.name) }
        return connection.keychain(named: try connection.keychains().defaultKeychain)
    }

    /// A password given as a length and bytes: nil when empty; UTF-8 only.
    static func password(_ length: UInt32, _ bytes: UnsafeRawPointer?) throws(KeychainError) -> String? {
        guard length > 0 else { return nil }
        guard let bytes else { throw KeychainError(code: .invalidParameter, message: "The password's length is not zero but its bytes are missing.") }
        let buffer = UnsafeRawBufferPointer(start: bytes, count: Int(length))
        guard let text = String(validating: buffer, as: UTF8.self) else {
            throw KeychainError(code: .invalidParameter, message: "The password is not UTF-8.")
        }
        return text
    }
}

#endif
