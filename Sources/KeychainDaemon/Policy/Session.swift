import Foundation
import KeychainCore
import Synchronization

/// One connection's peer, as the kernel identified it when it connected, and what it has proved since.
package final class Session: Sendable {
    package let identity: PeerIdentity
    /// The `security` tool installed beside this keychaind (same folder, same contents as at start-up):
    /// the user's own admin tool, which may reach every access group and manage the keychain, each time with the
    /// person's approval (``RequestDispatcher/approve(_:session:engine:)``).
    package let isAdminTool: Bool
    /// The keychain this connection's requests use: its user's (``ServedKeychains``).
    package let keychain: ServedKeychain
    /// Whether the program was confirmed as the one its private group belongs to (``RequestDispatcher/confirmOwnGroup(_:)``),
    /// which is checked once per connection.
    let ownGroupConfirmed = Mutex(false)
    /// The approvals the person gave "only this time" on this connection (by subject): one command of the tool is
    /// one "time", however many requests it sends (an import of 10,000 items is 100), so they are not asked again.
    let approvedOnce = Mutex<Set<String>>([])
    /// The access policy of this connection's last item request, the groups that request claimed, whether the
    /// program was unregistered, and the registry generation it was worked out from
    /// (``ServedKeychain/registryAndGeneration()``): worked out again only when the claim or the registry changes,
    /// instead of for every request.
    let cachedPolicy = Mutex<(generation: Int, claim: [String]?, unregistered: Bool, policy: AccessPolicy)?>(nil)
    /// The name an unregistered program's items had before 0.30 (its executable's file name), worked out once.
    let legacyPrivateGroup: String?

    package init(identity: PeerIdentity, isAdminTool: Bool, keychain: ServedKeychain) {
        self.identity = identity
        self.isAdminTool = isAdminTool
        self.keychain = keychain
        if identity.untrusted == nil, case .executable(let path) = identity.program {
            legacyPrivateGroup = NSString(string: path).lastPathComponent
        } else {
            legacyPrivateGroup = nil
        }
    }

    /// The engine of this connection's keychain.
    package var engine: KeychainEngine { keychain.engine }

}
