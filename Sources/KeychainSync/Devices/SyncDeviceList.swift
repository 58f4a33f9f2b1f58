import Crypto
import Foundation
import KeychainCore

/// A device in an account's list.
public struct SyncDeviceEntry: Sendable, Hashable {
    /// Its public keys.
    public var keys: SyncDevicePublicKeys
    /// What people call it (`laptop`), at most 256 bytes of UTF-8.
    public var name: String
    /// When it joined, seconds since 1970.
    public var added: UInt64

    /// An entry.
    public init(keys: SyncDevicePublicKeys, name: String, added: UInt64) {
        self.keys = keys
        self.name = name
        self.added = added
    }

    /// Its identifier (``SyncDevicePublicKeys/deviceID``).
    public var deviceID: String { keys.deviceID }
}

/// The devices of an account, at one version. Each version is signed by a device of the version before it (the
/// first by the device that made the account), and devices accept a new version only after checking that: the
/// server stores the lists and hands them out, but cannot add a device nobody approved.
public struct SyncDeviceList: Sendable, Hashable {
    /// The account.
    public var account: String
    /// The version: 1 for the account's first list, then one more for each change.
    public var version: UInt64
    /// The trusted devices, ordered by identifier.
    public private(set) var devices: [SyncDeviceEntry]

    /// The most devices a list holds.
    public static let maximumDevices = 256
    static let domain = "keychain-sync/device-list/v1"

    /// A list of `devices` (ordered here by identifier; one entry per identifier).
    /// - Throws: ``KeychainError`` `invalidParameter` for an empty list, too many devices, a name too long or a
    ///   device listed twice.
    public init(account: String, version: UInt64, devices: [SyncDeviceEntry]) throws(KeychainError) {
        guard !devices.isEmpty, devices.count <= Self.maximumDevices else {
            throw KeychainError(code: .invalidParameter, message: "A sync device list holds 1 to \(Self.maximumDevices) devices, not \(devices.count).")
        }
        guard devices.allSatisfy({ $0.name.utf8.count <= 256 }) else {
            throw KeychainError(code: .invalidParameter, message: "A sync device's name is at most 256 bytes.")
        }
        let sorted = devices.sorted { $0.deviceID < $1.deviceID }
        guard Set(sorted.map(\.deviceID)).count == sorted.count else {
            throw KeychainError(code: .invalidParameter, message: "A sync device list names a device twice.")
        }
        self.account = account
        self.version = version
        self.devices = sorted
    }

    /// The device `id`, if listed.
    public func device(_ id: String) -> SyncDeviceEntry? {
        devices.first { $0.deviceID == id }
    }

    /// The bytes that are signed and stored (the format is fixed by a golden vector).
    public var canonicalBytes: Data {
        var fields = SyncFields(domain: Self.domain)
        fields.append(account)
        fields.append(version)
        fields.append(UInt64(devices.count))
        for device in devices {
            fields.append(bytes: device.keys.signing.rawRepresentation)
            fields.append(bytes: device.keys.agreement.rawRepresentation)
            fields.append(device.name)
            fields.append(device.added)
        }
        return fields.data
    }

    /// Reads ``canonicalBytes``.
    /// - Throws: ``KeychainError`` `corruptData` when they are not a device list.
    public init(canonicalBytes: Data) throws(KeychainError) {
        do throws(SyncFormatError) {
            var reader = try SyncFieldReader(canonicalBytes, domain: Self.domain)
            let account = try reader.string(maximum: 128)
            let version = try reader.uint64()
            let count = try reader.uint64()
            guard count >= 1, count <= UInt64(Self.maximumDevices) else { throw SyncFormatError("it lists \(count) devices") }
            var devices: [SyncDeviceEntry] = []
            for _ in 0..<count {
                let signing = try reader.field(maximum: 32)
                let agreement = try reader.field(maximum: 32)
                let keys: SyncDevicePublicKeys
                do {
                    keys = try SyncDevicePublicKeys(signing: Data(signing), agreement: Data(agreement))
                } catch {
                    throw SyncFormatError("a device's keys are not keys")
                }
                devices.append(SyncDeviceEntry(keys: keys, name: try reader.string(maximum: 256), added: try reader.uint64()))
            }
            try reader.finish()
            let list = try? SyncDeviceList(account: account, version: version, devices: devices)
            guard let list, list.canonicalBytes == canonicalBytes else { throw SyncFormatError("it is not in canonical order") }
            self = list
        } catch {
            throw KeychainError(code: .corruptData, message: "A sync device list is malformed (\(error.reason)); it is ignored.")
        }
    }

