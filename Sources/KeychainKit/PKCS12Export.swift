import Foundation
import KeychainCore

/// An identity to export: a private key and its certificate, with the name the PKCS#12 file gives them.
public struct KeychainIdentityExport: Sendable {
    /// The private key.
    public var key: KeychainKey
    /// The key's certificate.
    public var certificate: KeychainCertificate
    /// The friendly name (usually the item's label).
    public var friendlyName: String?

    /// An identity to export.
    public init(key: KeychainKey, certificate: KeychainCertificate, friendlyName: String?) {
        self.key = key
        self.certificate = certificate
        self.friendlyName = friendlyName
    }
}

extension KeychainKeyAndCertificateFile {
    /// Writes a password-protected PKCS#12 file, as OpenSSL 3 writes one by default (PBKDF2, AES-256-CBC,
    /// HMAC-SHA-256 MAC): the identities, then `certificates` (their chains).
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/param` when a key is not its certificate's or there is
    ///   nothing to write, `KeychainStatus/notAvailable` when the system's libcrypto cannot be loaded.
    public static func makePKCS12(
        _ identities: [KeychainIdentityExport], certificates: [KeychainCertificate],
        password: String
    ) throws(KeychainError) -> Data {
        try PKCS12.make(
            identities: identities.map { PKCS12ExportIdentity(key: $0.key.material, certificate: $0.certificate.parsed, friendlyName: $0.friendlyName) },
            certificates: certificates.map(\.parsed), password: password)
    }
}

extension KeychainCertificate {
    /// The certificates among `pool` that issued this one, nearest first, up to a self-signed root.
    public func issuers(in pool: [KeychainCertificate]) -> [KeychainCertificate] {
        PKCS12.issuers(of: parsed, in: pool.map(\.parsed)).map(KeychainCertificate.init)
    }
}
