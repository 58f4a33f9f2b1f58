#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services trust settings, with Apple's signatures (SecTrustSettings.h). Storage and evaluation are the
// engine's (`TrustSettingsStore`): the user's settings in $XDG_CONFIG_HOME/keychain/trust-settings.plist (or
// ~/.config/keychain/…), the administrator's in /etc/keychain/trust-settings.plist, the system's the System Roots.

/// Whose trust settings: the user's, the administrator's (root only), or the system's (read-only).
public enum SecTrustSettingsDomain: UInt32, Sendable {
    /// The user's own settings.
    case user = 0
    /// The administrator's, for every user; changing them needs root.
    case admin = 1
    /// The system's: the System Roots, each trusted as a root.
    case system = 2

    var engine: TrustSettingsDomain { TrustSettingsDomain(rawValue: Int(rawValue)) ?? .user }
}

/// What a usage constraint decides.
public enum SecTrustSettingsResult: UInt32, Sendable {
    /// Never valid.
    case invalid = 0
    /// A self-signed certificate trusted as an anchor.
    case trustRoot = 1
    /// A certificate that is not self-signed trusted as if it were a root.
    case trustAsRoot = 2
    /// Explicitly distrusted: evaluation fails with `errSecTrustSettingDeny`.
    case deny = 3
    /// No decision; evaluation goes on as without a setting.
    case unspecified = 4
}

/// The key usages a usage constraint can be limited to (stored; evaluation does not use them).
public struct SecTrustSettingsKeyUsage: OptionSet, Sendable {
    /// The mask.
    public let rawValue: UInt32
    /// A mask.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Signing data.
    public static let useSignature = SecTrustSettingsKeyUsage(rawValue: 0x0000_0001)
    /// Encrypting and decrypting data.
    public static let useEnDecryptData = SecTrustSettingsKeyUsage(rawValue: 0x0000_0002)
    /// Encrypting and decrypting keys.
    public static let useEnDecryptKey = SecTrustSettingsKeyUsage(rawValue: 0x0000_0004)
    /// Signing certificates.
    public static let useSignCert = SecTrustSettingsKeyUsage(rawValue: 0x0000_0008)
    /// Signing revocation lists and responses.
    public static let useSignRevocation = SecTrustSettingsKeyUsage(rawValue: 0x0000_0010)
    /// Key exchange.
    public static let useKeyExchange = SecTrustSettingsKeyUsage(rawValue: 0x0000_0020)
    /// Any use.
    public static let useAny = SecTrustSettingsKeyUsage(rawValue: 0xFFFF_FFFF)
}

/// A usage constraint's policy (a `SecPolicy`): the constraint applies only to evaluations with that policy.
public let kSecTrustSettingsPolicy = "kSecTrustSettingsPolicy"
/// A usage constraint's application (not supported here: such constraints never apply).
public let kSecTrustSettingsApplication = "kSecTrustSettingsApplication"
/// Policy-specific data: for SSL, the host name the constraint is limited to.
public let kSecTrustSettingsPolicyString = "kSecTrustSettingsPolicyString"
/// The policy's name, as Apple stores it beside the OID.
public let kSecTrustSettingsPolicyName = "kSecTrustSettingsPolicyName"
/// A `SecTrustSettingsKeyUsage` mask.
public let kSecTrustSettingsKeyUsage = "kSecTrustSettingsKeyUsage"
/// An error status to ignore for this certificate (stored; evaluation does not ignore errors).
public let kSecTrustSettingsAllowedError = "kSecTrustSettingsAllowedError"
/// A `SecTrustSettingsResult` (default `trustRoot`).
public let kSecTrustSettingsResult = "kSecTrustSettingsResult"

