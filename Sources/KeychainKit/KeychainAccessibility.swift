import KeychainCore

/// When an item's secret can be read: Apple's seven data-protection classes (`kSecAttrAccessible…`).
///
/// The raw value is the string Apple stores in the item's `pdmn` attribute (for example `"ck"` for
/// ``afterFirstUnlock``). Choose it with ``Keychain/accessibility(_:)``; items written without a choice get
/// ``whenUnlocked``, Apple's default.
public enum KeychainAccessibility: String, Sendable, Hashable, CaseIterable {
    /// Readable only while the keychain is unlocked; may be backed up and synchronized
    /// (`kSecAttrAccessibleWhenUnlocked`). The default.
    case whenUnlocked = "ak"
    /// Readable after the first unlock since start-up, until shutdown; suits background work
    /// (`kSecAttrAccessibleAfterFirstUnlock`).
    case afterFirstUnlock = "ck"
    /// Always readable, even while locked (`kSecAttrAccessibleAlways`, deprecated by Apple; prefer
    /// ``afterFirstUnlock``).
    case always = "dk"
    /// Like ``whenUnlocked``, but never leaves this device (`kSecAttrAccessibleWhenUnlockedThisDeviceOnly`).
    case whenUnlockedThisDeviceOnly = "aku"
    /// Like ``afterFirstUnlock``, but never leaves this device
    /// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
    case afterFirstUnlockThisDeviceOnly = "cku"
    /// Like ``always``, but never leaves this device (`kSecAttrAccessibleAlwaysThisDeviceOnly`, deprecated by
    /// Apple).
    case alwaysThisDeviceOnly = "dku"
    /// Readable only while unlocked and only while a passcode is set; never leaves this device
    /// (`kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`). Writing such an item without a keychain passcode
    /// fails with `KeychainStatus/authFailed`.
    case whenPasscodeSetThisDeviceOnly = "akpu"

    /// The engine's protection class for this accessibility.
    var protectionClass: ProtectionClass {
        switch self {
        case .whenUnlocked: .whenUnlocked
        case .afterFirstUnlock: .afterFirstUnlock
        case .always: .always
        case .whenUnlockedThisDeviceOnly: .whenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: .afterFirstUnlockThisDeviceOnly
        case .alwaysThisDeviceOnly: .alwaysThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: .whenPasscodeSetThisDeviceOnly
        }
    }

    /// The accessibility of an engine protection class.
    init(_ protection: ProtectionClass) {
        switch protection {
        case .whenUnlocked: self = .whenUnlocked
        case .afterFirstUnlock: self = .afterFirstUnlock
        case .always: self = .always
        case .whenUnlockedThisDeviceOnly: self = .whenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: self = .afterFirstUnlockThisDeviceOnly
        case .alwaysThisDeviceOnly: self = .alwaysThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: self = .whenPasscodeSetThisDeviceOnly
        }
    }
}
