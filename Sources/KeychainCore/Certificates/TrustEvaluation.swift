import Foundation
import Synchronization
import SwiftASN1
// SecTrustSetVerifyDate evaluates at a fixed time, which swift-certificates offers as SPI.
@_spi(FixedExpiryValidationTime) import X509

/// Certificate trust (`SecTrustEvaluateWithError`) on swift-certificates' verifier: a chain from the leaf through
/// the given intermediates to a trusted root, valid at the verify date, and for SSL the server's name.
///
/// The trusted roots are the system's, read as Apple's System Roots keychain is: the Debian CA bundle
/// (`/etc/ssl/certs/ca-certificates.crt`, or the PEM file `KEYCHAIN_SYSTEM_ROOTS` names), plus the anchors the
/// caller set; with "anchors only", just those.
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

        package init(leaf: CertificateData, intermediates: [CertificateData] = [], anchors: [CertificateData] = [],
                     anchorsOnly: Bool = false, hostname: String? = nil, date: Date? = nil) {
            self.leaf = leaf
            self.intermediates = intermediates
            self.anchors = anchors
            self.anchorsOnly = anchorsOnly
            self.hostname = hostname
            self.date = date
        }
    }

    /// The default bundle of system roots on Debian and Ubuntu.
    package static let debianBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// The validated chain (leaf first), or `errSecNotTrusted`-style failure with what the verifier said.
    package static func evaluate(_ request: Request) throws(KeychainError) -> [CertificateData] {
        var roots = request.anchors.map(\.certificate)
        if !request.anchorsOnly { roots += systemRoots() }
        let store = CertificateStore(roots)
        let intermediates = CertificateStore(request.intermediates.map(\.certificate))
        let rfc5280 = request.date.map { RFC5280Policy(fixedExpiryValidationTime: $0) } ?? RFC5280Policy()
        let result = blocking {
            if let hostname = request.hostname {
                var verifier = Verifier(rootCertificates: store) {
                    rfc5280
                    ServerIdentityPolicy(serverHostname: hostname, serverIP: nil)
                }
                return await verifier.validate(leaf: request.leaf.certificate, intermediates: intermediates)
            }
            var verifier = Verifier(rootCertificates: store) { rfc5280 }
            return await verifier.validate(leaf: request.leaf.certificate, intermediates: intermediates)
        }
        switch result {
        case .validCertificate(let chain):
            return chain.compactMap { try? CertificateData(der: Data(derBytes($0))) }
        case .couldNotValidate(let failures):
            let reason = failures.first.map { "\($0.policyFailureReason)" } ?? "no chain to a trusted root was found"
            throw KeychainError(code: .notTrusted, message: "The certificate is not trusted: \(reason). Check the chain, the trusted roots and the date.")
        }
    }

    /// The system roots, parsed once per bundle path.
    static func systemRoots() -> [Certificate] {
        let named = getenv("KEYCHAIN_SYSTEM_ROOTS").map { String(cString: $0) }
        let path = named.flatMap { $0.isEmpty ? nil : $0 } ?? debianBundle
        if let cached = rootCache.withLock({ $0[path] }) { return cached }
        var roots: [Certificate] = []
        if let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
           let documents = try? PEMDocument.parseMultiple(pemString: text) {
            roots = documents.compactMap { try? Certificate(pemDocument: $0) }
        }
        rootCache.withLock { $0[path] = roots }
        return roots
    }

    private static let rootCache = Mutex<[String: [Certificate]]>([:])

    private static func derBytes(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate)) != nil else { return [] }
        return serializer.serializedBytes
    }

    /// Runs the verifier (async, and CPU-only) to completion for a synchronous API, on a task of its own.
    private static func blocking(_ body: @escaping @Sendable () async -> CertificateValidationResult) -> CertificateValidationResult {
        let box = Mutex<CertificateValidationResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result = await body()
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 } ?? .couldNotValidate([])
    }
}
