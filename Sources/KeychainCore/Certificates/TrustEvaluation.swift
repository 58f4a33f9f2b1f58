import Foundation
import SwiftASN1
// SecTrustSetVerifyDate evaluates at a fixed time, which swift-certificates offers as SPI.
@_spi(FixedExpiryValidationTime) import X509

/// Certificate trust (`SecTrustEvaluateWithError`) on swift-certificates' verifier: a chain from the leaf through
/// the given intermediates to a trusted root, valid at the verify date, and for SSL the server's name; then the
/// trust settings of every certificate in the chain, and revocation when a revocation policy asks for it.
///
/// The trusted roots are, as on macOS: the System Roots (``SystemRoots``: the distribution's trust store), the
/// anchors the caller set (with "anchors only", just those), and the certificates of the chain that the user's or
/// the administrator's trust settings make a root (`trustRoot`, `trustAsRoot`) for the policy. A certificate of
/// the chain whose settings say `deny` for the policy fails the evaluation with `errSecTrustSettingDeny`, even
/// when the system trusts it; the user's settings come before the administrator's, which come before the system's.
package enum TrustEvaluation {
    /// What to check.
    package struct Request: Sendable {
        package var leaf: CertificateData
        package var intermediates: [CertificateData]
        package var anchors: [CertificateData]
        package var anchorsOnly: Bool
        /// `SecPolicyCreateSSL(true, hostname)`: the leaf must name this host.
        package var hostname: String?
        /// `SecTrustSetVerifyDate`; nil: the time of evaluation.
        package var date: Date?
        /// The policy trust settings are matched against (SSL when a host name is given, else basic X.509).
        package var policy: TrustPolicyIdentifier
        /// `SecPolicyCreateRevocation`'s flags, when a revocation policy is among the trust's policies.
        package var revocation: RevocationOptions?
        /// `SecTrustSetNetworkFetchAllowed`.
        package var networkFetchAllowed: Bool
        /// CRLs to use beside the user's and the administrator's folders (`security verify-cert --crl`).
        package var crls: [CertificateRevocationList]
        /// Where the System Roots, trust settings and CRLs are; nil: where the environment says.
        package var location: TrustStoreLocation?

        package init(
            leaf: CertificateData, intermediates: [CertificateData] = [], anchors: [CertificateData] = [],
            anchorsOnly: Bool = false, hostname: String? = nil, date: Date? = nil, policy: TrustPolicyIdentifier? = nil,
            revocation: RevocationOptions? = nil, networkFetchAllowed: Bool = true, crls: [CertificateRevocationList] = [],
            location: TrustStoreLocation? = nil
        ) {
            self.leaf = leaf
            self.intermediates = intermediates
            self.anchors = anchors
            self.anchorsOnly = anchorsOnly
            self.hostname = hostname
            self.date = date
            self.policy = policy ?? (hostname == nil ? .basic : .ssl)
            self.revocation = revocation
            self.networkFetchAllowed = networkFetchAllowed
            self.crls = crls
            self.location = location
        }
    }

    /// What an evaluation found.
    package struct Outcome: Sendable {
        /// The validated chain, leaf first.
        package var chain: [CertificateData]
        /// What revocation checking learned (nil: no revocation policy).
        package var revocation: RevocationCheck.Outcome?
    }

    /// The validated chain (leaf first), or `errSecNotTrusted`-style failure with what the verifier said.
    package static func evaluate(_ request: Request) throws(KeychainError) -> [CertificateData] {
        try evaluateInDetail(request).chain
    }

    /// Evaluates the request: path validation, trust settings, then revocation.
    ///
    /// - Throws: `errSecNotTrusted` (no valid chain to a trusted root), `errSecTrustSettingDeny` (a certificate of
    ///   the chain is denied), `errSecCertificateRevoked`, `errSecIncompleteCertRevocationCheck`, or `errSecIO` when
    ///   the trust settings cannot be read.
    package static func evaluateInDetail(_ request: Request) throws(KeychainError) -> Outcome {
        let location = request.location ?? TrustStoreLocation.fromEnvironment()
        let system = request.anchorsOnly ? nil : try SystemRoots.snapshot(bundle: location.systemRootsBundle, folder: location.systemRootsFolder)
        var domains: [TrustSettingsDomain: TrustSettingsFile] = [:]
        for domain in [TrustSettingsDomain.user, .admin] {
            domains[domain] = try TrustSettingsStore.read(domain, location: location)
        }
        func decision(_ certificate: CertificateData) -> TrustSettingsResult? {
            TrustSettingsStore.decision(for: certificate, policy: request.policy, hostname: request.hostname, domains: domains, systemRoots: system)
        }
        func denied(_ certificate: CertificateData) -> KeychainError {
            KeychainError(
                code: .notTrusted, status: .trustSettingDeny,
                message:
                    "The certificate \"\(certificate.subjectSummary ?? certificate.sha1Fingerprint)\" is denied by its trust settings for this policy. Remove the setting (security remove-trusted-cert) if it should be trusted."
            )
        }
        if decision(request.leaf) == .deny { throw denied(request.leaf) }

        var roots = request.anchors.map(\.certificate) + (system?.certificates.map(\.certificate) ?? [])
        // Certificates the chain may reach: the caller's, and those the user's and the administrator's settings carry.
        let settled = domains.values.flatMap { $0.records.values.compactMap { $0.certificate.flatMap { try? CertificateData(der: $0) } } }
        for candidate in [request.leaf] + request.intermediates + request.anchors + settled {
            if let result = decision(candidate), result == .trustRoot || result == .trustAsRoot { roots.append(candidate.certificate) }
        }
        let intermediates = CertificateStore(request.intermediates.map(\.certificate))
        let rfc5280 = request.date.map { RFC5280Policy(fixedExpiryValidationTime: $0) } ?? RFC5280Policy()
        let hostname = request.policy == .ssl ? request.hostname : nil
        func validate(_ roots: [Certificate]) -> CertificateValidationResult {
            let store = CertificateStore(roots)
            return blocking {
                if let hostname {
                    var verifier = Verifier(rootCertificates: store) {
                        rfc5280
                        ServerIdentityPolicy(serverHostname: hostname, serverIP: nil)
                    }
                    return await verifier.validate(leaf: request.leaf.certificate, intermediates: intermediates)
                }
                var verifier = Verifier(rootCertificates: store) { rfc5280 }
                return await verifier.validate(leaf: request.leaf.certificate, intermediates: intermediates)
            }
        }
        let chain: [CertificateData]
        switch validate(roots) {
        case .validCertificate(let validated):
            chain = validated.compactMap { try? CertificateData(der: Data(derBytes($0))) }
        case .couldNotValidate(let failures):
            // As on macOS, a chain that ends at a denied certificate is denied, not merely untrusted.
            let deniedOnes = ([request.leaf] + request.intermediates + request.anchors + settled).filter { decision($0) == .deny }
            if !deniedOnes.isEmpty, case .validCertificate(let validated) = validate(roots + deniedOnes.map(\.certificate)),
                let bad = validated.compactMap({ try? CertificateData(der: Data(derBytes($0))) }).first(where: { decision($0) == .deny })
            {
                throw denied(bad)
            }
            let reason = failures.first.map { "\($0.policyFailureReason)" } ?? "no chain to a trusted root was found"
            throw KeychainError(code: .notTrusted, message: "The certificate is not trusted: \(reason). Check the chain, the trusted roots and the date.")
        }
        if let bad = chain.first(where: { decision($0) == .deny }) { throw denied(bad) }
        guard let options = request.revocation else { return Outcome(chain: chain, revocation: nil) }
        let crls = request.crls + RevocationCheck.storedCRLs(location)
        let revocation = try RevocationCheck.check(
            chain, crls: crls, options: options, networkFetchAllowed: request.networkFetchAllowed,
            date: request.date ?? Date())
        return Outcome(chain: chain, revocation: revocation)
    }

    private static func derBytes(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate)) != nil else { return [] }
        return serializer.serializedBytes
    }

    /// Runs the verifier (async, and CPU-only) to completion for a synchronous API, on a task of its own
    /// (``waitBlocking(_:)``: safe on any thread).
    private static func blocking(_ body: @escaping @Sendable () async -> CertificateValidationResult) -> CertificateValidationResult {
        (try? waitBlocking { () async throws(KeychainError) -> CertificateValidationResult in await body() }) ?? .couldNotValidate([])
    }
}
