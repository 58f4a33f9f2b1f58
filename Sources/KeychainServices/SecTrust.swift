#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore
#if Network
// OCSP questions over HTTP, when the package is built with its Network trait (else revocation is left unchecked
// wherever a responder would be asked).
import KeychainNetwork
#endif

// Keychain Services trust functions, with Apple's signatures (SecPolicy.h, SecTrust.h). Evaluation is the
// engine's (`TrustEvaluation`, on swift-certificates' verifier); this file only declares the API.

/// What a trust evaluation checks: a chain to a trusted root (basic X.509), for SSL the server's name, and with a
/// revocation policy (`SecPolicyCreateRevocation`) the certificates' revocation status.
public final class SecPolicy: @unchecked Sendable {
    /// The server name an SSL policy requires, when it requires one.
    let hostname: String?
    /// The policy's OID (basic X.509, SSL, revocation, …), which trust settings name.
    let identifier: TrustPolicyIdentifier
    /// A revocation policy's flags.
    let revocation: RevocationOptions?

    init(hostname: String?, identifier: TrustPolicyIdentifier? = nil, revocation: RevocationOptions? = nil) {
        self.hostname = hostname
        self.identifier = identifier ?? (hostname == nil ? .basic : .ssl)
        self.revocation = revocation
    }
}

/// A certificate chain to evaluate against policies, trusted roots and a date.
public final class SecTrust: @unchecked Sendable {
    let certificates: [SecCertificate]
    var policies: [SecPolicy]
    var networkFetchAllowed = true
    var revocationChecked = false
    var anchors: [SecCertificate] = []
    var anchorsOnly = false
    var verifyDate: Date?
    var chain: [SecCertificate] = []

    init(certificates: [SecCertificate], policies: [SecPolicy]) {
        self.certificates = certificates
        self.policies = policies
    }
}

/// Policies compare as CoreFoundation compares them (`CFEqual`): equal when they check the same things.
extension SecPolicy: Hashable {
    /// Whether both are the same policy, for the same server name and revocation options.
    public static func == (left: SecPolicy, right: SecPolicy) -> Bool {
        left === right || (left.identifier == right.identifier && left.hostname == right.hostname && left.revocation == right.revocation)
    }

    /// Hashes what the policy checks.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(identifier)
        hasher.combine(hostname)
        hasher.combine(revocation)
    }
}

/// A trust object is equal only to itself: it is an evaluation under way, whose settings change.
extension SecTrust: Hashable {
    /// Whether both are the same object.
    public static func == (left: SecTrust, right: SecTrust) -> Bool { left === right }

    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The type identifier of policies, to compare with `CFGetTypeID` of an object a call returned.
public func SecPolicyGetTypeID() -> CFTypeID { CoreFoundationTypeID.secPolicy }

/// The type identifier of trust objects, to compare with `CFGetTypeID` of an object a call returned.
public func SecTrustGetTypeID() -> CFTypeID { CoreFoundationTypeID.secTrust }

/// A policy that checks a certificate chain to a trusted root (RFC 5280 path validation).
public func SecPolicyCreateBasicX509() -> SecPolicy {
    SecPolicy(hostname: nil, identifier: .basic)
}

/// A policy for TLS: path validation, and for a server, that the leaf names `hostname`.
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(hostname: server ? hostname.map { $0 as String } : nil, identifier: .ssl)
}

