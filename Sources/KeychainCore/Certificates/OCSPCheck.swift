import Foundation
import SwiftASN1
import Synchronization
// SecTrustSetVerifyDate judges an answer's freshness at a fixed time, which swift-certificates offers as SPI.
@_spi(FixedExpiryValidationTime) import X509

/// One certificate's revocation status asked of its issuer's OCSP responder (RFC 6960), the responder the
/// certificate names in its Authority Information Access extension.
///
/// swift-certificates' `OCSPVerifierPolicy` builds the request (SHA-1 certificate ID and a nonce) and judges the
/// answer: signed by the issuer or by a responder the issuer delegated to (OCSP signing), for this certificate,
/// current at the verify date (`thisUpdate` ≤ date ≤ `nextUpdate`), the nonce echoed if any. An answer that fails
/// any of these counts for nothing: a responder that is not the issuer's can neither revoke a certificate nor vouch
/// for it. This type has the request sent (an HTTP POST, bounded in time and size, by the process's
/// ``OCSPTransport``) and sorts the outcome.
package enum OCSPCheck {
    /// What the responder said, as far as it counts.
    package enum Status: Sendable, Equatable {
        /// A valid answer: not revoked.
        case good
        /// A valid answer: revoked (the library's words on the reason).
        case revoked(String)
        /// No valid answer; why.
        case notChecked(String)
    }

    /// The longest answer read (a responder's answer for one certificate is a few kilobytes).
    package static let maximumAnswer = 64 * 1024
    /// How long one certificate's question may take in all.
    package static let timeout: Duration = .seconds(10)

    private static let transport = Mutex<(any OCSPTransport)?>(nil)

    /// Makes `transport` the way this process sends OCSP questions (the first registration stays). The programs
    /// built with the package's `Network` trait register KeychainNetwork's HTTP client when they start; without one,
    /// revocation is left unchecked wherever OCSP would be asked.
    package static func register(_ transport: any OCSPTransport) {
        Self.transport.withLock { if $0 == nil { $0 = transport } }
    }

    /// The responder's address `certificate` names, if any.
    static func responder(of certificate: Certificate) -> String? {
        guard let access = try? certificate.extensions.authorityInformationAccess else { return nil }
        for description in access where description.method == .ocspServer {
            if case .uniformResourceIdentifier(let uri) = description.location { return uri }
        }
        return nil
    }

    /// Asks the responder of `chain[0]` about it; `chain` runs on to the trusted root, each certificate signed by
    /// the next (a chain the verifier already validated).
    ///
    /// Waits for the answer (``waitBlocking(_:)``).
    package static func status(of chain: [Certificate], date: Date) -> Status {
        guard let target = chain.first, chain.count >= 2 else { return .notChecked("it is the root") }
        guard let uri = responder(of: target) else { return .notChecked("it names no OCSP responder") }
        guard let url = URL(string: uri), url.scheme == "http" || url.scheme == "https", url.host?.isEmpty == false else {
            return .notChecked("its OCSP responder's address is not an http or https URL")
        }
        guard let transport = transport.withLock({ $0 }) else {
            return .notChecked("this program cannot ask OCSP responders (it was built without the package's Network trait)")
        }
        let requester = FirstQueryRequester(transport: transport)
        let roots = CertificateStore([chain[chain.count - 1]])
        let intermediates = CertificateStore(Array(chain.dropFirst().dropLast()))
        let result = try? waitBlocking { () async throws(KeychainError) -> CertificateValidationResult in
            var verifier = Verifier(rootCertificates: roots) {
                ValidatedBefore(chain: chain)
                OCSPVerifierPolicy(failureMode: .hard, requester: requester, fixedExpiryValidationTime: date)
            }
            return await verifier.validate(leaf: target, intermediates: intermediates)
        }
        let asked = requester.outcome
        switch result {
        case .validCertificate:
            switch asked {
            case .answered: return .good
            case .failed(let why): return .notChecked("its OCSP responder at \(uri) \(why)")
            case nil: return .notChecked("its OCSP responder was not asked")
            }
        case .couldNotValidate(let failures):
            let reasons = failures.map { "\($0.policyFailureReason)" }
            // The policy reaches the certificate's status only after the answer's signature, freshness and nonce
            // passed: a revocation is reported only then.
            let marker = "revoked through OCSP"
            if case .answered = asked, let revoked = reasons.first(where: { $0.hasPrefix(marker) }) {
                // "revoked through OCSP, reason: keyCompromise", or "…, reason: nil" when the answer gives none.
                let detail = revoked.dropFirst(marker.count).replacingOccurrences(of: ", reason: nil", with: "")
                    .replacingOccurrences(of: ", reason: ", with: "")
                return .revoked(detail.isEmpty ? "no reason given" : "reason: \(detail.prefix(100))")
            }
            let reason = reasons.first.map { String($0.prefix(300)) } ?? "the chain to the root was not rebuilt"
            return .notChecked("the answer of its OCSP responder at \(uri) does not count (\(reason))")
        case nil:
            return .notChecked("the question to its OCSP responder at \(uri) ended without an answer")
        }
    }
}

