/// What a read does when it meets a damaged row: one whose plaintext columns are missing or of the wrong type,
/// or whose sealed attributes or secret fail authentication (a flipped byte, a truncated blob, a row altered by
/// hand). A damaged item is never passed over in silence and never deleted.
enum DamagedRowPolicy: Equatable {
    /// Fail with `errSecDecode`: a query for a limited number of items (`kSecMatchLimitOne` or a count), where
    /// the damaged item might have been one of the answers.
    case fail
    /// Skip it and log how many were skipped (never the item's contents); fail with `errSecDecode` when no intact
    /// item matched, so a damaged item never turns into `errSecItemNotFound`. `kSecMatchLimitAll`, update, delete.
    case skipUnlessNoneIntact
    /// Skip it and log how many were skipped: a backup saves the intact items.
    case skip

    /// The policy of a find: `.fail` for a limited number of items, `.skipUnlessNoneIntact` for all of them.
    static func forQuery(_ q: ItemQuery) -> DamagedRowPolicy {
        q.limit.maximum == nil ? .skipUnlessNoneIntact : .fail
    }
}
