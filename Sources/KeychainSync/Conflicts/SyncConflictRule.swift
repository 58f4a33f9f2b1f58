import Foundation

/// What decides between two changes of one item: when it was made, by which device, whether it deletes, and a
/// digest of its content. Every device orders two stamps the same way, so after a partition heals every device
/// keeps the same change, whatever order the changes arrived in.
///
/// The rule (compare CKKS, where the server's order decides and a device that loses re-applies the server's
/// record): **the newest modification wins**; at the same millisecond, **the greater device identifier**; then a
/// **delete** wins over a write; then the greater content digest (two identical stamps are the same change). A
/// delete is a change like any other: an edit made after it (by its clock) brings the item back, an edit made
/// before it is lost. Clocks matter, as they do for Apple's `kSecAttrModificationDate`: a device whose clock runs
/// ahead wins ties it should not; the server's sequence only orders delivery, never the outcome.
public struct SyncChangeStamp: Sendable, Hashable, Comparable {
    /// The change's modification time, milliseconds since 1970.
    public var modified: UInt64
    /// The device that made it.
    public var device: String
    /// Whether it deletes the item.
    public var deleted: Bool
    /// SHA-256 of the change's content (the payload), for the last tie.
    public var digest: Data

    /// A stamp.
    public init(modified: UInt64, device: String, deleted: Bool, digest: Data) {
        self.modified = modified
        self.device = device
        self.deleted = deleted
        self.digest = digest
    }

    /// Whether `lhs` loses to `rhs` under the rule above.
    public static func < (lhs: SyncChangeStamp, rhs: SyncChangeStamp) -> Bool {
        if lhs.modified != rhs.modified { return lhs.modified < rhs.modified }
        if lhs.device != rhs.device { return Array(lhs.device.utf8).lexicographicallyPrecedes(Array(rhs.device.utf8)) }
        if lhs.deleted != rhs.deleted { return !lhs.deleted }
        return Array(lhs.digest).lexicographicallyPrecedes(Array(rhs.digest))
    }
}

/// Chooses between the change a device holds and one that arrives.
public enum SyncConflictRule {
    /// Which change to keep.
    public enum Outcome: Sendable, Hashable {
        /// Keep the local change (and, if the server holds the other, write it back).
        case keepLocal
        /// Apply the incoming change.
        case takeIncoming
        /// They are the same change.
        case same
    }

    /// The outcome for `local` and `incoming` under ``SyncChangeStamp``'s rule.
    public static func resolve(local: SyncChangeStamp, incoming: SyncChangeStamp) -> Outcome {
        if local == incoming { return .same }
        return local < incoming ? .takeIncoming : .keepLocal
    }
}
