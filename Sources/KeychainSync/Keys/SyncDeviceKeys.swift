import Crypto
import Foundation
import KeychainCore

/// A device's public keys, as the other devices and the server know them: an Ed25519 key that signs its requests
/// and the device lists it approves, and an X25519 key that zone keys are wrapped to.
public struct SyncDevicePublicKeys: Sendable, Hashable {
    /// The Ed25519 public key (32 bytes).
    public let signing: Curve25519.Signing.PublicKey
    /// The X25519 public key (32 bytes).
    public let agreement: Curve25519.KeyAgreement.PublicKey

    /// Keys from their raw representations (32 bytes each).
    /// - Throws: ``KeychainError`` `invalidParameter` when either is not a valid key.
    public init(signing: Data, agreement: Data) throws(KeychainError) {
        do {
            self.signing = try Curve25519.Signing.PublicKey(rawRepresentation: signing)
            self.agreement = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: agreement)
        } catch {
            throw KeychainError(code: .invalidParameter, message: "A sync device's public keys must be 32-byte Ed25519 and X25519 keys.")
        }
    }

    /// Keys that are already parsed.
    public init(signing: Curve25519.Signing.PublicKey, agreement: Curve25519.KeyAgreement.PublicKey) {
        self.signing = signing
        self.agreement = agreement
    }

    /// Equal when both keys are.
    public static func == (lhs: SyncDevicePublicKeys, rhs: SyncDevicePublicKeys) -> Bool {
        lhs.signing.rawRepresentation == rhs.signing.rawRepresentation
            && lhs.agreement.rawRepresentation == rhs.agreement.rawRepresentation
    }

    /// Hashes both keys.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(signing.rawRepresentation)
        hasher.combine(agreement.rawRepresentation)
    }

    /// The device's identifier: the first 16 bytes of SHA-256 of its signing key, in lowercase hex (32
    /// characters). The server files requests under it and checks it against the key that signed them.
    public var deviceID: String {
        Self.hex(SHA256.hash(data: signing.rawRepresentation).prefix(16))
    }

    /// What a person compares between two screens: SHA-256 of both keys, its first 16 bytes in eight groups of
    /// four hex digits (`3f1a 09c2 …`).
    public var fingerprint: String {
        var fields = SyncFields(domain: "keychain-sync/fingerprint/v1")
        fields.append(bytes: signing.rawRepresentation)
        fields.append(bytes: agreement.rawRepresentation)
        let hex = Self.hex(SHA256.hash(data: fields.bytes).prefix(16))
        return stride(from: 0, to: hex.count, by: 4).map { start in
            let from = hex.index(hex.startIndex, offsetBy: start)
            return String(hex[from..<hex.index(from, offsetBy: 4)])
        }.joined(separator: " ")
    }

    /// The short code a joining device shows, for `security sync approve CODE` (see ``SyncJoinCode``).
    public var joinCode: SyncJoinCode { SyncJoinCode(keys: self) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        FileDigest.hex(bytes)
    }
}

/// A device's private keys. Kept by the device alone (sealed in its keychain like keychaind's other keys); only
/// ``publicKeys`` leave it.
public struct SyncDeviceKeys: Sendable {
    /// Signs requests to the server and the device lists this device approves.
    public let signing: Curve25519.Signing.PrivateKey
    /// Opens the zone keys wrapped to this device.
    public let agreement: Curve25519.KeyAgreement.PrivateKey

    /// New random keys.
    public init() {
        signing = Curve25519.Signing.PrivateKey()
        agreement = Curve25519.KeyAgreement.PrivateKey()
    }

    /// Keys from their raw representations (32 bytes each), as ``rawRepresentation`` gave them.
    /// - Throws: ``KeychainError`` `corruptData` when they are not keys.
    public init(rawRepresentation: Data) throws(KeychainError) {
        guard rawRepresentation.count == 64 else {
            throw KeychainError(code: .corruptData, message: "The sync device keys are damaged (not 64 bytes); remove this device from sync and join again.")
        }
        do {
            signing = try Curve25519.Signing.PrivateKey(rawRepresentation: rawRepresentation.prefix(32))
            agreement = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation.suffix(32))
        } catch {
            throw KeychainError(code: .corruptData, message: "The sync device keys are damaged; remove this device from sync and join again.")
        }
    }

    /// Both private keys, 64 bytes: to be stored sealed, never in the clear.
    public var rawRepresentation: Data { signing.rawRepresentation + agreement.rawRepresentation }

    /// The public halves.
    public var publicKeys: SyncDevicePublicKeys {
        SyncDevicePublicKeys(signing: signing.publicKey, agreement: agreement.publicKey)
    }
}
