import Foundation
import SwiftASN1

/// A trust settings domain (Apple's `SecTrustSettingsDomain`): whose settings these are.
package enum TrustSettingsDomain: Int, Sendable, CaseIterable {
    /// The user's own settings.
    case user = 0
    /// The administrator's settings, for every user of the machine.
    case admin = 1
    /// The system's: every System Root is trusted as a root; read-only.
    case system = 2
}

/// What a usage constraint decides (Apple's `SecTrustSettingsResult`).
package enum TrustSettingsResult: Int, Sendable, CaseIterable {
    /// Never valid in a stored setting.
    case invalid = 0
    /// A root trusted as an anchor (only for self-signed certificates).
    case trustRoot = 1
    /// A non-root certificate trusted as if it were a root.
    case trustAsRoot = 2
    /// Explicitly distrusted: a chain through it fails with `errSecTrustSettingDeny`.
    case deny = 3
    /// No decision: evaluation goes on as if there were no setting.
    case unspecified = 4

    /// The name `add-trusted-cert -r` takes and `dump-trust-settings` shows after `kSecTrustSettingsResult`.
    package var name: String {
        switch self {
        case .invalid: "Invalid"
        case .trustRoot: "TrustRoot"
        case .trustAsRoot: "TrustAsRoot"
        case .deny: "Deny"
        case .unspecified: "Unspecified"
        }
    }
}

/// The trust policies trust settings can name, with Apple's policy OIDs.
package enum TrustPolicyIdentifier: String, Sendable, CaseIterable {
    /// `kSecPolicyAppleX509Basic`.
    case basic = "1.2.840.113635.100.1.2"
    /// `kSecPolicyAppleSSL`.
    case ssl = "1.2.840.113635.100.1.3"
    /// `kSecPolicyAppleSMIME`.
    case smime = "1.2.840.113635.100.1.8"
    /// `kSecPolicyAppleEAP`.
    case eap = "1.2.840.113635.100.1.9"
    /// `kSecPolicyAppleIPsec`.
    case ipsec = "1.2.840.113635.100.1.11"
    /// `kSecPolicyAppleCodeSigning`.
    case codeSigning = "1.2.840.113635.100.1.16"
    /// `kSecPolicyAppleRevocation`.
    case revocation = "1.2.840.113635.100.1.20"
    /// `kSecPolicyAppleTimeStamping`.
    case timeStamping = "1.2.840.113635.100.1.26"

    /// The policy's name in a trust settings record (`kSecTrustSettingsPolicyName`).
    package var policyName: String {
        switch self {
        case .basic: "basicX509"
        case .ssl: "sslServer"
        case .smime: "SMIME"
        case .eap: "EAP"
        case .ipsec: "IPSec"
        case .codeSigning: "CodeSigning"
        case .revocation: "revocation"
        case .timeStamping: "AppleTimeStamping"
        }
    }

    /// What `security dump-trust-settings` prints for the policy.
    package var displayName: String {
        switch self {
        case .basic: "Apple X509 Basic"
        case .ssl: "SSL"
        case .smime: "SMIME"
        case .eap: "EAP"
        case .ipsec: "IPSec"
        case .codeSigning: "Code Signing"
        case .revocation: "Revocation"
        case .timeStamping: "Time Stamping"
        }
    }

    /// The OID's content bytes, as trust settings store `kSecTrustSettingsPolicy`.
    package var oidBytes: Data {
        guard let oid = try? ASN1ObjectIdentifier(dotRepresentation: rawValue) else { return Data() }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(oid)) != nil else { return Data() }
        // Tag and a one-byte length precede the content (Apple's OIDs are short).
        return Data(serializer.serializedBytes.dropFirst(2))
    }

    /// The policy whose OID content bytes are `bytes`.
    package init?(oidBytes bytes: Data) {
        guard let found = TrustPolicyIdentifier.allCases.first(where: { $0.oidBytes == bytes }) else { return nil }
        self = found
    }
}

