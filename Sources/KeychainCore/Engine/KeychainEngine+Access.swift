import Foundation

/// Which access groups a caller's query reaches.
extension KeychainEngine {
    func visibleGroups(_ q: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [String]? {
        if let group = q.accessGroup {
            guard caller.allows(group) else { throw missingEntitlement(group, caller: caller) }
            return [group]
        }
        if caller.unrestricted { return nil }
        guard !caller.groups.isEmpty else { throw noEntitlements() }
        return caller.groups
    }

    func missingEntitlement(_ group: String, caller: AccessPolicy) -> KeychainError {
        KeychainError(
            code: .missingEntitlement,
            message: "This process is not entitled to access group '\(group)'; its groups are \(caller.groups). Add the group to 'keychain-access-groups' in the plist named by KEYCHAIN_ENTITLEMENTS.")
    }

    func noEntitlements() -> KeychainError {
        KeychainError(
            code: .missingEntitlement, message: "This process has no keychain access groups. Give it 'keychain-access-groups' or 'application-identifier' in the plist named by KEYCHAIN_ENTITLEMENTS.")
    }

    /// Reads the rows matching `q`, decrypting and verifying each; stops after `limit` matches.
}
