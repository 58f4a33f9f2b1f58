#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services export, with Apple's signatures (SecImportExport.h). Writing PKCS#12 is the engine's
// (`PKCS12.make`); this file only declares the API.

/// The format of exported items (`SecExternalFormat`).
public enum SecExternalFormat: UInt32, Sendable {
    /// Let `SecItemExport` choose: PKCS#12 for identities, X.509 for one certificate, a PEM sequence for several,
    /// OpenSSL for a key.
    case formatUnknown = 0
    /// A key in OpenSSL's format: a public key's SubjectPublicKeyInfo.
    case formatOpenSSL = 1
    /// An SSH1 key (not supported).
    case formatSSH = 2
    /// A BSAFE key (not supported).
    case formatBSAFE = 3
    /// A raw symmetric key (not supported).
    case formatRawKey = 4
    /// A wrapped PKCS#8 private key (not supported).
    case formatWrappedPKCS8 = 5
    /// A wrapped OpenSSL private key (not supported).
    case formatWrappedOpenSSL = 6
    /// A wrapped SSH1 private key (not supported).
    case formatWrappedSSH = 7
    /// A wrapped LSH private key (not supported).
    case formatWrappedLSH = 8
    /// One DER certificate.
    case formatX509Cert = 9
    /// PEM certificates, one after the other.
    case formatPEMSequence = 10
    /// A PKCS#7 certificate bundle (not supported).
    case formatPKCS7 = 11
    /// A password-protected PKCS#12 file: identities (certificate and private key) and certificates.
    case formatPKCS12 = 12
    /// A Netscape certificate sequence (not supported).
    case formatNetscapeCertSequence = 13
    /// An SSH2 key (not supported).
    case formatSSHv2 = 14
}

/// Options of `SecItemExport` (`SecItemImportExportFlags`).
public struct SecItemImportExportFlags: OptionSet, Sendable {
    /// The option bits.
    public let rawValue: UInt32
    /// An option set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// PEM-encode the output (`kSecItemPemArmour`): certificates and public keys.
    public static let pemArmour = SecItemImportExportFlags(rawValue: 1)
}

/// Options of the key parameters (`SecKeyImportExportFlags`).
public struct SecKeyImportExportFlags: OptionSet, Sendable {
    /// The option bits.
    public let rawValue: UInt32
    /// An option set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Import one key only (`kSecKeyImportOnlyOne`).
    public static let importOnlyOne = SecKeyImportExportFlags(rawValue: 1)
    /// Ask for the passphrase in a secure dialog (`kSecKeySecurePassphrase`; not supported: give `passphrase`).
    public static let securePassphrase = SecKeyImportExportFlags(rawValue: 2)
    /// Imported keys get no access control (`kSecKeyNoAccessControl`).
    public static let noAccessControl = SecKeyImportExportFlags(rawValue: 4)
}

/// The version `SecItemImportExportKeyParameters.version` must hold.
public let SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION: Int32 = 0

/// How keys are protected in an export (`SecItemImportExportKeyParameters`).
public struct SecItemImportExportKeyParameters {
    /// `SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION`.
    public var version: UInt32
    /// Options.
    public var flags: SecKeyImportExportFlags
    /// The passphrase: a `CFString`, or a `CFData` of its UTF-8 bytes. PKCS#12 needs one.
    public var passphrase: Unmanaged<CFTypeRef>?
    /// The title of a passphrase dialog (not used: there is none).
    public var alertTitle: Unmanaged<CFString>?
    /// The prompt of a passphrase dialog (not used: there is none).
    public var alertPrompt: Unmanaged<CFString>?
    /// The access of imported keys (`SecAccess` on macOS; not used).
    public var accessRef: Unmanaged<SecAccess>?
    /// The usage of imported keys (not used by export).
    public var keyUsage: Unmanaged<CFArray>?
    /// The attributes of imported keys (not used by export).
    public var keyAttributes: Unmanaged<CFArray>?

    /// Parameters with every field zero or nil.
    public init() {
        self.init(version: 0, flags: [], passphrase: nil, alertTitle: nil, alertPrompt: nil, accessRef: nil, keyUsage: nil, keyAttributes: nil)
    }

    /// Parameters with every field given, as Swift imports Apple's C structure.
    public init(
        version: UInt32, flags: SecKeyImportExportFlags, passphrase: Unmanaged<CFTypeRef>?, alertTitle: Unmanaged<CFString>?,
        alertPrompt: Unmanaged<CFString>?, accessRef: Unmanaged<SecAccess>?, keyUsage: Unmanaged<CFArray>?,
        keyAttributes: Unmanaged<CFArray>?
    ) {
        self.version = version
        self.flags = flags
        self.passphrase = passphrase
        self.alertTitle = alertTitle
        self.alertPrompt = alertPrompt
        self.accessRef = accessRef
        self.keyUsage = keyUsage
        self.keyAttributes = keyAttributes
    }
}

/// Exports certificates, keys and identities.
///
/// - Parameters:
///   - secItemOrArray: A `SecIdentity`, `SecCertificate` or `SecKey`, or an array of them.
///   - outputFormat: `.formatPKCS12` (identities with their private keys, and certificates, sealed under
///     `keyParams`' passphrase as OpenSSL 3 does: PBKDF2, AES-256-CBC, HMAC-SHA-256), `.formatX509Cert` (one
///     certificate, DER), `.formatPEMSequence` (certificates, PEM), `.formatOpenSSL` (a public key,
///     SubjectPublicKeyInfo), or `.formatUnknown` to choose by the items.
///   - flags: `.pemArmour` for PEM output of certificates and public keys.
///   - keyParams: For PKCS#12, the passphrase.
///   - exportedData: On success, the exported bytes.
/// - Returns: `errSecSuccess`; `errSecPassphraseRequired` for PKCS#12 without a passphrase; `errSecParam` for items
///   that are not certificates, keys or identities, or a format that does not hold them;
///   `errSecUnsupportedFormat` for a format not written here; `errSecUnimplemented` for a private key that never
///   leaves the keychain (a token key) or a private key outside an identity.
public func SecItemExport(
    _ secItemOrArray: CFTypeRef, _ outputFormat: SecExternalFormat, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecItemImportExportKeyParameters>?, _ exportedData: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    SecImportExportBackend.export(secItemOrArray, outputFormat, flags, keyParams?.pointee, exportedData)
}
#endif
