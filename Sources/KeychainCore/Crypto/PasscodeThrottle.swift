import Foundation
import Crypto

/// Wrong-passcode throttling. Delays follow iOS: none for the first four failures, then 1, 5, 15, 15 minutes,
/// then an hour for every further failure.
///
/// Where it lives: in a version-3 keybag, as the keybag's own sealed record (AES-256-GCM under
/// `HKDF-SHA256(ikm: device key, info: "swift-keychain keybag throttle v3")`, AAD = that label | keybag UUID,
/// plaintext `u32 consecutive failures | u64 IEEE-754 bits of the earliest next attempt (seconds since 1970)`).
/// Deleting a file cannot reset it (the keychain does not open without its keybag), and an edited or
/// transplanted record fails authentication and counts as the worst case. What the record cannot stop is a
/// whole older keybag copied back over the current one (a rollback); with the device key sealed to a TPM that
/// copy is still bound to this machine. A version-2 keybag (written before the record existed) keeps its count
/// in `keychain.throttle`, format `u8 version = 1 | u32 failures | u64 bits of the earliest next attempt`, until
/// its first unlock rewrites it as version 3 and removes that file.
package struct PasscodeThrottle: Sendable, Hashable {
    package var failures: UInt32 = 0
    package var notBefore: Double = 0

    package init(failures: UInt32 = 0, notBefore: Double = 0) {
        self.failures = failures
        self.notBefore = notBefore
    }

    package static func delay(afterFailures failures: UInt32) -> Double {
        switch failures {
        case 0..<5: 0
        case 5: 60
        case 6: 300
        case 7, 8: 900
        default: 3600
        }
    }

    static let recordLabel: [UInt8] = Array("swift-keychain keybag throttle v3".utf8)

    static func recordKey(_ deviceKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: deviceKey, info: recordLabel, outputByteCount: 32)
    }

    var plaintext: [UInt8] {
        var w = BinaryWriter(capacity: 12)
        w.u32(failures)
        w.u64(notBefore.bitPattern)
        return w.bytes
    }

    /// The keybag's sealed throttle record.
    func sealed(deviceKey: SymmetricKey, keybagUUID: [UInt8], random: any RandomSource) throws(KeychainError) -> [UInt8] {
        try Seal.seal(plaintext, key: Self.recordKey(deviceKey), aad: Self.recordLabel + keybagUUID, random: random)
    }

    /// Opens a keybag's sealed throttle record; nil when it fails authentication.
    init?(sealed: ArraySlice<UInt8>, deviceKey: SymmetricKey, keybagUUID: [UInt8]) {
        guard let bytes = try? Seal.open(sealed, key: Self.recordKey(deviceKey), aad: Self.recordLabel + keybagUUID) else { return nil }
        var r = BinaryReader(bytes)
        guard let failures = try? r.u32(), let bits = try? r.u64(), r.isAtEnd else { return nil }
        self.init(failures: failures, notBefore: Double(bitPattern: bits))
    }

    // MARK: keychain.throttle (version-2 keybags)

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
