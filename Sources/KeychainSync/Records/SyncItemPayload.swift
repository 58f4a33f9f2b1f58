import Crypto
import Foundation
import KeychainCore

/// What a record carries once opened: one keychain item (its class, every attribute as the engine stores it,
/// access group and accessibility included, and its secret) or the deletion of one, with the stamp the conflict
/// rule compares. Nothing of it reaches the server in the clear: it is the plaintext ``SyncRecordSeal`` seals.
///
/// The layout (`keychain-sync/item/v1`, fixed by a golden vector): the class code, whether it deletes (0 or 1),
/// the modification time in milliseconds, the writing device, then for an item the attributes in the engine's own
/// record encoding (``ItemRecord``) and the secret (a presence flag, then the bytes).
public struct SyncItemPayload: Sendable, Hashable {
    /// The item's class.
    package var itemClass: ItemClass
    /// The item's attributes (empty for a deletion).
    package var attributes: [String: AttributeValue]
    /// The item's secret, when it has one (never for a deletion).
    package var data: Data?
    /// What the conflict rule compares.
    public var stamp: SyncChangeStamp

    static let domain = "keychain-sync/item/v1"
    /// The largest payload read: an item's attributes and secret fit far below it.
    static let maximumSize = 256 * 1024

    private init(itemClass: ItemClass, attributes: [String: AttributeValue], data: Data?, stamp: SyncChangeStamp) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.stamp = stamp
    }

    /// An item's change as `device` made it at `modified` (milliseconds since 1970), its stamp's digest that of
    /// its encoding.
    package init(item itemClass: ItemClass, attributes: [String: AttributeValue], data: Data?, modified: UInt64, device: String) {
        self.init(
            itemClass: itemClass, attributes: attributes, data: data,
            stamp: SyncChangeStamp(modified: modified, device: device, deleted: false, digest: Data()))
        stamp.digest = Self.digest(encoded)
    }

    /// The deletion of an item of `itemClass` by `device` at `modified`.
    package init(deletionOf itemClass: ItemClass, modified: UInt64, device: String) {
        self.init(
            itemClass: itemClass, attributes: [:], data: nil,
            stamp: SyncChangeStamp(modified: modified, device: device, deleted: true, digest: Data()))
        stamp.digest = Self.digest(encoded)
    }

    /// Whether it deletes the item.
    public var isDeletion: Bool { stamp.deleted }

    /// The bytes sealed into a record.
    public var encoded: Data {
        var fields = SyncFields(domain: Self.domain)
        fields.append(itemClass.rawValue)
        fields.append(UInt64(stamp.deleted ? 1 : 0))
        fields.append(stamp.modified)
        fields.append(stamp.device)
        if !stamp.deleted {
            fields.append(bytes: ItemRecord.encode(attributes))
            fields.append(UInt64(data == nil ? 0 : 1))
            fields.append(bytes: data ?? Data())
        }
        return fields.data
    }

    /// Reads ``encoded``; the stamp's digest is SHA-256 of `bytes`, so two devices compute the same.
    /// - Throws: ``KeychainError`` `corruptData` when the bytes are not a payload (a record that opened is then
    ///   from a newer format or damaged; it is not applied).
    public init(encoded bytes: Data) throws(KeychainError) {
        guard bytes.count <= Self.maximumSize else {
            throw KeychainError(code: .corruptData, message: "A synced item is larger than \(Self.maximumSize) bytes; it is not applied.")
        }
        do throws(SyncFormatError) {
            var reader = try SyncFieldReader(bytes, domain: Self.domain)
            guard let itemClass = ItemClass(rawValue: try reader.string(maximum: 8)), ItemClass.stored.contains(itemClass) else {
                throw SyncFormatError("its class is not one that is stored")
            }
            let deleted = try reader.uint64()
            guard deleted <= 1 else { throw SyncFormatError("its deletion flag is \(deleted)") }
            let modified = try reader.uint64()
            let device = try reader.string(maximum: 64)
            var attributes: [String: AttributeValue] = [:]
            var data: Data?
            if deleted == 0 {
                do {
                    attributes = try ItemRecord.decode(try reader.field(maximum: Self.maximumSize))
                } catch let error as SyncFormatError {
                    throw error
                } catch {
                    throw SyncFormatError("its attributes are malformed")
                }
                let hasData = try reader.uint64()
                let secret = try reader.field(maximum: Self.maximumSize)
                guard hasData <= 1, hasData == 1 || secret.isEmpty else { throw SyncFormatError("its secret flag is malformed") }
                data = hasData == 1 ? Data(secret) : nil
            }
            try reader.finish()
            self.init(
                itemClass: itemClass, attributes: attributes, data: data,
                stamp: SyncChangeStamp(modified: modified, device: device, deleted: deleted == 1, digest: SyncItemPayload.digest(bytes)))
        } catch {
            throw KeychainError(code: .corruptData, message: "A synced item is malformed (\(error.reason)); it is not applied.")
        }
    }

    /// SHA-256 of an encoded payload, the conflict rule's last tie-breaker.
    static func digest(_ bytes: Data) -> Data {
        Data(SHA256.hash(data: bytes))
    }
}

/// Which items leave the device: Apple's rule for iCloud Keychain.
public enum SyncEligibility {
    /// Why an item stays on this device, or nil when it syncs.
    package static func reasonToStay(itemClass: ItemClass, attributes: [String: AttributeValue]) -> String? {
        guard ItemClass.stored.contains(itemClass) else { return "an identity syncs as its certificate and key" }
        guard case .int(let sync)? = attributes["sync"], sync != 0 else { return "it is not synchronizable" }
        let protection = attributes["pdmn"]?.stringValue.flatMap(ProtectionClass.init(rawValue:)) ?? .whenUnlocked
        guard protection.migratesToOtherDevices else { return "its accessibility is ThisDeviceOnly" }
        if case .data(let bytes)? = attributes["accc"] {
            guard let control = AccessControl(encoded: bytes) else { return "its access control cannot be read" }
            guard control.protection.migratesToOtherDevices else { return "its access control's accessibility is ThisDeviceOnly" }
            guard !control.isProtected else { return "it needs the user's presence, which stays with this device" }
        }
        if let token = attributes["tkid"]?.stringValue, !token.isEmpty { return "its key lives in a token" }
        return nil
    }
}

extension ProtectionClass {
    /// Whether items of the class may leave the device (every class but the ThisDeviceOnly ones and the passcode
    /// class).
    var migratesToOtherDevices: Bool {
        switch self {
        case .whenUnlocked, .afterFirstUnlock, .always: true
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: false
        }
    }
}