/// The certificate's usage constraints in `domain`; `errSecItemNotFound` when it has no settings there.
public func SecTrustSettingsCopyTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain,
    _ trustSettings: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    trustSettings.pointee = nil
    do {
        let constraints = try TrustSettingsStore.settings(for: certRef.data, domain: domain.engine)
        trustSettings.pointee = NSArray(array: constraints.map(apiDictionary))
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// Sets the certificate's trust settings in `domain`: a usage constraints dictionary, an array of them, or `nil`
/// (always trust as a root). `errSecDataNotModifiable` for the system domain, `errSecWrPerm` for the admin domain
/// unless the caller is root, `errSecParam` for a malformed dictionary or `trustRoot` on a certificate that is
/// not self-signed.
public func SecTrustSettingsSetTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain,
    _ trustSettingsDictOrArray: CFTypeRef?
) -> OSStatus {
    var dictionaries: [[String: Any]] = []
    switch trustSettingsDictOrArray {
    case nil: break
    case let one as [String: Any]: dictionaries = [one]
    case let many as [Any]:
        for item in many {
            guard let dictionary = item as? [String: Any] else { return errSecParam }
            dictionaries.append(dictionary)
        }
    default: return errSecParam
    }
    do {
        var constraints: [TrustSettingsConstraint] = []
        for var dictionary in dictionaries {
            if let policy = dictionary[kSecTrustSettingsPolicy] {
                guard let policy = policy as? SecPolicy else { return errSecParam }
                dictionary[kSecTrustSettingsPolicy] = policy.identifier.oidBytes
                dictionary[kSecTrustSettingsPolicyName] = policy.identifier.policyName
            }
            if dictionary[kSecTrustSettingsApplication] != nil { return errSecUnimplemented }
            constraints.append(try TrustSettingsFile.constraint(dictionary))
        }
        try TrustSettingsStore.set(constraints, for: certRef.data, domain: domain.engine)
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// Deletes the certificate's trust settings in `domain`; `errSecItemNotFound` when it has none there.
public func SecTrustSettingsRemoveTrustSettings(_ certRef: SecCertificate, _ domain: SecTrustSettingsDomain) -> OSStatus {
    do {
        try TrustSettingsStore.remove(certRef.data, domain: domain.engine)
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// The certificates that have trust settings in `domain` (for the system domain, the System Roots);
/// `errSecNoTrustSettings` when the domain has none.
public func SecTrustSettingsCopyCertificates(_ domain: SecTrustSettingsDomain, _ certArray: UnsafeMutablePointer<CFArray?>?) -> OSStatus {
    certArray?.pointee = nil
    do {
        let certificates = try TrustSettingsStore.certificates(domain.engine).compactMap(\.0)
        certArray?.pointee = NSArray(array: certificates.map(SecCertificate.init))
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// When the certificate's settings in `domain` last changed; `errSecItemNotFound` when it has none there.
public func SecTrustSettingsCopyModificationDate(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain,
    _ modificationDate: UnsafeMutablePointer<CFDate?>
) -> OSStatus {
    modificationDate.pointee = nil
    do {
        guard let record = try TrustSettingsStore.read(domain.engine).records[certRef.data.sha1Fingerprint] else { return errSecItemNotFound }
        modificationDate.pointee = record.modificationDate as NSDate
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// The domain's settings in Apple's portable form (an XML property list); `errSecNoTrustSettings` when it has none.
public func SecTrustSettingsCreateExternalRepresentation(_ domain: SecTrustSettingsDomain, _ trustSettings: UnsafeMutablePointer<CFData?>) -> OSStatus {
    trustSettings.pointee = nil
    do {
        trustSettings.pointee = try TrustSettingsStore.externalRepresentation(domain.engine) as NSData
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// Replaces the domain's settings with an external representation; `errSecInvalidTrustSettings` when the data is
/// not one, `errSecDataNotModifiable` for the system domain.
public func SecTrustSettingsImportExternalRepresentation(_ domain: SecTrustSettingsDomain, _ trustSettings: CFData) -> OSStatus {
    do {
        try TrustSettingsStore.importExternalRepresentation(trustSettings as Data, domain: domain.engine)
        return errSecSuccess
    } catch {
        return error.status.rawValue
    }
}

/// A stored usage constraint as the API returns it: the policy as a `SecPolicy`, numbers as `NSNumber`.
private func apiDictionary(_ constraint: TrustSettingsConstraint) -> NSDictionary {
    var out = TrustSettingsFile.dictionary(constraint).mapValues { value -> Any in
        if let number = value as? Int { return NSNumber(value: number) }
        return value
    }
    if let bytes = constraint.policy {
        if let identifier = TrustPolicyIdentifier(oidBytes: bytes) {
            out[kSecTrustSettingsPolicy] = SecPolicy(hostname: nil, identifier: identifier)
        } else {
            out[kSecTrustSettingsPolicy] = nil
        }
    }
    return NSDictionary(dictionary: out)
}
#endif
