#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Keychain Services revocation policy and the trust's policies and network fetching, with Apple's signatures
// (SecPolicy.h, SecTrust.h). Checking is the engine's (`RevocationCheck`, on CRL files); OCSP is never sent.

/// A boolean as Darwin's C interfaces pass it (`Boolean`), for `SecTrustGetNetworkFetchAllowed`.
public struct DarwinBoolean: ExpressibleByBooleanLiteral, Hashable, Sendable, CustomStringConvertible {
    /// The value.
    public var boolValue: Bool
    /// A boolean.
    public init(_ value: Bool) { boolValue = value }
    /// A boolean literal.
    public init(booleanLiteral value: Bool) { boolValue = value }
    /// `true` or `false`.
    public var description: String { boolValue.description }
}

/// Check revocation with OCSP (never sent here: this implementation has no OCSP client, and reports the status
/// as not checked).
public var kSecRevocationOCSPMethod: CFOptionFlags { 1 << 0 }
/// Check revocation with certificate revocation lists: the user's CRL folder, the administrator's, and those
/// `security verify-cert --crl` names.
public var kSecRevocationCRLMethod: CFOptionFlags { 1 << 1 }
/// Prefer CRLs to OCSP when both are allowed.
public var kSecRevocationPreferCRL: CFOptionFlags { 1 << 2 }
/// Fail when a certificate's revocation status cannot be learned (`errSecIncompleteCertRevocationCheck`).
public var kSecRevocationRequirePositiveResponse: CFOptionFlags { 1 << 3 }
/// Never use the network for revocation.
public var kSecRevocationNetworkAccessDisabled: CFOptionFlags { 1 << 4 }
/// Use any method available (OCSP and CRLs).
public var kSecRevocationUseAnyAvailableMethod: CFOptionFlags { kSecRevocationOCSPMethod | kSecRevocationCRLMethod }

/// The key of `SecTrustCopyResult`'s dictionary that says whether revocation was checked for every certificate.
nonisolated(unsafe) public let kSecTrustRevocationChecked: CFString = "TrustRevocationChecked"

/// A policy that checks the revocation status of every certificate of the chain but the root, by the methods
/// `revocationFlags` names (`kSecRevocation…`); add it to a trust's policies beside basic X.509 or SSL.
public func SecPolicyCreateRevocation(_ revocationFlags: CFOptionFlags) -> SecPolicy? {
    SecPolicy(hostname: nil, identifier: .revocation, revocation: RevocationOptions(rawValue: revocationFlags & 0x1F))
}

/// Replaces the policies a trust evaluates with (a policy or an array of policies).
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus {
    switch policies {
    case let one as SecPolicy: trust.policies = [one]
    case let many as [Any] where !many.isEmpty && many.allSatisfy({ $0 is SecPolicy }): trust.policies = many.compactMap { $0 as? SecPolicy }
    default: return errSecParam
    }
    trust.chain = []
    return errSecSuccess
}

/// The policies a trust evaluates with.
public func SecTrustCopyPolicies(_ trust: SecTrust, _ policies: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    policies.pointee = NSArray(array: trust.policies)
    return errSecSuccess
}

/// Whether evaluation may use the network: with a revocation policy that asks for OCSP, to ask a certificate's
/// OCSP responder about it. Allowed by default; no question is sent without a revocation policy.
public func SecTrustSetNetworkFetchAllowed(_ trust: SecTrust, _ allowFetch: Bool) -> OSStatus {
    trust.networkFetchAllowed = allowFetch
    return errSecSuccess
}

/// Whether evaluation may use the network.
public func SecTrustGetNetworkFetchAllowed(_ trust: SecTrust, _ allowFetch: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    allowFetch.pointee = DarwinBoolean(trust.networkFetchAllowed)
    return errSecSuccess
}

/// What the last evaluation found: `kSecTrustRevocationChecked` (whether every certificate's revocation status
/// was learned). `nil` before a successful evaluation.
public func SecTrustCopyResult(_ trust: SecTrust) -> CFDictionary? {
    guard !trust.chain.isEmpty else { return nil }
    return NSDictionary(dictionary: [kSecTrustRevocationChecked as String: NSNumber(value: trust.revocationChecked)])
}
#endif
