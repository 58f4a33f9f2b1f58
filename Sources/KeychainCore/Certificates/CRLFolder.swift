import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Installs certificate revocation lists where evaluation reads them (``RevocationCheck/storedCRLs(_:)``): the
/// user's CRL folder (0700, files 0600) or the administrator's (root only; 0755, files 0644). Each list is stored
/// as DER under its SHA-1 (`<SHA-1>.crl`), so adding the same list twice keeps one file.
package enum CRLFolder {
    /// Parses `data` (PEM or DER CRLs) and stores each list; returns the lists stored.
    ///
    /// - Throws: `errSecUnknownFormat` when `data` holds no CRL; `errSecWrPerm` for the admin folder unless the
    ///   caller is root; `errSecIO` when the folder cannot be written (or is a link).
    @discardableResult
    package static func add(_ data: Data, admin: Bool, environment: [String: String] = KeychainLocation.processEnvironment()) throws(KeychainError) -> [CertificateRevocationList] {
        let lists = try CertificateRevocationList.read(data)
        let location = TrustStoreLocation.fromEnvironment(environment)
        let folder = admin ? location.adminCRLs : location.userCRLs
        if admin {
            guard geteuid() == 0 else {
                throw KeychainError(
                    code: .authenticationFailed, status: .writePermission,
                    message: "Adding a CRL for every user (\(folder)) needs root: run the command with sudo, or add it for yourself without -d.")
            }
            let parent = NSStringPath(folder).deletingLastPathComponent
            if parent == TrustStoreLocation.adminFolder { try TrustSettingsStore.makeSharedFolder(parent) }
            try TrustSettingsStore.makeSharedFolder(folder)
        } else {
            try FileSystem.ensurePrivateDirectory(NSStringPath(folder).deletingLastPathComponent)
            try FileSystem.ensurePrivateDirectory(folder)
        }
        for list in lists {
            try FileSystem.writeAtomically(
                list.der, to: folder + "/" + list.sha1Fingerprint + ".crl", exclusive: false,
                mode: admin ? 0o644 : 0o600)
        }
        return lists
    }
}
