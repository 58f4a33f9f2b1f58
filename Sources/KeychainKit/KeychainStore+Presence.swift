import Foundation
import KeychainClient
import KeychainCore

extension KeychainStore {
    /// Makes the keychain forget every proof of the user's presence it holds, for every program and context
    /// (`security authorize --reset`): the next read of a protected item asks again.
    ///
    /// Through keychaind only the `security` tool installed beside it may (others get
    /// `KeychainStatus/missingEntitlement`); in-process, whoever can open the keychain's files can.
    ///
    /// - Returns: How many contexts held a proof.
    @discardableResult
    public func resetAuthorizations() throws(KeychainError) -> Int {
        try connection.resetAuthorizations()
    }
}
