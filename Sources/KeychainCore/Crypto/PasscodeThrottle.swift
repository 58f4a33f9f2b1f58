import Foundation

/// Wrong-passcode throttling, kept in `keychain.throttle` beside the keybag so it survives restarts.
///
/// Format: `u8 version = 1 | u32 consecutive failures | u64 IEEE-754 bits of the earliest next attempt
/// (seconds since 1970)`. Delays follow iOS: none for the first four failures, then 1, 5, 15, 15 minutes,
/// then an hour for every further failure.
package struct PasscodeThrottle: Sendable, Hashable {
    package var failures: UInt32 = 0
    package var notBefore: Double = 0

    package static func delay(afterFailures failures: UInt32) -> Double {
        switch failures {
        case 0 ..< 5: 0
        case 5: 60
        case 6: 300
        case 7, 8: 900
        default: 3600
        }
    }

    static func load(_ location: KeychainLocation) throws(KeychainError) -> PasscodeThrottle {
        guard let bytes = try FileSystem.read(location.throttlePath) else { return PasscodeThrottle() }
        var r = BinaryReader(bytes)
        guard let version = try? r.u8(), version == 1, let failures = try? r.u32(), let bits = try? r.u64(), r.isAtEnd else {
            // A damaged throttle file must not let an attacker reset the count: treat it as the maximum.
            return PasscodeThrottle(failures: 9, notBefore: Date().timeIntervalSince1970 + delay(afterFailures: 9))
        }
        return PasscodeThrottle(failures: failures, notBefore: Double(bitPattern: bits))
    }

    func save(_ location: KeychainLocation) throws(KeychainError) {
        var w = BinaryWriter(capacity: 13)
        w.u8(1)
        w.u32(failures)
        w.u64(notBefore.bitPattern)
        try FileSystem.writeAtomically(w.bytes, to: location.throttlePath, exclusive: false)
    }
}
