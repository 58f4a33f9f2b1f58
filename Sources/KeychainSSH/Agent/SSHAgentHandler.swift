import Foundation
import KeychainCore
import Logging
import Synchronization

/// What keychaind's agent answers to each request, on the keys of an ``SSHKeyStore``.
///
/// - Listing and signing: keys added through the agent and token keys tagged for SSH. A destination-constrained key
///   (`ssh-add -h`) is listed only where its hops permit and signs only a login on a bound session it permits. A key
///   added with `-c` signs after the person confirms; a key whose access control asks for presence, after the
///   person proves it — per use, the prompt naming the program that asked (as the kernel identified it) and the host
///   its session is bound to.
/// - Adding (`ssh-add FILE`, with `-t`, `-c`, `-h`): the key is stored sealed in the keychain, with its constraints,
///   so it is there after a restart until its lifetime ends. An unknown constraint refuses the add.
/// - Removing one or all (`-d`, `-D`): only keys the agent added; the keychain's other keys and items stay.
/// - Locking (`ssh-add -x`) and unlocking (`-X`) take the keychain passcode, and are refused when the keychain has
///   none: a lock another passphrase could lift would be weaker than the keychain's own.
/// - Refused with `SSH_AGENT_FAILURE`: RSA signatures with SHA-1, smart-card requests, unknown extensions.
package final class SSHAgentHandler: Sendable {
    /// The keys.
    package let store: SSHKeyStore
    /// Where failures are logged (never a key or what is signed).
    package let logger: Logger
    /// The prompter that asks the person at the peer's seat (pinentry on the display, else on its terminal).
    package let prompter: @Sendable (SSHAgentPeer) -> any PresencePrompter
    private let locked = Mutex(false)

    /// A handler on `store`, asking the person through `prompter`.
    package init(store: SSHKeyStore, logger: Logger, prompter: @escaping @Sendable (SSHAgentPeer) -> any PresencePrompter) {
        self.store = store
        self.logger = logger
        self.prompter = prompter
    }

    /// Whether the agent is locked (`ssh-add -x`).
    package var isLocked: Bool { locked.withLock { $0 } }

    /// The answer to `request` on `connection`.
    package func answer(_ request: SSHAgentRequest, connection: inout SSHAgentConnection) -> SSHAgentResponse {
        do {
            if isLocked {
                switch request {
                case .requestIdentities: return .identities([])
                case .unlock(let passphrase): return try unlock(passphrase)
                default: return .failure
                }
            }
            switch request {
            case .requestIdentities:
                let listed = try store.keys().filter { $0.constraints.destinations.permit(connection.bindings, user: nil) }
                return .identities(listed.map { SSHAgentIdentity(key: $0.publicKey.blob, comment: $0.comment) })
            case .sign(let blob, let data, let flags):
                return try sign(blob, data: data, flags: flags, connection: connection)
            case .addIdentity(let key, let comment, let constraints):
                try store.add(key, comment: comment, constraints: try SSHKeyConstraints(constraints, now: store.now()))
                return .success
            case .removeIdentity(let key):
                return try store.remove(blob: key) ? .success : .failure
            case .removeAllIdentities:
                _ = try store.removeAll()
                return .success
            case .lock(let passphrase):
                return try lock(passphrase)
            case .unlock:
                return .failure
            case .sessionBind(let hostKey, let sessionID, let signature, let forwarding):
                return bind(hostKey: hostKey, sessionID: sessionID, signature: signature, forwarding: forwarding, connection: &connection)
            case .otherExtension, .unsupported:
                return .failure
            }
        } catch {
            logger.notice("an SSH agent request failed", metadata: ["reason": "\(error.message)"])
            return .failure
        }
    }

    private func sign(_ blob: [UInt8], data: [UInt8], flags: UInt32, connection: SSHAgentConnection) throws(KeychainError) -> SSHAgentResponse {
        guard let key = try store.key(blob: blob) else { return .failure }
        if !key.constraints.destinations.isEmpty {
            if let refusal = Self.destinationRefusal(key, data: data, bindings: connection.bindings) {
                logger.notice("a destination-constrained SSH key was refused", metadata: ["reason": "\(refusal)", "program": "\(connection.peer.program)"])
                return .failure
            }
        }
        let peer = connection.peer
        let caller = SSHKeyStore.caller.identified(as: "ssh-agent client \(peer.program)", name: peer.displayName)
        let destination = connection.destination.map { "to log in to \($0)" } ?? "for a signature (the program named no host)"
        let reason = "SSH key “\(key.comment.prefix(200))” (\(key.publicKey.fingerprint)), \(destination)."
        let prompter = prompter(peer)
        if key.constraints.confirm {
            let text = PromptText(title: "SSH key", description: "\(peer.displayName) wants to use the \(reason)\n\nAllow?")
            guard case .answered(true) = prompter.confirm(text) else {
                logger.notice("the use of an SSH key was not confirmed", metadata: ["program": "\(peer.program)"])
                return .failure
            }
        }
        return .signature(try store.sign(with: key, data: data, flags: flags, caller: caller, prompter: prompter, reason: reason))
    }

    /// Why `key`'s destination constraints refuse signing `data` on a connection bound to `bindings`, or nil when
    /// they permit it (following OpenSSH's agent): only a login request, on a bound connection, whose session is the
    /// last one bound (and whose host key, when the request names one, is that session's), for a user and over hops
    /// the constraints permit.
    static func destinationRefusal(_ key: SSHAgentKey, data: [UInt8], bindings: [SSHSessionBinding]) -> String? {
        guard let last = bindings.last else { return "the connection has no bound session" }
        guard let request = SSHUserAuthRequest(data, key: key.publicKey.blob) else { return "what is signed is not a login" }
        guard request.sessionID == last.sessionID else { return "the login is for another session than the one bound" }
        guard !last.forwarding else { return "the last bound session forwards the agent" }
        if bindings.count > 1, request.hostKey == nil { return "a forwarded login does not name its host key" }
        if let hostKey = request.hostKey, hostKey != last.hostKey { return "the login names another host key than the session's" }
        guard key.constraints.destinations.permit(bindings, user: request.user) else { return "the host or user is not permitted" }
        return nil
    }

    private func bind(
        hostKey: [UInt8], sessionID: [UInt8], signature: [UInt8], forwarding: Bool, connection: inout SSHAgentConnection
    ) -> SSHAgentResponse {
        guard let key = try? SSHPublicKey(blob: hostKey), key.verifies(signature, of: sessionID) else {
            logger.notice("an SSH session binding was refused: the host key's signature does not verify")
            return .failure
        }
        let binding = SSHSessionBinding(hostKey: hostKey, sessionID: sessionID, forwarding: forwarding)
        if let same = connection.bindings.first(where: { $0.sessionID == sessionID }) {
            // The same session bound again: fine when nothing changed.
            return same == binding ? .success : .failure
        }
        guard connection.bindings.count < SSHAgentConnection.maximumBindings else { return .failure }
        // A session bound to log in is the last: nothing is bound after it (OpenSSH's rule).
        if let last = connection.bindings.last, !last.forwarding { return .failure }
        connection.bindings.append(binding)
        return .success
    }

    private func lock(_ passphrase: [UInt8]) throws(KeychainError) -> SSHAgentResponse {
        guard store.engine.lockState != .noPasscode else {
            logger.notice("ssh-add -x was refused: the keychain has no passcode to lock the agent with; set one with security set-keychain-password")
            return .failure
        }
        try store.engine.verifyPasscode(String(decoding: passphrase, as: UTF8.self))
        locked.withLock { $0 = true }
        logger.notice("the SSH agent was locked")
        return .success
    }

    private func unlock(_ passphrase: [UInt8]) throws(KeychainError) -> SSHAgentResponse {
        try store.engine.verifyPasscode(String(decoding: passphrase, as: UTF8.self))
        locked.withLock { $0 = false }
        logger.notice("the SSH agent was unlocked")
        return .success
    }
}
