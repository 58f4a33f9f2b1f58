import Foundation

/// How revocation is checked (Apple's `kSecRevocation…` flags of `SecPolicyCreateRevocation`, same bits).
package struct RevocationOptions: OptionSet, Sendable, Hashable {
    /// The flags' value.
    package let rawValue: UInt
    /// Creates options from Apple's flags.
    package init(rawValue: UInt) { self.rawValue = rawValue }

    /// `kSecRevocationOCSPMethod`.
    package static let ocsp = RevocationOptions(rawValue: 1 << 0)
    /// `kSecRevocationCRLMethod`.
    package static let crl = RevocationOptions(rawValue: 1 << 1)
    /// `kSecRevocationPreferCRL`.
    package static let preferCRL = RevocationOptions(rawValue: 1 << 2)
    /// `kSecRevocationRequirePositiveResponse`: a certificate whose status cannot be learned fails.
    package static let requirePositiveResponse = RevocationOptions(rawValue: 1 << 3)
    /// `kSecRevocationNetworkAccessDisabled`.
    package static let networkAccessDisabled = RevocationOptions(rawValue: 1 << 4)
    /// `kSecRevocationUseAnyAvailableMethod`: OCSP and CRLs.
    package static let useAnyAvailableMethod: RevocationOptions = [.ocsp, .crl]

    /// Whether CRLs are consulted (the CRL method, or no method named).
    var usesCRLs: Bool { contains(.crl) || !contains(.ocsp) }
    /// Whether OCSP is asked for (the OCSP method, or no method named).
    var usesOCSP: Bool { contains(.ocsp) || !contains(.crl) }
}

/// Revocation checking of a validated chain against certificate revocation lists: the user's CRL folder, the
/// administrator's, and any the caller gives. A list counts for a certificate when its issuer's key signed it
/// and it is current at the verify date (thisUpdate ≤ date ≤ nextUpdate); lists that fail either are ignored.
///
/// A certificate no current CRL covers is asked of its issuer's OCSP responder (``OCSPCheck``) when the options
/// ask for OCSP and the network may be used (`SecTrustSetNetworkFetchAllowed`, no
/// `kSecRevocationNetworkAccessDisabled`). A certificate whose status no CRL and no valid OCSP answer gave is
/// reported as "not checked", saying why, and fails only with `kSecRevocationRequirePositiveResponse`
/// (`errSecIncompleteCertRevocationCheck`).
package enum RevocationCheck {
    /// What the check learned.
    package struct Outcome: Sendable, Equatable {
        /// Whether every certificate's status (but the root's) was learned, from a CRL or an OCSP responder.
        package var checked: Bool
        /// One line per certificate whose status is unknown, saying why.
        package var notes: [String]
    }

    /// The CRLs of the user's and the administrator's folders (unreadable or malformed files are skipped).
    package static func storedCRLs(_ location: TrustStoreLocation) -> [CertificateRevocationList] {
        var out: [CertificateRevocationList] = []
        for folder in [location.userCRLs, location.adminCRLs] {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") {
                guard let data = try? FileSystem.read(folder + "/" + name), let lists = try? CertificateRevocationList.read(data) else { continue }
                out += lists
            }
        }
        return out
    }

    /// Checks each certificate of `chain` (leaf first, root last; the root is not checked) against `crls`, then,
    /// when none covers it and the options and `networkFetchAllowed` allow, with its issuer's OCSP responder.
    ///
    /// - Throws: `errSecCertificateRevoked` when a list revokes a certificate; `errSecIncompleteCertRevocationCheck`
    ///   when `requirePositiveResponse` is set and a certificate's status is unknown.
    package static func check(
        _ chain: [CertificateData], crls: [CertificateRevocationList], options: RevocationOptions,
        networkFetchAllowed: Bool, date: Date
    ) throws(KeychainError) -> Outcome {
        var notes: [String] = []
        for index in chain.indices.dropLast() {
            let certificate = chain[index], issuer = chain[index + 1].certificate
            let name = certificate.subjectSummary ?? certificate.sha1Fingerprint
            var covered = false
            if options.usesCRLs {
                for list in crls where list.isSigned(by: issuer) && list.isCurrent(at: date) {
                    covered = true
                    if let when = list.revoked[certificate.certificate.serialNumber] {
                        throw KeychainError(
                            code: .notTrusted, status: .certificateRevoked,
                            message: "The certificate \"\(name)\" was revoked on \(when.formatted(.iso8601)) (a CRL of its issuer lists it). Do not trust it; ask its issuer for a new one.")
                    }
                }
            }
            guard !covered else { continue }
            var unknown: [String] = []
            if options.usesCRLs { unknown.append("no current CRL of its issuer is installed") }
            if options.usesOCSP {
                if networkFetchAllowed && !options.contains(.networkAccessDisabled) {
                    switch OCSPCheck.status(of: chain[index...].map(\.certificate), date: date) {
                    case .good:
                        continue
                    case .revoked(let reason):
                        throw KeychainError(
                            code: .notTrusted, status: .certificateRevoked,
                            message: "The certificate \"\(name)\" was revoked: its issuer's OCSP responder says so (\(reason)). Do not trust it; ask its issuer for a new one.")
                    case .notChecked(let why):
                        unknown.append(why)
                    }
                } else {
                    unknown.append("network access for OCSP is disabled")
                }
            }
            notes.append("Revocation not checked for \"\(name)\": \(unknown.joined(separator: "; ")). Add the issuer's CRL with security add-crl.")
        }
        if options.contains(.requirePositiveResponse), let first = notes.first {
            throw KeychainError(code: .notTrusted, status: .incompleteRevocationCheck, message: first + " A positive revocation response is required.")
        }
        return Outcome(checked: notes.isEmpty, notes: notes)
    }
}
