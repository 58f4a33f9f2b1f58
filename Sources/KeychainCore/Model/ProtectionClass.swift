/// A data-protection class: which keybag class key protects an item's secret (Apple's `pdmn` values).
package enum ProtectionClass: String, Sendable, CaseIterable, Hashable {
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"
    case always = "dk"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"
    case whenPasscodeSetThisDeviceOnly = "akpu"

    /// The class's number in the keybag file format. Stable: part of the on-disk format.
    package var keybagID: UInt8 {
        switch self {
        case .whenUnlocked: 1
        case .afterFirstUnlock: 2
        case .always: 3
        case .whenUnlockedThisDeviceOnly: 4
        case .afterFirstUnlockThisDeviceOnly: 5
        case .alwaysThisDeviceOnly: 6
        case .whenPasscodeSetThisDeviceOnly: 7
        }
    }

    package init?(keybagID: UInt8) {
        guard let found = ProtectionClass.allCases.first(where: { $0.keybagID == keybagID }) else { return nil }
        self = found
    }

    /// ThisDeviceOnly classes never leave this machine (backups keep them bound to the device key).
    package var isThisDeviceOnly: Bool {
        switch self {
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
            .whenPasscodeSetThisDeviceOnly:
            true
        default: false
        }
    }
}