/// One usage constraint of a certificate's trust settings (a dictionary of Apple's `kSecTrustSettings…` keys).
package struct TrustSettingsConstraint: Sendable, Equatable {
    /// `kSecTrustSettingsPolicy`: the OID content bytes of the policy this constraint is limited to.
    package var policy: Data?
    /// `kSecTrustSettingsPolicyName`.
    package var policyName: String?
    /// `kSecTrustSettingsPolicyString`: for SSL, the host name the constraint is limited to.
    package var policyString: String?
    /// `kSecTrustSettingsKeyUsage` (stored; not used in evaluation).
    package var keyUsage: Int64?
    /// `kSecTrustSettingsAllowedError` (stored; not used in evaluation).
    package var allowedError: Int64?
    /// `kSecTrustSettingsResult`; absent means `trustRoot`.
    package var result: TrustSettingsResult?

    /// A constraint.
    package init(
        policy: TrustPolicyIdentifier? = nil, policyString: String? = nil, keyUsage: Int64? = nil,
        allowedError: Int64? = nil, result: TrustSettingsResult? = nil
    ) {
        self.policy = policy?.oidBytes
        self.policyName = policy?.policyName
        self.policyString = policyString
        self.keyUsage = keyUsage
        self.allowedError = allowedError
        self.result = result
    }

    /// The plist keys, which are also the values of Apple's constants.
    package enum Key {
        /// The policy's OID content bytes.
        package static let policy = "kSecTrustSettingsPolicy"
        /// The policy's name.
        package static let policyName = "kSecTrustSettingsPolicyName"
        /// An application (not supported).
        package static let application = "kSecTrustSettingsApplication"
        /// Policy-specific data (for SSL, the host name).
        package static let policyString = "kSecTrustSettingsPolicyString"
        /// A key usage mask.
        package static let keyUsage = "kSecTrustSettingsKeyUsage"
        /// An error status to allow.
        package static let allowedError = "kSecTrustSettingsAllowedError"
        /// The result (`TrustSettingsResult`'s raw value).
        package static let result = "kSecTrustSettingsResult"
    }

    /// Whether this constraint speaks to an evaluation under `policy` for `hostname`.
    func applies(to policy: TrustPolicyIdentifier, hostname: String?) -> Bool {
        if let own = self.policy, own != policy.oidBytes { return false }
        if let policyString {
            guard policy == .ssl, let hostname, policyString.caseInsensitiveCompare(hostname) == .orderedSame else { return false }
        }
        return true
    }
}

/// A certificate's trust settings in one domain, as Apple's trust settings file keeps them (keyed by the
/// certificate's SHA-1).
package struct TrustSettingsRecord: Sendable, Equatable {
    /// `issuerName`: the DER of the certificate's issuer.
    package var issuerName: Data
    /// `serialNumber`: the serial number's content bytes.
    package var serialNumber: Data
    /// `modDate`: when the settings were last changed.
    package var modificationDate: Date
    /// `trustSettings`: the usage constraints; empty means "always trust as a root".
    package var constraints: [TrustSettingsConstraint]
    /// The certificate's DER (our addition, so the settings name their certificate; not exported).
    package var certificate: Data?

    /// A record.
    package init(issuerName: Data, serialNumber: Data, modificationDate: Date, constraints: [TrustSettingsConstraint], certificate: Data?) {
        self.issuerName = issuerName
        self.serialNumber = serialNumber
        self.modificationDate = modificationDate
        self.constraints = constraints
        self.certificate = certificate
    }

    /// What these settings decide for an evaluation under `policy` (nil: nothing; look further). The first
    /// constraint that applies and decides (anything but `unspecified`) wins; no constraints at all means a root.
    package func decision(for policy: TrustPolicyIdentifier, hostname: String?, selfSigned: Bool) -> TrustSettingsResult? {
        if constraints.isEmpty { return selfSigned ? .trustRoot : .trustAsRoot }
        for constraint in constraints where constraint.applies(to: policy, hostname: hostname) {
            let result = constraint.result ?? .trustRoot
            if result != .unspecified { return result }
        }
        return nil
    }
}
