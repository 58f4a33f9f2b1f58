import Foundation

/// Whether the keychain's protected classes are available to this process.
package enum LockState: Sendable, Hashable {
    /// No passcode is set: every class is available, as on an iPhone without a passcode.
    case noPasscode
    /// A passcode is set and this process has not unlocked since it opened the keychain ("boot"):
    /// only Always items (`dk`, `dku`) are available.
    case beforeFirstUnlock
    /// Unlocked: every class is available.
    case unlocked
    /// Locked after an unlock: Always and AfterFirstUnlock items stay available.
    case locked

    /// The state's stable name on keychaind's socket: `noPasscode`, `beforeFirstUnlock`, `unlocked`, `locked`.
    package var wireName: String {
        switch self {
        case .noPasscode: "noPasscode"
        case .beforeFirstUnlock: "beforeFirstUnlock"
        case .unlocked: "unlocked"
        case .locked: "locked"
        }
    }
}
