import AsyncHTTPClient
import Foundation
import NIOCore
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
/// for it. This type sends the request (an HTTP POST, bounded in time and size) and sorts the outcome.
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
    static let maximumAnswer = 64 * 1024
    /// How long one certificate's question may take in all.
    static let timeout: TimeAmount = .seconds(10)

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
    /// Must not be called on a thread of Swift's cooperative pool (it waits for the answer).
    package static func status(of chain: [Certificate], date: Date) -> Status {
        guard let target = chain.first, chain.count >= 2 else { return .notChecked("it is the root") }
        guard let uri = responder(of: target) else { return .notChecked("it names no OCSP responder") }
        guard let url = URL(string: uri), url.scheme == "http" || url.scheme == "https", url.host?.isEmpty == false else {
            return .notChecked("its OCSP responder's address is not an http or https URL")
        }
        let requester = FirstQueryRequester()
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

    /// The HTTP client OCSP questions share.
    static let httpClient = HTTPClient.keychainShared(connectTimeout: .seconds(5), readTimeout: .seconds(10))
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

    var outcome: Outcome? { state.withLock { $0.outcome } }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        let first = state.withLock { state -> Bool in
            defer { state.asked = true }
            return !state.asked
        }
        guard first else { return .nonTerminalError(Declined()) }
        let outcome: Outcome
        let result: OCSPRequesterQueryResult
        do {
            var question = HTTPClientRequest(url: uri)
            question.method = .POST
            question.headers.add(name: "Content-Type", value: "application/ocsp-request")
            question.headers.add(name: "Accept", value: "application/ocsp-response")
            question.body = .bytes(ByteBuffer(bytes: request))
            let answer = try await OCSPCheck.httpClient.execute(question, timeout: OCSPCheck.timeout)
            if answer.status == .ok {
                let body = try await answer.body.collect(upTo: OCSPCheck.maximumAnswer)
                outcome = .answered
                result = .response(Array(body.readableBytesView))
            } else {
                outcome = .failed("answered HTTP \(answer.status.code)")
                result = .nonTerminalError(Declined())
            }
        } catch let error as NIOTooManyBytesError {
            outcome = .failed("answered more than \(OCSPCheck.maximumAnswer / 1024) KiB (\(type(of: error)))")
            result = .nonTerminalError(error)
        } catch {
            outcome = .failed("could not be reached (\(Self.describe(error)))")
            result = .nonTerminalError(error)
        }
        state.withLock { $0.outcome = outcome }
        return result
    }

    /// The transport's error, which names no secret (OCSP carries none).
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as HTTPClientError: String(describing: error)
        case let error as IOError: String(describing: error)
        case is CancellationError: "it took longer than \(OCSPCheck.timeout.nanoseconds / 1_000_000_000) s"
        default: String(describing: type(of: error))
        }
    }
}
