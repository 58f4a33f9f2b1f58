import Foundation
import KeychainCore
#if Network
// OCSP questions over HTTP, when the package is built with its Network trait (else revocation is left unchecked
// wherever a responder would be asked).
import KeychainNetwork
#endif

/// How `KeychainCertificate/verify(intermediates:anchors:anchorsOnly:hostname:at:revocation:crls:)` checks
/// revocation (`security verify-cert -R`).
public struct KeychainRevocationOptions: OptionSet, Sendable {
    /// Apple's `kSecRevocation…` bits.
    public let rawValue: UInt
    /// Options from Apple's bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// OCSP: the certificate's responder is asked (unless ``networkAccessDisabled``) when no current CRL covers it.
    public static let ocsp = KeychainRevocationOptions(rawValue: RevocationOptions.ocsp.rawValue)
    /// Certificate revocation lists.
    public static let crl = KeychainRevocationOptions(rawValue: RevocationOptions.crl.rawValue)
    /// A certificate whose status cannot be learned fails.
    public static let requirePositiveResponse = KeychainRevocationOptions(rawValue: RevocationOptions.requirePositiveResponse.rawValue)
    /// No network access.
    public static let networkAccessDisabled = KeychainRevocationOptions(rawValue: RevocationOptions.networkAccessDisabled.rawValue)
}

/// What a verification with revocation found.
public struct KeychainCertificateVerification: Sendable {
    /// The validated chain, leaf first.
    public var chain: [KeychainCertificate]
    /// Whether every certificate's revocation status was learned.
    public var revocationChecked: Bool
    /// One line per certificate whose revocation status is unknown, saying why.
    public var revocationNotes: [String]
}

extension KeychainCertificate {
    /// Verifies like ``verify(intermediates:anchors:anchorsOnly:hostname:at:)`` (trust settings included), then
    /// checks revocation with CRLs (the user's and the administrator's CRL folders plus `crls`, PEM or DER files'
    /// contents) and, with ``KeychainRevocationOptions/ocsp``, the OCSP responder each certificate names.
    ///
    /// - Throws: `KeychainError`: `errSecNotTrusted`, `errSecTrustSettingDeny`, `errSecCertificateRevoked`,
    ///   `errSecIncompleteCertRevocationCheck`, or `errSecUnknownFormat` when one of `crls` is not a CRL.
    public func verify(
        intermediates: [KeychainCertificate] = [], anchors: [KeychainCertificate] = [], anchorsOnly: Bool = false,
        hostname: String? = nil, at date: Date? = nil, revocation: KeychainRevocationOptions?,
        crls: [Data] = []
    ) throws(KeychainError) -> KeychainCertificateVerification {
        var lists: [CertificateRevocationList] = []
        for data in crls { lists += try CertificateRevocationList.read(data) }
        #if Network
        if revocation != nil { HTTPOCSPTransport.install() }
        #endif
        let outcome = try TrustEvaluation.evaluateInDetail(
            .init(
                leaf: parsed, intermediates: intermediates.map(\.parsed), anchors: anchors.map(\.parsed), anchorsOnly: anchorsOnly,
                hostname: hostname, date: date, revocation: revocation.map { RevocationOptions(rawValue: $0.rawValue) }, crls: lists))
        return KeychainCertificateVerification(
            chain: outcome.chain.map(KeychainCertificate.init), revocationChecked: outcome.revocation?.checked ?? false,
            revocationNotes: outcome.revocation?.notes ?? [])
    }
}
