#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services identity and PKCS#12 functions, with Apple's signatures (SecIdentity.h, SecImportExport.h).
// Reading PKCS#12 is the engine's (`PKCS12`); this file only declares the API.

/// A certificate together with its private key.
public final class SecIdentity: @unchecked Sendable, CustomStringConvertible {
    let certificate: SecCertificate
    let privateKey: SecKey

    init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The certificate's subject summary; never the key.
    public var description: String { "<SecIdentity \(certificate.description)>" }
}

/// Identities compare as CoreFoundation compares them (`CFEqual`): equal when certificate and key are.
extension SecIdentity: Hashable {
    /// Whether both pair the same certificate with the same key.
    public static func == (left: SecIdentity, right: SecIdentity) -> Bool {
        left === right || (left.certificate == right.certificate && left.privateKey == right.privateKey)
    }

    /// Hashes the certificate.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(certificate)
    }
}

/// The type identifier of identities, to compare with `CFGetTypeID` of an object a call returned.
public func SecIdentityGetTypeID() -> CFTypeID { CoreFoundationTypeID.secIdentity }

/// The identity's certificate.
public func SecIdentityCopyCertificate(_ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The identity's private key.
public func SecIdentityCopyPrivateKey(_ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

/// The password of a PKCS#12 file (`SecPKCS12Import`'s options).
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = "passphrase"
/// An imported item's label: the file's friendly name.
nonisolated(unsafe) public let kSecImportItemLabel: CFString = "label"
/// An imported item's key ID: the private key's application label (the public key's SHA-1).
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = "keyid"
/// An imported item's certificate chain: its certificate, then the file's other certificates.
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = "chain"
/// An imported item's identity (certificate and private key).
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = "identity"

/// Opens a password-protected PKCS#12 file (as `openssl pkcs12 -export` writes it: PBES2/AES, or the legacy
/// 3DES/RC2 profile) and returns its identity, as iOS does: nothing is added to the keychain; add the identity
/// with `SecItemAdd` and `kSecValueRef`.
///
/// - Parameters:
///   - pkcs12_data: The file's bytes.
///   - options: `kSecImportExportPassphrase`.
///   - items: On success, an array with one dictionary: `kSecImportItemIdentity`, `kSecImportItemCertChain`,
///     `kSecImportItemKeyID` and `kSecImportItemLabel`.
/// - Returns: `errSecSuccess`, `errSecAuthFailed` for a wrong password, `errSecDecode` for data that is not
///   PKCS#12 (or truncated, or encrypted in a way not supported), `errSecParam` for a missing passphrase.
public func SecPKCS12Import(_ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    SecKeyBackend.importPKCS12(pkcs12_data, options, items)
}
#endif
