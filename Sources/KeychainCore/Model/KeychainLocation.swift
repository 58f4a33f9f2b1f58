import Foundation

/// Where a keychain's files live: `$KEYCHAIN_HOME`, else `$XDG_DATA_HOME/keychain`, else
/// `~/.local/share/keychain`. The folder is 0700; every file in it is 0600.
package struct KeychainLocation: Sendable, Hashable {
    /// The keychain folder.
    package let home: String

    package init(home: String) { self.home = home }

    /// The location the environment names.
    package static func fromEnvironment(_ environment: [String: String] = KeychainLocation.processEnvironment()) -> KeychainLocation {
        if let home = environment["KEYCHAIN_HOME"], !home.isEmpty { return KeychainLocation(home: home) }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return KeychainLocation(home: xdg + "/keychain") }
        let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
        return KeychainLocation(home: user + "/.local/share/keychain")
    }

    /// The variables that name a keychain, its daemon and its caller (`KEYCHAIN_HOME`, `XDG_DATA_HOME`,
    /// `HOME`, `KEYCHAIN_ENTITLEMENTS`, `KEYCHAIN_DAEMON_SOCKET`, `XDG_RUNTIME_DIR`, `KEYCHAIN_SYSTEM_SOCKET`, and the trust store's, ``TrustStoreLocation/environmentNames``), read with `getenv`: SecItem calls look them up every time, and building
    /// Foundation's whole environment dictionary would cost more than the keychain lookup itself.
    package static func processEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        for name in [
            "KEYCHAIN_HOME", "XDG_DATA_HOME", "HOME", "KEYCHAIN_ENTITLEMENTS", "KEYCHAIN_DAEMON_SOCKET", "XDG_RUNTIME_DIR",
            "KEYCHAIN_SYSTEM_SOCKET",
        ]
            + TrustStoreLocation.environmentNames
        {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        return environment
    }

    /// The item database (Apple's name).
    package var databasePath: String { home + "/" + Self.databaseFileName }

    /// The database's file name in a keychain folder.
    package static let databaseFileName = "keychain-2.db"

    /// The keybag holding the wrapped class keys and metadata key.
    package var keybagPath: String { home + "/keychain.keybag" }
    /// The lock file that serializes first-time creation of the keychain's files.
    package var lockPath: String { home + "/keychain.lock" }
    /// Wrong-passcode throttling state.
    package var throttlePath: String { home + "/keychain.throttle" }
    /// The socket of the keychaind that serves this keychain, written by keychaind when it starts. Once it exists,
    /// clients reach the keychain through that keychaind only, and fail with `errSecNotAvailable` while it is not
    /// running, instead of opening the store themselves.
    package var daemonMarkerPath: String { home + "/keychaind.serves" }
    /// The random device key that wraps the keybag, on a machine without a TPM.
    package var deviceKeyPath: String { home + "/device.key" }
    /// The device key sealed to the machine's TPM 2.0 (see ``SealedDeviceKey``), in place of `device.key`.
    package var sealedDeviceKeyPath: String { home + "/device.key.tpm" }
    /// What this device knows of its sync account and of each synced item (see `SyncMirror`); nothing secret.
    package var syncMirrorPath: String { home + "/sync-mirror.sqlite" }
}
