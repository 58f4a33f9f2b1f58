import Foundation
import KeychainCore

/// Which pinentry program shows the prompts, or why there is none.
///
/// Chosen by ``resolve(configured:environment:)`` in this order:
/// 1. `KEYCHAIN_PINENTRY` in the environment (our `PINENTRY_PROGRAM`), when set and not empty;
/// 2. the configured program (``KeychainSettings/pinentryProgram``, `pinentry-program` in `keychain.settings`);
/// 3. `pinentry` in a folder of `PATH` (on Debian `/usr/bin/pinentry`, the alternatives link choosing among
///    pinentry-gnome3, -qt, -gtk2, -curses and -tty).
///
/// Whoever names the pinentry reads the passcode typed into it, so each source is held to who may set it:
/// - 1 is the environment keychaind (or the program) was started with: its path must be absolute and the file, and
///   every folder on the way, belong to root or to the user this process runs as and be writable by nobody else;
/// - 2 is written by programs that may change the settings: it must be an installed pinentry
///   (``InstalledPinentry``: `/usr/bin/pinentry*` or a program an administrator lists, only root may change it);
/// - 3 skips relative folders (an empty entry or `.` in `PATH`) and programs that are not root's.
///
/// When the program named by 1 or 2 fails its check, the choice is ``unavailable(_:)`` with the reason, and no other
/// program is tried in its place (the person asked for that one).
package enum PinentryChoice: Sendable, Hashable {
    /// This program, an absolute path to an executable file.
    case program(String)
    /// No pinentry can be run; the string says why and what to do.
    case unavailable(String)

    /// The environment variable naming the pinentry program.
    package static let environmentVariable = "KEYCHAIN_PINENTRY"

    /// Where `PATH` is searched when it is not set.
    package static let defaultSearchPath = "/usr/local/bin:/usr/bin:/bin"

    /// What to do when no pinentry is installed.
    package static let installAdvice =
        "Install pinentry-gnome3 (desktop) or pinentry-curses (terminal) with "
        + "`sudo apt-get install pinentry-gnome3` or `sudo apt-get install pinentry-curses`, or set KEYCHAIN_PINENTRY "
        + "(or `pinentry-program` in keychain.settings) to the absolute path of a pinentry program."

    /// Chooses the program from `environment` and the configured path (see the type's description).
    package static func resolve(configured: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> PinentryChoice {
        if let named = environment[environmentVariable], !named.isEmpty {
            let checked = checked(named, source: environmentVariable)
            if case .program = checked, let unsafe = FileOwnership.changeableByOthers(named, owners: [0, geteuid()]) {
                return .unavailable("\(environmentVariable) names `\(named)`, which cannot be the pinentry: \(unsafe).")
            }
            return checked
        }
        if let configured, !configured.isEmpty {
            if let refusal = InstalledPinentry.refusal(configured) {
                return .unavailable("pinentry-program in keychain.settings is refused: \(refusal)")
            }
            return checked(configured, source: "pinentry-program in keychain.settings")
        }
        let searchPath = environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultSearchPath
        for folder in searchPath.split(separator: ":", omittingEmptySubsequences: true).prefix(64) where folder.hasPrefix("/") {
            let candidate = (folder.hasSuffix("/") ? String(folder) : folder + "/") + "pinentry"
            if isExecutableFile(candidate), FileOwnership.changeableByOthers(candidate, owners: [0]) == nil { return .program(candidate) }
        }
        return .unavailable("No pinentry program was found in PATH to show the prompt. " + installAdvice)
    }

    /// Chooses the program from `environment` and the settings' `pinentryProgram`.
    package static func resolve(settings: KeychainSettings?, environment: [String: String] = ProcessInfo.processInfo.environment) -> PinentryChoice {
        resolve(configured: settings?.pinentryProgram, environment: environment)
    }

    private static func checked(_ path: String, source: String) -> PinentryChoice {
        guard path.hasPrefix("/") else {
            return .unavailable(
                "\(source) names `\(path)`, a relative path, which is refused: it would be looked up from "
                    + "the folder the keychain happens to run in. Give the absolute path of a pinentry program.")
        }
        guard isExecutableFile(path) else {
            return .unavailable("\(source) names `\(path)`, which is not an executable file. " + installAdvice)
        }
        return .program(path)
    }

    /// Whether `path` (symbolic links followed) is a regular file this process may execute.
    private static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return access(path, X_OK) == 0
    }
}
