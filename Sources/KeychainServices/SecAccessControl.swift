#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services access control, with Apple's signatures (SecAccessControl.h). The rules and the stored form
// are the engine's (`AccessControl`); this file only declares the API.

/// An item's access control: the accessibility it is stored with and the user presence (or application
/// password) its secret, or a private key's use, needs. Give it as `kSecAttrAccessControl` when adding an item;
/// `kSecReturnAttributes` returns it under the same key.
///
/// Two access controls are equal (`CFEqual`) when their protection and flags are.
public final class SecAccessControl: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The parsed access control.
    package let control: AccessControl

    /// An object for an access control the engine parsed or returned.
    package init(_ control: AccessControl) { self.control = control }

    /// The accessibility (`kSecAttrAccessible…` value) the access control carries.
    package var protection: String { control.protection.rawValue }

    /// The flags it was created with.
    package var flags: SecAccessControlCreateFlags { SecAccessControlCreateFlags(rawValue: CFOptionFlags(truncatingIfNeeded: control.flags.rawValue)) }

    /// Whether both carry the same protection and flags.
    public static func == (lhs: SecAccessControl, rhs: SecAccessControl) -> Bool { lhs.control == rhs.control }

    /// Hashes the protection and flags.
    public func hash(into hasher: inout Hasher) { hasher.combine(control) }

    /// The protection and the constraints' names, as a developer reads them.
    public var description: String {
        let names = SecAccessControlCreateFlags.names.filter { flags.contains($0.flag) }.map(\.name)
        return "<SecAccessControlRef: \(protection)\(names.isEmpty ? "" : ";" + names.joined(separator: ","))>"
    }
}

/// The constraints of an access control (`SecAccessControlCreateFlags`), with Apple's bit values.
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    /// The flags' bits.
    public let rawValue: CFOptionFlags

    /// Flags from their bits.
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// The user's presence: a fingerprint when a reader has an enrolled finger, else the keychain passcode
    /// (`kSecAccessControlUserPresence`).
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Any enrolled fingerprint; still valid when fingers are added or removed (`kSecAccessControlBiometryAny`).
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// Any enrolled fingerprint (`kSecAccessControlTouchIDAny`).
    @available(*, deprecated, renamed: "biometryAny")
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// A fingerprint among those enrolled when the item was stored (`kSecAccessControlBiometryCurrentSet`).
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// A fingerprint among those enrolled when the item was stored (`kSecAccessControlTouchIDCurrentSet`).
    @available(*, deprecated, renamed: "biometryCurrentSet")
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The keychain passcode; a confirmation when no passcode is set (`kSecAccessControlDevicePasscode`).
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A paired watch (`kSecAccessControlWatch`): Linux has none, so the constraint can never be met alone.
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// A paired companion device (`kSecAccessControlCompanion`, the same bit as ``watch``).
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// Any one of the constraints suffices (`kSecAccessControlOr`).
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// Every constraint is needed (`kSecAccessControlAnd`).
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// The constraints guard the use of a private key in the keychain's token (signing, decryption, key
    /// exchange) rather than reading an item (`kSecAccessControlPrivateKeyUsage`).
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// An application password is needed as well (`kSecAccessControlApplicationPassword`); give it in advance
    /// with `LAContext.setCredential(_:type:)`.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)

    /// The names `description` shows, in bit order.
    static let names: [(flag: SecAccessControlCreateFlags, name: String)] = [
        (.userPresence, "userPresence"), (.biometryAny, "biometryAny"), (.biometryCurrentSet, "biometryCurrentSet"),
        (.devicePasscode, "devicePasscode"), (.watch, "watch"), (.or, "or"), (.and, "and"),
        (.privateKeyUsage, "privateKeyUsage"), (.applicationPassword, "applicationPassword"),
    ]
}

/// The type identifier of access controls, to compare with `CFGetTypeID` of an object a call returned.
public func SecAccessControlGetTypeID() -> CFTypeID { CoreFoundationTypeID.secAccessControl }

/// Creates an access control for `kSecAttrAccessControl`.
///
/// - Parameters:
///   - allocator: Ignored (pass `kCFAllocatorDefault` or `nil`).
///   - protection: One of the `kSecAttrAccessible…` constants: the accessibility the item takes.
///   - flags: The constraints. At most one of `.or` and `.and`, at most one of `.biometryAny` and
///     `.biometryCurrentSet`, and `.userPresence` only with `.applicationPassword` and `.privateKeyUsage`.
///   - error: On failure, a `CFError` in `kCFErrorDomainOSStatus` with code `errSecParam` (-50).
/// - Returns: The access control, or `nil` when the protection or the flags are not valid.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    SecKeyBackend.attempt(error) { () throws(KeychainError) in
        guard let name = protection as? String, let protectionClass = ProtectionClass(rawValue: name) else {
            throw KeychainError(
                code: .invalidParameter, message: "SecAccessControlCreateWithFlags: the protection must be one of the kSecAttrAccessible… constants, not \(String(describing: protection)).")
        }
        return SecAccessControl(try AccessControl(protection: protectionClass, flags: AccessControlFlags(rawValue: UInt64(flags.rawValue))))
    }
}
#endif