/// How OCSP questions reach their responders: an HTTP POST of the DER request, bounded in time and size. The library
/// has no network client of its own; KeychainNetwork provides this over AsyncHTTPClient (``OCSPCheck/register(_:)``).
package protocol OCSPTransport: Sendable {
    /// Posts `request` to `uri` (`Content-Type: application/ocsp-request`) and reads the answer's body.
    /// - Parameters:
    ///   - request: The DER-encoded OCSP request.
    ///   - uri: The responder's http or https address, as the certificate names it (no redirect is followed).
    ///   - maximumAnswer: The most bytes of answer to read; a longer one is a failure.
    ///   - timeout: How long the whole exchange may take.
    /// - Returns: The body of an HTTP 200 answer, or why there is none, in words that name no secret.
    func post(_ request: [UInt8], to uri: String, maximumAnswer: Int, timeout: Duration) async -> OCSPTransportOutcome
}

/// What became of one OCSP question's HTTP exchange.
package enum OCSPTransportOutcome: Sendable {
    /// The responder answered HTTP 200 with these bytes.
    case answer([UInt8])
    /// No answer to judge: "answered HTTP 500", "could not be reached (…)".
    case failed(String)
}

/// The chain was validated (with every policy its critical extensions call for) before revocation is checked: this
/// claims those extensions so that the verifier running the OCSP policy alone does not refuse the chain for them.
private struct ValidatedBefore: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier]

    init(chain: [Certificate]) {
        verifyingCriticalExtensions = Array(Set(chain.flatMap { $0.extensions.filter(\.critical).map(\.oid) }))
    }

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult { .meetsPolicy }
}

/// Sends the policy's first question (the one about the chain's first certificate) and keeps what came of it; any
/// later question (about the rest of the chain, checked separately) is declined, which the policy skips.
private final class FirstQueryRequester: OCSPRequester {
    enum Outcome: Sendable {
        case answered
        case failed(String)
    }

    private struct Declined: Error {}

    private let state = Mutex<(asked: Bool, outcome: Outcome?)>((false, nil))
    private let transport: any OCSPTransport

    init(transport: any OCSPTransport) {
        self.transport = transport
    }

    var outcome: Outcome? { state.withLock { $0.outcome } }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        let first = state.withLock { state -> Bool in
            defer { state.asked = true }
            return !state.asked
        }
        guard first else { return .nonTerminalError(Declined()) }
        let outcome: Outcome
        let result: OCSPRequesterQueryResult
        switch await transport.post(request, to: uri, maximumAnswer: OCSPCheck.maximumAnswer, timeout: OCSPCheck.timeout) {
        case .answer(let body):
            outcome = .answered
            result = .response(body)
        case .failed(let why):
            outcome = .failed(why)
            result = .nonTerminalError(Declined())
        }
        state.withLock { $0.outcome = outcome }
        return result
    }
}