/// Creates a trust object for a leaf certificate (or an array whose first element is the leaf and the rest
/// intermediates) and a policy or array of policies (basic X.509 when `nil`).
public func SecTrustCreateWithCertificates(_ certificates: CFTypeRef, _ policies: CFTypeRef?, _ trust: UnsafeMutablePointer<SecTrust?>) -> OSStatus {
    trust.pointee = nil
    let list: [SecCertificate]
    if let one = certificates as? SecCertificate {
        list = [one]
    } else if let many = certificates as? [Any], !many.isEmpty, many.allSatisfy({ $0 is SecCertificate }) {
        list = many.compactMap { $0 as? SecCertificate }
    } else {
        return errSecParam
    }
    var rules: [SecPolicy] = []
    switch policies {
    case nil: rules = [SecPolicyCreateBasicX509()]
    case let one as SecPolicy: rules = [one]
    case let many as [Any] where many.allSatisfy({ $0 is SecPolicy }): rules = many.compactMap { $0 as? SecPolicy }
    default: return errSecParam
    }
    trust.pointee = SecTrust(certificates: list, policies: rules)
    return errSecSuccess
}

/// Sets the certificates trusted as roots for this evaluation (only these, until
/// `SecTrustSetAnchorCertificatesOnly(trust, false)` adds the system's roots back).
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus {
    guard let anchors = anchorCertificates else {
        trust.anchors = []
        trust.anchorsOnly = false
        return errSecSuccess
    }
    let list = (anchors as? [Any]) ?? []
    guard list.allSatisfy({ $0 is SecCertificate }) else { return errSecParam }
    trust.anchors = list.compactMap { $0 as? SecCertificate }
    trust.anchorsOnly = true
    return errSecSuccess
}

/// Whether only the anchors set with `SecTrustSetAnchorCertificates` are trusted (else the system's roots too).
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.anchorsOnly = anchorCertificatesOnly
    return errSecSuccess
}

/// The date at which the chain must be valid (default: now).
public func SecTrustSetVerifyDate(_ trust: SecTrust, _ verifyDate: CFDate) -> OSStatus {
    trust.verifyDate = verifyDate as Date
    return errSecSuccess
}

/// Evaluates the trust: `true` when every policy holds for a chain to a trusted root; else `false` and, in
/// `error`, the reason: `errSecNotTrusted`, `errSecTrustSettingDeny` (a certificate of the chain is denied by the
/// user's or the administrator's trust settings), `errSecCertificateRevoked` (a revocation policy found a CRL, or
/// the issuer's OCSP responder, that revokes one), or `errSecIncompleteCertRevocationCheck` (a positive revocation
/// response was required and none could be had: no current CRL covered the certificate, and no valid OCSP answer
/// came, or network access was not allowed).
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    error?.pointee = nil
    do {
        var chain: [CertificateData] = []
        let revocationPolicies = trust.policies.compactMap(\.revocation)
        let revocation = revocationPolicies.isEmpty ? nil : revocationPolicies.reduce(RevocationOptions()) { $0.union($1) }
        var pathPolicies = trust.policies.filter { $0.revocation == nil }
        if pathPolicies.isEmpty { pathPolicies = [SecPolicyCreateBasicX509()] }
        trust.revocationChecked = false
        #if Network
        if revocation != nil { HTTPOCSPTransport.install() }
        #endif
        for policy in pathPolicies {
            let outcome = try TrustEvaluation.evaluateInDetail(
                .init(
                    leaf: trust.certificates[0].data, intermediates: trust.certificates.dropFirst().map(\.data),
                    anchors: trust.anchors.map(\.data), anchorsOnly: trust.anchorsOnly, hostname: policy.hostname,
                    date: trust.verifyDate, policy: policy.identifier, revocation: revocation, networkFetchAllowed: trust.networkFetchAllowed))
            chain = outcome.chain
            trust.revocationChecked = outcome.revocation?.checked ?? false
        }
        trust.chain = chain.map(SecCertificate.init)
        return true
    } catch let failure {
        trust.chain = []
        trust.revocationChecked = false
        error?.pointee = NSError(
            domain: NSOSStatusErrorDomain, code: Int(failure.status.rawValue),
            userInfo: [NSDebugDescriptionErrorKey: failure.message])
        return false
    }
}

/// The chain the last successful evaluation built, leaf first.
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    trust.chain.isEmpty ? nil : NSArray(array: trust.chain)
}
#endif
