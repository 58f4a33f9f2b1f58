import Foundation

/// Where certificate trust lives on this machine: the distribution's trust store (read as Apple's System Roots
/// keychain), the user's and the administrator's trust settings, and their certificate revocation lists.
///
/// | What | Default | Override (tests) |
/// |------|---------|------------------|
/// | System Roots bundle | `/etc/ssl/certs/ca-certificates.crt` | `KEYCHAIN_SYSTEM_ROOTS` (a PEM file) |
/// | System Roots folder | `/etc/ssl/certs` | `KEYCHAIN_SYSTEM_ROOTS_DIR` (empty: none) |
/// | User trust settings | `$XDG_CONFIG_HOME/keychain/trust-settings.plist`, else `~/.config/keychain/…` | `KEYCHAIN_TRUST_SETTINGS` |
/// | Admin trust settings | `/etc/keychain/trust-settings.plist` | `KEYCHAIN_ADMIN_TRUST_SETTINGS` |
/// | User CRLs | `$XDG_CONFIG_HOME/keychain/crls/`, else `~/.config/keychain/crls/` | `KEYCHAIN_CRLS` |
/// | Admin CRLs | `/etc/keychain/crls/` | `KEYCHAIN_ADMIN_CRLS` |
///
/// Setting either System Roots variable replaces the distribution's store: only what the set variables name is
/// read (so a test's bundle is the whole store unless it also names a folder).
package struct TrustStoreLocation: Sendable, Hashable {
    /// The PEM bundle of system roots, or nil for none.
    package var systemRootsBundle: String?
    /// The folder of system root files (PEM, CRT or DER), or nil for none.
    package var systemRootsFolder: String?
    /// The user's trust settings file.
    package var userTrustSettings: String
    /// The administrator's trust settings file.
    package var adminTrustSettings: String
    /// The user's CRL folder.
    package var userCRLs: String
    /// The administrator's CRL folder.
    package var adminCRLs: String

    /// The variables this type reads (beside `HOME`, which `KeychainLocation` reads too).
    package static let environmentNames = [
        "KEYCHAIN_SYSTEM_ROOTS", "KEYCHAIN_SYSTEM_ROOTS_DIR", "XDG_CONFIG_HOME",
        "KEYCHAIN_TRUST_SETTINGS", "KEYCHAIN_ADMIN_TRUST_SETTINGS", "KEYCHAIN_CRLS", "KEYCHAIN_ADMIN_CRLS",
    ]

    /// Debian's and Ubuntu's bundle of the trusted roots.
    package static let debianBundle = "/etc/ssl/certs/ca-certificates.crt"
    /// Debian's folder of trusted roots (links into `/usr/share/ca-certificates`, and local ones).
    package static let debianFolder = "/etc/ssl/certs"
    /// The administrator's folder.
    package static let adminFolder = "/etc/keychain"

    /// The locations the environment names.
    package static func fromEnvironment(_ environment: [String: String] = KeychainLocation.processEnvironment()) -> TrustStoreLocation {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let bundle: String?, folder: String?
        if environment["KEYCHAIN_SYSTEM_ROOTS"] == nil && environment["KEYCHAIN_SYSTEM_ROOTS_DIR"] == nil {
            (bundle, folder) = (debianBundle, debianFolder)
        } else {
            (bundle, folder) = (value("KEYCHAIN_SYSTEM_ROOTS"), value("KEYCHAIN_SYSTEM_ROOTS_DIR"))
        }
        let config: String
        if let xdg = value("XDG_CONFIG_HOME"), xdg.hasPrefix("/") {
            config = xdg + "/keychain"
        } else {
            let home = value("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
            config = home + "/.config/keychain"
        }
        return TrustStoreLocation(
            systemRootsBundle: bundle, systemRootsFolder: folder,
            userTrustSettings: value("KEYCHAIN_TRUST_SETTINGS") ?? config + "/trust-settings.plist",
            adminTrustSettings: value("KEYCHAIN_ADMIN_TRUST_SETTINGS") ?? adminFolder + "/trust-settings.plist",
            userCRLs: value("KEYCHAIN_CRLS") ?? config + "/crls",
            adminCRLs: value("KEYCHAIN_ADMIN_CRLS") ?? adminFolder + "/crls")
    }
}
