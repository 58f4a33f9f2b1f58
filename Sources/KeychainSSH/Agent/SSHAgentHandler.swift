import Foundation
import KeychainCore
import Logging

/// What keychaind's agent answers to each request, on the keys of an ``SSHKeyStore``.
///
/// Served: listing, signing, adding (`ssh-add FILE`: the key is stored sealed in the keychain, so it is there after
/// a restart), removing one or all (only SSH keys: the keychain's other keys are not the agent's). Refused with
/// `SSH_AGENT_FAILURE`: lock and unlock (the keychain's own lock governs the keys), key constraints this agent does
/// not honour yet (a constraint must never be dropped silently), RSA signatures with SHA-1, and what the protocol
/// has that this agent does not serve (smart-card keys, unknown extensions).
package struct SSHAgentHandler: Sendable {
    /// The keys.
    package let store: SSHKeyStore
    /// Where failures are logged (never a key or what is signed).
    package let logger: Logger

    /// A handler on `store`.
    package init(store: SSHKeyStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The answer to `request`.
    package func answer(_ request: SSHAgentRequest) -> SSHAgentResponse {
        do {
            switch request {
            case .requestIdentities:
                return .identities(try store.identities())
            case .sign(let key, let data, let flags):
                guard let privateKey = try store.privateKey(blob: key) else { return .failure }
                return .signature(try privateKey.signature(of: data, flags: flags))
            case .addIdentity(let key, let comment, let constraints):
                guard constraints.isEmpty else {
                    logger.notice("an SSH key with constraints was refused: the agent does not honour key constraints yet")
                    return .failure
                }
                try store.add(key, comment: comment)
                return .success
            case .removeIdentity(let key):
                return try store.remove(blob: key) ? .success : .failure
            case .removeAllIdentities:
                _ = try store.removeAll()
                return .success
            case .lock, .unlock:
                return .failure
            case .sessionBind:
                // Accepted and not yet used: the prompts will name the host from it.
                return .success
            case .otherExtension, .unsupported:
                return .failure
            }
        } catch {
            logger.notice("an SSH agent request failed", metadata: ["reason": "\(error.message)"])
            return .failure
        }
    }
}
