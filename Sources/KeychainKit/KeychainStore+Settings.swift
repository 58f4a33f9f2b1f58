import Foundation
import KeychainCore

extension KeychainStore {
    /// The keychain's lock settings, as macOS's `security set-keychain-settings` sets them.
    public struct Settings: Sendable, Hashable {
        /// How long without use (time asleep included) until the keychain locks, in whole seconds; nil: it never
        /// locks on its own. keychaind applies it, and so does a program that opened the keychain itself.
        public var idleTimeout: Duration?
        /// Whether the keychain locks when the machine has been suspended: on resume, before the next request is
        /// answered (Linux tells a program that it slept only afterwards).
        public var lockOnSleep: Bool
        /// The pinentry program that asks for the user's presence: an installed one, which only root can change (such
        /// as `/usr/bin/pinentry-gnome3`); another is refused with `errSecParam`. nil: `KEYCHAIN_PINENTRY` in the
        /// environment keychaind started with, else root's `pinentry` on the `PATH`.
        public var pinentryProgram: String?
        /// How long until an unanswered prompt is stopped and its request fails as cancelled, in whole seconds
        /// (1–600 s); nil: 60 seconds.
        public var promptTimeout: Duration?
        /// What keychaind's Secret Service (`org.freedesktop.secrets`) does for programs that are not registered;
        /// nil: ``SecretServicePolicy/ask``. `KEYCHAIN_SECRET_SERVICE_UNREGISTERED` overrides it.
        public var secretServiceUnregistered: SecretServicePolicy?
        /// Whether items the `security` tool adds without `--sync` or `--no-sync` are synchronizable (off unless
        /// set, with `security sync default on`). Programs are not affected: an item added without
        /// `kSecAttrSynchronizable` is local, as on Apple's platforms.
        public var syncNewItems: Bool

        /// What the Secret Service does for a program that is not registered (`security app add`).
        public enum SecretServicePolicy: String, Sendable, Hashable, CaseIterable {
            /// The person is asked once per program and collection: allow once, always, or deny.
            case ask
            /// Every program of the user reaches the collections of unregistered programs (gnome-keyring's behaviour).
            case allow
            /// Programs that are not registered are refused.
            case deny
        }

        /// Settings with these values.
        public init(
            idleTimeout: Duration? = nil, lockOnSleep: Bool = false, pinentryProgram: String? = nil, promptTimeout: Duration? = nil,
            secretServiceUnregistered: SecretServicePolicy? = nil, syncNewItems: Bool = false
        ) {
            self.idleTimeout = idleTimeout
            self.lockOnSleep = lockOnSleep
            self.pinentryProgram = pinentryProgram
            self.promptTimeout = promptTimeout
            self.secretServiceUnregistered = secretServiceUnregistered
            self.syncNewItems = syncNewItems
        }

        /// How long keychaind waits before locking when no settings were ever set (its `--idle-lock` default).
        public static let defaultIdleTimeout: Duration = .seconds(KeychainSettings.defaultIdleTimeout)
    }

    /// The keychain's settings; nil when none were ever set (keychaind's own default applies).
    public func settings() throws(KeychainError) -> Settings? {
        try connection.settings().map {
            Settings(
                idleTimeout: $0.idleTimeout.map { .seconds($0) }, lockOnSleep: $0.lockOnSleep, pinentryProgram: $0.pinentryProgram,
                promptTimeout: $0.promptTimeout.map { .seconds($0) },
                secretServiceUnregistered: $0.secretServiceUnregistered.flatMap(Settings.SecretServicePolicy.init(rawValue:)),
                syncNewItems: $0.syncNewItems)
        }
    }

    /// Replaces the keychain's settings. Through keychaind only the admin tool may (see ``administrator(defaultAccessGroup:createIfMissing:)``).
    public func setSettings(_ settings: Settings) throws(KeychainError) {
        try connection.setSettings(
            KeychainSettings(
                idleTimeout: settings.idleTimeout.map(\.wholeSeconds), lockOnSleep: settings.lockOnSleep,
                pinentryProgram: settings.pinentryProgram, promptTimeout: settings.promptTimeout.map(\.wholeSeconds),
                secretServiceUnregistered: settings.secretServiceUnregistered?.rawValue, syncNewItems: settings.syncNewItems))
    }
}

extension Duration {
    /// The span in whole seconds (a fraction is dropped), as the keychain's settings keep it.
    var wholeSeconds: Int {
        Int(clamping: components.seconds)
    }
}
