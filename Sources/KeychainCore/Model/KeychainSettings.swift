import Foundation

/// The keychain's settings, as macOS's `security set-keychain-settings` sets them: lock after an idle time,
/// and lock when the machine sleeps; and how prompts for the user's presence are shown (the pinentry program and
/// how long a prompt stays open). Kept in `keychain.settings` (an XML property list) in the keychain folder,
/// where the engine holding the unlocked keys (keychaind's, or a program's own) reads them again within a second
/// of a change and applies them (``KeychainEngine/applyLockSettings(countingAsUse:)``).
package struct KeychainSettings: Sendable, Hashable {
    /// Seconds without use (time asleep included) after which the keychain locks; nil never locks on its own.
    package var idleTimeout: Int?
    /// Whether the keychain locks when the machine has been suspended (it locks on resume, before the next request).
    package var lockOnSleep: Bool
    /// The absolute path of the pinentry program that shows prompts (`pinentry-program`); nil looks for
    /// `pinentry` in `PATH`. The environment's `KEYCHAIN_PINENTRY` overrides it.
    package var pinentryProgram: String?
    /// Seconds a prompt stays open before it is stopped (`prompt-timeout`); nil is the prompter's default (60).
    package var promptTimeout: Int?
    /// What keychaind's Secret Service does for programs that are not registered (`secret-service-unregistered`):
    /// `ask`, `allow` or `deny`; nil is `ask`. The environment's `KEYCHAIN_SECRET_SERVICE_UNREGISTERED` overrides it.
    package var secretServiceUnregistered: String?
    /// Whether items the `security` tool adds without `--sync` or `--no-sync` are synchronizable
    /// (`sync-new-items`); off unless set. Apple's API is not affected: `SecItemAdd` without
    /// `kSecAttrSynchronizable` adds a local item, as on Apple's platforms.
    package var syncNewItems: Bool

    /// The values ``secretServiceUnregistered`` may take.
    package static let secretServicePolicies = ["ask", "allow", "deny"]

    /// Settings from their values; each defaults to "not set" (never lock on idle or sleep, the prompter's defaults).
    package init(
        idleTimeout: Int? = nil, lockOnSleep: Bool = false, pinentryProgram: String? = nil, promptTimeout: Int? = nil,
        secretServiceUnregistered: String? = nil, syncNewItems: Bool = false
    ) {
        self.idleTimeout = idleTimeout
        self.lockOnSleep = lockOnSleep
        self.pinentryProgram = pinentryProgram
        self.promptTimeout = promptTimeout
        self.secretServiceUnregistered = secretServiceUnregistered
        self.syncNewItems = syncNewItems
    }

    /// How long keychaind waits before locking when no settings were ever set (its `--idle-lock` default).
    package static let defaultIdleTimeout = 600

    /// The settings file of a keychain.
    package static func path(_ location: KeychainLocation) -> String { location.home + "/keychain.settings" }

    /// The stored settings, or nil when none were ever set (the daemon's own default applies).
    package static func load(_ location: KeychainLocation) throws(KeychainError) -> KeychainSettings? {
        guard let data = try FileSystem.read(path(location)) else { return nil }
        guard let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any] else {
            throw KeychainError(code: .corruptData, message: "\(path(location)) is not a settings file. Remove it, or set the settings again with `security set-keychain-settings`.")
        }
        let timeout = (plist["idle-timeout"] as? NSNumber)?.intValue
        let promptTimeout = (plist["prompt-timeout"] as? NSNumber)?.intValue
        return KeychainSettings(
            idleTimeout: timeout.flatMap { $0 > 0 ? $0 : nil },
            lockOnSleep: (plist["lock-on-sleep"] as? Bool) ?? false,
            pinentryProgram: (plist["pinentry-program"] as? String).flatMap { $0.isEmpty ? nil : $0 },
            promptTimeout: promptTimeout.flatMap { $0 > 0 ? $0 : nil },
            secretServiceUnregistered: (plist["secret-service-unregistered"] as? String).flatMap { $0.isEmpty ? nil : $0 },
            syncNewItems: (plist["sync-new-items"] as? Bool) ?? false)
    }

    /// Writes the settings atomically.
    package func save(_ location: KeychainLocation) throws(KeychainError) {
        var plist: [String: Any] = ["lock-on-sleep": lockOnSleep]
        if let idleTimeout { plist["idle-timeout"] = idleTimeout }
        if let pinentryProgram { plist["pinentry-program"] = pinentryProgram }
        if let promptTimeout { plist["prompt-timeout"] = promptTimeout }
        if let secretServiceUnregistered { plist["secret-service-unregistered"] = secretServiceUnregistered }
        if syncNewItems { plist["sync-new-items"] = true }
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        } catch {
            throw KeychainError(code: .internal, message: "The settings could not be encoded.")
        }
        try FileSystem.ensurePrivateDirectory(location.home)
        try FileSystem.writeAtomically(Array(data), to: KeychainSettings.path(location), exclusive: false)
    }
}
