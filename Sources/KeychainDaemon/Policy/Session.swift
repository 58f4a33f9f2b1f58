import KeychainCore
import Synchronization

/// One connection's peer, as the kernel identified it when it connected, and what it has proved since.
package final class Session: Sendable {
    package let identity: PeerIdentity
    /// The `security` tool installed beside this keychaind (same folder, same contents as at start-up):
    /// the user's own admin tool, which may use every access group once it has given the passcode.
    package let isAdminTool: Bool
    private let passcodeGiven = Atomic<Bool>(false)

    package init(identity: PeerIdentity, isAdminTool: Bool) {
        self.identity = identity
        self.isAdminTool = isAdminTool
    }

    /// Whether this connection has given the keychain's passcode.
    var authenticated: Bool { passcodeGiven.load(ordering: .acquiring) }
    func markAuthenticated() { passcodeGiven.store(true, ordering: .releasing) }
}
