import Foundation

/// Apple's `SecAccessControlCreateFlags`, bit for bit (`SecAccessControl.h`).
package struct AccessControlFlags: OptionSet, Sendable, Hashable {
    package let rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Biometry or the passcode (`kSecAccessControlUserPresence`).
    package static let userPresence = AccessControlFlags(rawValue: 1 << 0)
    /// Any enrolled finger (`kSecAccessControlBiometryAny`, formerly TouchIDAny).
    package static let biometryAny = AccessControlFlags(rawValue: 1 << 1)
    /// The fingers enrolled when the item was stored (`kSecAccessControlBiometryCurrentSet`).
    package static let biometryCurrentSet = AccessControlFlags(rawValue: 1 << 3)
    /// The keychain passcode (`kSecAccessControlDevicePasscode`).
    package static let devicePasscode = AccessControlFlags(rawValue: 1 << 4)
    /// A paired watch (`kSecAccessControlWatch`, macOS only): never available here.
    package static let watch = AccessControlFlags(rawValue: 1 << 5)
    /// Any one constraint suffices (`kSecAccessControlOr`).
    package static let or = AccessControlFlags(rawValue: 1 << 14)
    /// Every constraint is needed (`kSecAccessControlAnd`; also the default for several constraints).
    package static let and = AccessControlFlags(rawValue: 1 << 15)
    /// The constraints guard a private key's use, not its reading (`kSecAccessControlPrivateKeyUsage`).
    package static let privateKeyUsage = AccessControlFlags(rawValue: 1 << 30)
    /// An application password is mixed into the item's key (`kSecAccessControlApplicationPassword`).
    package static let applicationPassword = AccessControlFlags(rawValue: 1 << 31)
}

/// One way of proving presence an access control can ask for.
package enum PresenceFactor: String, Sendable, Hashable, CaseIterable {
    /// Biometry, else the passcode (Apple's `DeviceOwnerAuthentication` policy).
    case userPresence
    /// The keychain passcode (or, with none set, a confirmation).
    case devicePasscode
    /// A fingerprint (fprintd), any enrolled finger.
    case biometryAny
    /// A fingerprint among those enrolled when the item was stored.
    case biometryCurrentSet
    /// A paired watch: never available on Linux.
    case watch
}

/// What an operation on a protected item needs: a `k`-of-`n` choice of factors, and perhaps the item's
/// application password (Apple's ACL constraint for one operation, `SecAccessControlGetConstraint`).
package struct PresenceConstraint: Sendable, Hashable {
    /// The factors, in Apple's order (user presence, passcode, biometry any, biometry current set, watch).
    package var factors: [PresenceFactor]
    /// How many of `factors` must be proven: 1 with `.or`, all of them otherwise.
    package var required: Int
    /// Whether the application password is needed as well.
    package var applicationPassword: Bool

    /// No factor and no password: the operation is allowed.
    package var isOpen: Bool { factors.isEmpty && !applicationPassword }
}

/// An operation an access control governs (Apple's `kAKSKeyOp…`).
package enum ProtectedOperation: String, Sendable, Hashable {
    /// Reading a secret (`od`): `kSecReturnData`, an update that re-seals it, a backup.
    case decrypt
    /// Signing, decrypting or key agreement with a private key held by the keychain (`osgn`, `ock`).
    case sign
    /// Deleting the item: always allowed, as on Apple's systems.
    case delete
}

/// A parsed `SecAccessControl`: the accessibility it carries and its flags.
///
/// Created only through ``init(protection:flags:)``, which applies Apple's rules
/// (`SecAccessControlCreateWithFlags`): at most one of `.or`/`.and`, at most one biometry constraint, and
/// `.userPresence` combined only with `.applicationPassword` and `.privateKeyUsage`. Stored in the item's `accc`
/// attribute as ``encoded`` (fixed by a golden vector in the tests).
package struct AccessControl: Sendable, Hashable {
    /// The accessibility (`kSecAttrAccessible…`), which the item's `pdmn` takes.
    package let protection: ProtectionClass
    /// The flags as given.
    package let flags: AccessControlFlags

    /// Applies Apple's checks; the error is `errSecParam` with Apple's reason.
    package init(protection: ProtectionClass, flags: AccessControlFlags) throws(KeychainError) {
        if flags.contains(.or) && flags.contains(.and) {
            throw .param("SecAccessControl: only one logical operation (.or or .and) can be set.")
        }
        let biometry = flags.intersection([.biometryAny, .biometryCurrentSet])
        if !biometry.isEmpty && biometry != .biometryAny && biometry != .biometryCurrentSet {
            throw .param("SecAccessControl: only one biometry constraint (.biometryAny or .biometryCurrentSet) can be set.")
        }
        if flags.contains(.userPresence) && !flags.subtracting([.userPresence, .applicationPassword, .privateKeyUsage]).isEmpty {
            throw .param("SecAccessControl: .userPresence can be combined only with .applicationPassword and .privateKeyUsage.")
        }
        self.protection = protection
        self.flags = flags
    }

    /// The factors the flags name, in Apple's order.
    package var factors: [PresenceFactor] {
        var factors: [PresenceFactor] = []
        if flags.contains(.userPresence) { factors.append(.userPresence) }
        if flags.contains(.devicePasscode) { factors.append(.devicePasscode) }
        if flags.contains(.biometryAny) { factors.append(.biometryAny) }
        if flags.contains(.biometryCurrentSet) { factors.append(.biometryCurrentSet) }
        if flags.contains(.watch) { factors.append(.watch) }
        return factors
    }

    /// What `operation` needs (Apple's ACL: the constraints guard decryption, or with `.privateKeyUsage` signing
    /// and key agreement; encryption and deletion are always allowed).
    package func constraint(for operation: ProtectedOperation) -> PresenceConstraint {
        let guarded: Bool =
            switch operation {
            case .decrypt: !flags.contains(.privateKeyUsage)
            case .sign: flags.contains(.privateKeyUsage)
            case .delete: false
            }
        guard guarded else { return PresenceConstraint(factors: [], required: 0, applicationPassword: false) }
        let factors = self.factors
        return PresenceConstraint(
            factors: factors, required: flags.contains(.or) ? min(1, factors.count) : factors.count,
            applicationPassword: flags.contains(.applicationPassword) && operation == .decrypt)
    }

    /// Whether some operation on the item needs presence or a password (what `kSecUseAuthenticationUISkip` skips).
    package var isProtected: Bool { !factors.isEmpty || flags.contains(.applicationPassword) }

    // MARK: Stored form

    /// The stored form: version 1, the flags (8 bytes, big-endian), the protection's `pdmn` code in UTF-8.
    package var encoded: Data {
        var bytes: [UInt8] = [1]
        withUnsafeBytes(of: flags.rawValue.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: protection.rawValue.utf8)
        return Data(bytes)
    }

    /// Reads the stored form; nil when it is not one this keychain wrote.
    package init?(encoded data: Data) {
        let bytes = Array(data)
        guard bytes.count >= 10, bytes.count <= 14, bytes[0] == 1 else { return nil }
        var raw: UInt64 = 0
        for byte in bytes[1..<9] { raw = raw << 8 | UInt64(byte) }
        guard let text = String(validating: bytes[9...], as: UTF8.self),
            let protection = ProtectionClass(rawValue: text),
            let parsed = try? AccessControl(protection: protection, flags: AccessControlFlags(rawValue: raw))
        else { return nil }
        self = parsed
    }
}
