#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services certificate functions, with Apple's signatures (SecCertificate.h). Parsing is the engine's
// (`CertificateData`, on swift-certificates); this file only declares the API.

/// An X.509 certificate.
public final class SecCertificate: @unchecked Sendable, CustomStringConvertible {
    let data: CertificateData

    init(_ data: CertificateData) { self.data = data }

    /// The subject summary, as Apple's description shows it.
    public var description: String { "<cert(\(data.subjectSummary ?? "?"))>" }
}

/// Certificates compare as CoreFoundation compares them (`CFEqual`): equal when their DER encodings are.
extension SecCertificate: Hashable {
    /// Whether both are the same certificate (the same DER bytes).
    public static func == (left: SecCertificate, right: SecCertificate) -> Bool {
        left === right || left.data.der == right.data.der
    }

    /// Hashes the DER encoding.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(data.der)
    }
}

/// The type identifier of certificates, to compare with `CFGetTypeID` of an object a call returned.
public func SecCertificateGetTypeID() -> CFTypeID { CoreFoundationTypeID.secCertificate }

/// Creates a certificate from its DER encoding; `nil` when the data is not one certificate.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    (try? CertificateData(der: data as Data)).map(SecCertificate.init)
}

/// The certificate's DER encoding.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    NSData(data: certificate.data.der)
}

/// A human-readable summary: the subject's common name, else its email address or organization.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.data.subjectSummary.map(NSString.init(string:))
}

/// The certificate's public key (EC P-256/P-384/P-521 or RSA); `nil` for other kinds.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    certificate.data.publicKey.map { SecKey($0) }
}

/// The certificate's public key: iOS's older name of `SecCertificateCopyKey` (Apple deprecated it in iOS 12).
public func SecCertificateCopyPublicKey(_ certificate: SecCertificate) -> SecKey? {
    SecCertificateCopyKey(certificate)
}

/// The certificate's public key, in macOS's older form: `errSecUnsupportedFormat` (-25256) and no key for a key of
/// another kind than EC P-256/P-384/P-521 or RSA.
public func SecCertificateCopyPublicKey(_ certificate: SecCertificate, _ key: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    key.pointee = SecCertificateCopyKey(certificate)
    return key.pointee == nil ? errSecUnsupportedFormat : errSecSuccess
}

/// The subject's common name (the last one when there are several).
public func SecCertificateCopyCommonName(_ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>) -> OSStatus {
    commonName.pointee = certificate.data.commonNames.last.map(NSString.init(string:))
    return errSecSuccess
}

/// The subject's email addresses, from its name and its subject alternative names.
public func SecCertificateCopyEmailAddresses(_ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    emailAddresses.pointee = NSArray(array: certificate.data.emailAddresses.map(NSString.init(string:)))
    return errSecSuccess
}

/// The serial number's content bytes.
public func SecCertificateCopySerialNumberData(_ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    error?.pointee = nil
    return NSData(data: certificate.data.serialNumber)
}

/// The issuer, normalized as the keychain compares names, as a DER SEQUENCE.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: CertificateData.normalizedSequence(certificate.data.certificate.issuer))
}

/// The subject, normalized as the keychain compares names, as a DER SEQUENCE.
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: CertificateData.normalizedSequence(certificate.data.certificate.subject))
}
#endif
