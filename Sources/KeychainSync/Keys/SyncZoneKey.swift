import Crypto
import Foundation
import KeychainCore

/// The key of an account's zone (the role of Apple's TLK in CKKS): it wraps the key of every record written while
/// it is current. Each trusted device holds it, wrapped to that device's agreement key with HPKE; the server holds
/// only those wrappings. Removing a device makes a new zone key, wrapped to the devices that remain, so the removed
/// one can open nothing written afterwards.
public struct SyncZoneKey: Sendable {
    /// Names the key in records (`key_id`) and wrappings: 32 lowercase hex digits, the first 12 the time it was
    /// made (milliseconds since 1970), the rest random, so that the newest key sorts last.
    public let keyID: String
    /// The 256-bit key.
    public let key: SymmetricKey

    /// HPKE with X25519, HKDF-SHA256 and AES-256-GCM (RFC 9180, base mode).
    static let ciphersuite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)
    /// The length of an X25519 encapsulated key, which begins a wrapping.
    static let encapsulatedKeyLength = 32

    /// A new random zone key, made at `now`.
    public init(now: Date = Date()) {
        key = SymmetricKey(size: .bits256)
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000)) & 0xFFFF_FFFF_FFFF
        // The time's 6 low bytes, big-endian: 12 hex digits that sort as the time does.
        let time = SyncDevicePublicKeys.hex(withUnsafeBytes(of: milliseconds.bigEndian) { Array($0.suffix(6)) })
        keyID = time + SyncDevicePublicKeys.hex(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }).prefix(20)
    }

    /// A zone key from its parts (as a device stored it).
    /// - Throws: ``KeychainError`` `corruptData` when the key is not 32 bytes or the identifier is not 32 hex digits.
    public init(keyID: String, key: SymmetricKey) throws(KeychainError) {
        guard key.bitCount == 256, Self.isKeyID(keyID) else {
            throw KeychainError(code: .corruptData, message: "A sync zone key is damaged; run `security sync status` and, if it persists, remove and re-add this device.")
        }
        self.keyID = keyID
        self.key = key
    }

    /// Whether `text` has the form of a key identifier.
    static func isKeyID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The HPKE info: what the wrapping is for (this account, this key, this recipient), so that a wrapping moved
    /// to another account, key or device does not open.
    static func info(account: String, keyID: String, recipient: String) -> Data {
        var fields = SyncFields(domain: "keychain-sync/zone-key/v1")
        fields.append(account)
        fields.append(keyID)
        fields.append(recipient)
        return fields.data
    }

    /// This key wrapped to `recipient`: the HPKE encapsulated key (32 bytes) followed by the sealed key.
    public func wrapped(to recipient: SyncDevicePublicKeys, account: String) throws(KeychainError) -> Data {
        do {
            var sender = try HPKE.Sender(
                recipientKey: recipient.agreement, ciphersuite: Self.ciphersuite,
                info: Self.info(account: account, keyID: keyID, recipient: recipient.deviceID))
            let sealed = key.withUnsafeBytes { bytes in Result { try sender.seal(Data(bytes)) } }
            return sender.encapsulatedKey + (try sealed.get())
        } catch {
            throw KeychainError(code: .internal, message: "The zone key could not be wrapped to device \(recipient.deviceID).", cause: error)
        }
    }

    /// Opens a wrapping of key `keyID` made for `device` in `account`.
    /// - Throws: ``KeychainError`` `corruptData` when it does not open: made for another device, key or account,
    ///   or altered.
    public static func unwrap(_ wrapped: Data, keyID: String, account: String, device: SyncDeviceKeys) throws(KeychainError) -> SyncZoneKey {
        guard isKeyID(keyID), wrapped.count > encapsulatedKeyLength else {
            throw KeychainError(code: .corruptData, message: "A wrapped sync zone key is malformed; ask another device of the account to approve this one again.")
        }
        let key: Data
        do {
            var recipient = try HPKE.Recipient(
                privateKey: device.agreement, ciphersuite: ciphersuite,
                info: info(account: account, keyID: keyID, recipient: device.publicKeys.deviceID),
                encapsulatedKey: wrapped.prefix(encapsulatedKeyLength))
            key = try recipient.open(wrapped.dropFirst(encapsulatedKeyLength))
        } catch {
            throw KeychainError(code: .corruptData, message: "A sync zone key wrapped for this device does not open: it was made for another device or altered.", cause: error)
        }
        return try SyncZoneKey(keyID: keyID, key: SymmetricKey(data: key))
    }
}
