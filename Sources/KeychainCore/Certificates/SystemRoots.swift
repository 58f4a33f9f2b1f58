import Foundation
import Crypto
import SwiftASN1
import X509

// Placeholder for the contract the trust work fills in (the distribution's trust store, refreshed when it changes).

/// The distribution's trusted roots at one moment.
package struct SystemRootsSnapshot: Sendable {
    /// The certificates.
    package var certificates: [CertificateData]
    /// SHA-256 over the sorted DERs: changes exactly when the set changes.
    package var digest: [UInt8]
}

/// The distribution's trust store.
package enum SystemRoots {
    /// The roots now.
    package static func snapshot(_ environment: [String: String] = KeychainLocation.processEnvironment()) throws(KeychainError) -> SystemRootsSnapshot {
        let certificates = TrustEvaluation.systemRootData()
        var hash = SHA256()
        for der in certificates.map(\.der).sorted(by: { $0.lexicographicallyPrecedes($1) }) { hash.update(data: der) }
        return SystemRootsSnapshot(certificates: certificates, digest: Array(hash.finalize()))
    }
}

extension TrustEvaluation {
    static func systemRootData() -> [CertificateData] {
        systemRoots().compactMap { certificate in
            var serializer = DER.Serializer()
            guard (try? serializer.serialize(certificate)) != nil else { return nil }
            return try? CertificateData(der: Data(serializer.serializedBytes))
        }
    }
}