    /// This list signed by `signer`.
    public func signed(by signer: SyncDeviceKeys) throws(KeychainError) -> SignedSyncDeviceList {
        let bytes = canonicalBytes
        do {
            return SignedSyncDeviceList(
                list: self, bytes: bytes, signer: signer.publicKeys.deviceID,
                signature: try signer.signing.signature(for: bytes))
        } catch {
            throw KeychainError(code: .internal, message: "The sync device list could not be signed.", cause: error)
        }
    }

    /// The next version: this list's devices with `adding` added and the devices in `removing` left out.
    public func successor(adding: [SyncDeviceEntry] = [], removing: Set<String> = []) throws(KeychainError) -> SyncDeviceList {
        var next = devices.filter { !removing.contains($0.deviceID) }
        for entry in adding where !next.contains(where: { $0.deviceID == entry.deviceID }) { next.append(entry) }
        return try SyncDeviceList(account: account, version: version + 1, devices: next)
    }
}

/// A device list with its signature, as stored on the server.
public struct SignedSyncDeviceList: Sendable, Hashable {
    /// The list.
    public let list: SyncDeviceList
    /// Its canonical bytes, which the signature covers.
    public let bytes: Data
    /// The identifier of the device that signed it.
    public let signer: String
    /// The Ed25519 signature of ``bytes``.
    public let signature: Data

    init(list: SyncDeviceList, bytes: Data, signer: String, signature: Data) {
        self.list = list
        self.bytes = bytes
        self.signer = signer
        self.signature = signature
    }

    /// A signed list as the server gave it; the signature is checked by ``verifiedFirst(account:creator:)`` or
    /// ``verifiedSuccessor(of:)``, not here.
    /// - Throws: ``KeychainError`` `corruptData` when `bytes` are not a device list.
    public init(bytes: Data, signer: String, signature: Data) throws(KeychainError) {
        self.list = try SyncDeviceList(canonicalBytes: bytes)
        self.bytes = bytes
        self.signer = signer
        self.signature = signature
    }

    /// Whether the signature is `key`'s.
    func isSigned(by key: SyncDevicePublicKeys) -> Bool {
        key.deviceID == signer && key.signing.isValidSignature(signature, for: bytes)
    }

    /// The list, when it is the first of `account` (version 1) signed by a device it lists: what the device that made
    /// the account signed, or (for a device joining) what it is shown.
    /// - Throws: ``KeychainError`` `verifyFailed` otherwise.
    public func verifiedFirst(account: String) throws(KeychainError) -> SyncDeviceList {
        guard list.account == account, list.version == 1, let signer = list.device(signer), isSigned(by: signer.keys) else {
            throw KeychainError(code: .verifyFailed, message: "The first device list of sync account \(account) is not signed by a device it lists; the server's copy cannot be trusted.")
        }
        return list
    }

    /// The list, when it follows `trusted` (same account, the next version) and a device of `trusted` signed it.
    /// - Throws: ``KeychainError`` `verifyFailed` otherwise: signed by a device that is not (or no longer) trusted,
    ///   by nobody, for another account, or not the next version (ask for the versions in between).
    public func verifiedSuccessor(of trusted: SyncDeviceList) throws(KeychainError) -> SyncDeviceList {
        guard list.account == trusted.account else {
            throw KeychainError(code: .verifyFailed, message: "A device list for another account was offered; it is ignored.")
        }
        guard list.version == trusted.version + 1 else {
            throw KeychainError(code: .verifyFailed, message: "Device list version \(list.version) does not follow version \(trusted.version); each version in between must be checked first.")
        }
        guard let signer = trusted.device(signer), isSigned(by: signer.keys) else {
            throw KeychainError(
                code: .verifyFailed,
                message: "Device list version \(list.version) is not signed by a device of version \(trusted.version); the server may have been tampered with, and the list is refused.")
        }
        return list
    }

    /// The newest list reached from `trusted` through `chain` (ascending versions), each checked against the one
    /// before; `chain` may start with versions `trusted` already has.
    public static func verifiedChain(_ chain: [SignedSyncDeviceList], from trusted: SyncDeviceList) throws(KeychainError) -> SyncDeviceList {
        var current = trusted
        for signed in chain where signed.list.version > current.version {
            current = try signed.verifiedSuccessor(of: current)
        }
        return current
    }
}
