import Foundation
import KeychainCore

/// Whose trust settings (Apple's `SecTrustSettingsDomain`).
public enum KeychainTrustDomain: Int, Sendable, CaseIterable {
    /// The user's own (`~/.config/keychain/trust-settings.plist`).
    case user = 0
    /// The administrator's (`/etc/keychain/trust-settings.plist`); changing them needs root.
    case admin = 1
    /// The system's: the System Roots, read-only.
    case system = 2

    var engine: TrustSettingsDomain { TrustSettingsDomain(rawValue: rawValue) ?? .user }
}

/// What a trust setting decides (Apple's `SecTrustSettingsResult`).
public enum KeychainTrustResult: Int, Sendable, CaseIterable {
    /// A self-signed certificate trusted as an anchor.
    case trustRoot = 1
    /// Another certificate trusted as if it were a root.
    case trustAsRoot = 2
    /// Distrusted.
    case deny = 3
    /// No decision.
    case unspecified = 4

    /// The name `security add-trusted-cert -r` takes.
    public var argumentName: String {
        switch self {
        case .trustRoot: "trustRoot"
        case .trustAsRoot: "trustAsRoot"
        case .deny: "deny"
        case .unspecified: "unspecified"
        }
    }

    /// The constant's name, as `security dump-trust-settings` prints it.
    public var constantName: String { "kSecTrustSettingsResult" + (TrustSettingsResult(rawValue: rawValue)?.name ?? "Invalid") }
}

/// A policy trust settings can be limited to, by the name `security add-trusted-cert -p` takes.
public enum KeychainTrustPolicy: String, Sendable, CaseIterable {
    /// SSL/TLS (`kSecPolicyAppleSSL`).
    case ssl
    /// Basic X.509 path validation (`kSecPolicyAppleX509Basic`).
    case basic
    /// S/MIME.
    case smime
    /// EAP.
    case eap
    /// IPsec.
    case ipsec = "IPSec"
    /// Code signing.
    case codeSign
    /// Revocation.
    case revocation
    /// Time stamping.
    case timestamping

    var engine: TrustPolicyIdentifier {
        switch self {
        case .ssl: .ssl
        case .basic: .basic
        case .smime: .smime
        case .eap: .eap
        case .ipsec: .ipsec
        case .codeSign: .codeSigning
        case .revocation: .revocation
        case .timestamping: .timeStamping
        }
    }
}

/// One usage constraint of a certificate's trust settings.
public struct KeychainTrustSetting: Sendable, Equatable {
    /// The policy it is limited to (nil: every policy).
    public var policy: KeychainTrustPolicy?
    /// For SSL, the host name it is limited to.
    public var policyString: String?
    /// What it decides (nil: the default, `trustRoot`).
    public var result: KeychainTrustResult?
    /// The policy's name as `security dump-trust-settings` prints it ("SSL", "Apple X509 Basic"), when it names one.
    public var policyDisplayName: String?
    /// `kSecTrustSettingsKeyUsage`.
    public var keyUsage: Int64?
    /// `kSecTrustSettingsAllowedError`.
    public var allowedError: Int64?

    /// A constraint.
    public init(policy: KeychainTrustPolicy? = nil, policyString: String? = nil, result: KeychainTrustResult? = nil) {
        self.policy = policy
        self.policyString = policyString
        self.result = result
        self.policyDisplayName = policy?.engine.displayName
    }

    init(_ constraint: TrustSettingsConstraint) {
        let identifier = constraint.policy.flatMap(TrustPolicyIdentifier.init(oidBytes:))
        policy = identifier.flatMap { id in KeychainTrustPolicy.allCases.first { $0.engine == id } }
        policyDisplayName = identifier?.displayName ?? constraint.policy.map { _ in "unknown OID" }
        policyString = constraint.policyString
        result = constraint.result.flatMap { KeychainTrustResult(rawValue: $0.rawValue) }
        keyUsage = constraint.keyUsage
        allowedError = constraint.allowedError
    }

    var engine: TrustSettingsConstraint {
        TrustSettingsConstraint(
            policy: policy?.engine, policyString: policyString,
            result: result.flatMap { TrustSettingsResult(rawValue: $0.rawValue) })
    }
}

/// A certificate with trust settings in a domain.
public struct KeychainTrustedCertificate: Sendable {
    /// The certificate, when the settings carry it (settings imported from elsewhere name only its SHA-1).
    public var certificate: KeychainCertificate?
    /// The certificate's SHA-1, upper-case hex.
    public var sha1Fingerprint: String
    /// The usage constraints (empty: always trusted as a root).
    public var settings: [KeychainTrustSetting]
}

/// Trust settings (Apple's `SecTrustSettings…`) and certificate revocation lists, for the `security` tool.
public enum KeychainTrustSettings {
    /// Sets the certificate's settings in `domain` (empty: always trusted as a root).
    ///
    /// - Throws: `KeychainError`: `errSecDataNotModifiable` (system domain), `errSecWrPerm` (admin domain, not root),
    ///   `errSecParam` (`trustRoot` for a certificate that is not self-signed), `errSecIO`.
    public static func set(_ settings: [KeychainTrustSetting], for certificate: KeychainCertificate, domain: KeychainTrustDomain) throws(KeychainError) {
        try TrustSettingsStore.set(settings.map(\.engine), for: certificate.parsed, domain: domain.engine)
    }

    /// Removes the certificate's settings from `domain`; `errSecItemNotFound` when it has none there.
    public static func remove(_ certificate: KeychainCertificate, domain: KeychainTrustDomain) throws(KeychainError) {
        try TrustSettingsStore.remove(certificate.parsed, domain: domain.engine)
    }

    /// The certificates with settings in `domain`, by SHA-1; `errSecNoTrustSettings` when there are none.
    public static func trustedCertificates(_ domain: KeychainTrustDomain) throws(KeychainError) -> [KeychainTrustedCertificate] {
        try TrustSettingsStore.certificates(domain.engine).map { certificate, hash, record in
            KeychainTrustedCertificate(
                certificate: certificate.map(KeychainCertificate.init), sha1Fingerprint: hash,
                settings: record.constraints.map(KeychainTrustSetting.init))
        }
    }

    /// The domain's settings as Apple's external representation (what `trust-settings-export` writes).
    public static func exportSettings(_ domain: KeychainTrustDomain) throws(KeychainError) -> Data {
        try TrustSettingsStore.externalRepresentation(domain.engine)
    }

    /// Replaces the domain's settings with an external representation.
    public static func importSettings(_ data: Data, domain: KeychainTrustDomain) throws(KeychainError) {
        try TrustSettingsStore.importExternalRepresentation(data, domain: domain.engine)
    }

    /// Installs the CRLs of a file (PEM or DER) in the user's CRL folder, or with `admin` the administrator's;
    /// returns how many lists it held.
    @discardableResult
    public static func addCRL(_ data: Data, admin: Bool) throws(KeychainError) -> Int {
        try CRLFolder.add(data, admin: admin).count
    }
}
