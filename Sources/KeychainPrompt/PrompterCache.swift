import Foundation
import KeychainCore
import Logging
import Synchronization

/// The prompter for a keychain, made from its settings (`pinentry-program`, `prompt-timeout`) and the environment
/// (`KEYCHAIN_PINENTRY`), and kept while they stay the same, so that prompts for one keychain are shown one at a
/// time (``PinentryPrompter`` queues its own). Safe from any thread.
package final class PrompterCache: Sendable {
    private struct Key: Hashable {
        var choice: PinentryChoice
        var timeout: Int?
        var terminal: String?
    }

    private let prompters = Mutex<[Key: PinentryPrompter]>([:])
    /// The environment pinentry is chosen from and run with.
    package let environment: [String: String]
    private let logger: Logger

    package init(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger = Logger(label: "swift-keychain")) {
        self.environment = environment
        self.logger = logger
    }

    /// The prompter for the keychain at `location` (its settings read now: a changed setting applies to the next
    /// prompt). An unreadable settings file falls back to the defaults. With `terminal` (the device of the
    /// requesting process's terminal), a pinentry that finds no display asks there.
    package func prompter(for location: KeychainLocation, terminal: String? = nil) -> any PresencePrompter {
        let settings = (try? KeychainSettings.load(location)) ?? nil
        let key = Key(
            choice: PinentryChoice.resolve(settings: settings, environment: environment), timeout: settings?.promptTimeout,
            terminal: terminal)
        return prompters.withLock { prompters in
            if let known = prompters[key] { return known }
            var environment = environment
            if let terminal {
                environment["GPG_TTY"] = terminal
                if environment["TERM", default: ""].isEmpty { environment["TERM"] = "xterm" }
            }
            let made = PinentryPrompter(
                choice: key.choice, timeout: key.timeout.map { .seconds($0) } ?? PinentryPrompter.defaultTimeout,
                environment: environment, logger: logger)
            if prompters.count >= 16 { prompters.removeAll() }
            prompters[key] = made
            return made
        }
    }
}
