import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which programs may ask the person for the keychain's passcode and approvals: pinentries an administrator
/// installed.
///
/// Whoever names the pinentry reads every passcode typed into it, and a keychain setting is written by whatever
/// program may change settings. So a setting can only pick a program that only root can change: a regular executable
/// file that, with every folder on the way to it (links followed), belongs to root and is writable by nobody else.
/// That is what the system's `/usr/bin/pinentry` and `/usr/bin/pinentry-*` are, and what an administrator makes of
/// another one by installing it. A program the user (or any program of the user) made is never one.
package enum InstalledPinentry {
    /// Nil when `path` is an installed pinentry a setting may name; otherwise why it is not, and what to do.
    package static func refusal(_ path: String) -> String? {
        guard path.hasPrefix("/") else {
            return "`\(path)` is not an absolute path. Name an installed pinentry, such as /usr/bin/pinentry-gnome3."
        }
        if let unsafe = FileOwnership.changeableByOthers(path, owners: [0]) {
            return "`\(path)` is not an installed pinentry (\(unsafe)). A setting may only name a program that only root "
                + "can change, such as /usr/bin/pinentry-gnome3 or /usr/bin/pinentry-curses, because that program reads the passcode."
        }
        return nil
    }
}

extension KeychainSettings {
    /// Refuses a change of the pinentry program to one that is not installed (``InstalledPinentry``), with
    /// `errSecParam`; the settings that were already there pass unchanged (they are checked again at each prompt).
    package func validate(replacing current: KeychainSettings?) throws(KeychainError) {
        if let pinentryProgram, pinentryProgram != current?.pinentryProgram, let refusal = InstalledPinentry.refusal(pinentryProgram) {
            throw KeychainError(code: .invalidParameter, message: "The pinentry program was not changed: \(refusal)")
        }
        if let policy = secretServiceUnregistered, !KeychainSettings.secretServicePolicies.contains(policy) {
            throw KeychainError(code: .invalidParameter, message: "The Secret Service policy `\(policy)` is unknown. Use one of \(KeychainSettings.secretServicePolicies.joined(separator: ", ")).")
        }
    }
}
