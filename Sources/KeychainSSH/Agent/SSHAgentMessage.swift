import Foundation
import KeychainCore

/// A key constraint of an agent's add request (`ssh-add -t`, `-c`, `-h`).
package enum SSHKeyConstraint: Sendable, Hashable {
    /// `SSH_AGENT_CONSTRAIN_LIFETIME`: the key is forgotten after this many seconds.
    case lifetime(seconds: UInt32)
    /// `SSH_AGENT_CONSTRAIN_CONFIRM`: each use is confirmed by the person.
    case confirm
    /// `restrict-destination-v00@openssh.com`: the hops the key may be used for, as OpenSSH encodes them.
    case restrictDestination([UInt8])
    /// Another `SSH_AGENT_CONSTRAIN_EXTENSION`, which the agent refuses (an unknown constraint must not be dropped).
    case otherExtension(name: String, contents: [UInt8])
}

/// A request to an SSH agent (draft-ietf-sshm-ssh-agent; OpenSSH's PROTOCOL.agent), typed.
package enum SSHAgentRequest: Sendable, Hashable {
    /// `SSH_AGENTC_REQUEST_IDENTITIES` (11).
    case requestIdentities
    /// `SSH_AGENTC_SIGN_REQUEST` (13): sign `data` with the key whose blob is `key`.
    case sign(key: [UInt8], data: [UInt8], flags: UInt32)
    /// `SSH_AGENTC_ADD_IDENTITY` (17) or `SSH_AGENTC_ADD_ID_CONSTRAINED` (25).
    case addIdentity(SSHPrivateKey, comment: String, constraints: [SSHKeyConstraint])
    /// `SSH_AGENTC_REMOVE_IDENTITY` (18).
    case removeIdentity(key: [UInt8])
    /// `SSH_AGENTC_REMOVE_ALL_IDENTITIES` (19).
    case removeAllIdentities
    /// `SSH_AGENTC_LOCK` (22).
    case lock(passphrase: [UInt8])
    /// `SSH_AGENTC_UNLOCK` (23).
    case unlock(passphrase: [UInt8])
    /// `SSH_AGENTC_EXTENSION` (27) `session-bind@openssh.com`: the connection's SSH session, bound by the client.
    case sessionBind(hostKey: [UInt8], sessionID: [UInt8], signature: [UInt8], forwarding: Bool)
    /// Another extension: answered `SSH_AGENT_FAILURE`, as OpenSSH's agent answers extensions it does not know.
    case otherExtension(name: String)
    /// A message type the agent does not serve (smart-card keys among them): answered `SSH_AGENT_FAILURE`.
    case unsupported(type: UInt8)

    /// The largest message, in bytes (OpenSSH's `AGENT_MAX_LEN`, 256 KiB).
    package static let maximumLength = 256 * 1024

    /// Reads a message's contents (its length prefix already taken off): `corruptData` for a malformed one.
    package init(message: [UInt8]) throws(KeychainError) {
        var reader = SSHWireReader(message)
        let type = try reader.byte()
        switch type {
        case 11:
            self = .requestIdentities
        case 13:
            self = .sign(key: try reader.string(), data: try reader.string(), flags: try reader.uint32())
        case 17, 25:
            let key = try SSHPrivateKey.read(from: &reader)
            let comment = String(decoding: try reader.string(), as: UTF8.self)
            var constraints: [SSHKeyConstraint] = []
            if type == 25 {
                while !reader.isAtEnd {
                    switch try reader.byte() {
                    case 1: constraints.append(.lifetime(seconds: try reader.uint32()))
                    case 2: constraints.append(.confirm)
                    case 255:
                        let name = try reader.text()
                        if name == "restrict-destination-v00@openssh.com" {
                            constraints.append(.restrictDestination(try reader.string()))
                        } else {
                            // The contents' format is the extension's own: the rest of the message.
                            constraints.append(.otherExtension(name: name, contents: reader.remaining))
                            _ = try reader.raw(reader.remaining.count)
                        }
                    default:
                        throw KeychainError(code: .corruptData, message: "An SSH agent request carries an unknown key constraint.")
                    }
                }
            }
            self = .addIdentity(key, comment: comment, constraints: constraints)
        case 18:
            self = .removeIdentity(key: try reader.string())
        case 19:
            self = .removeAllIdentities
        case 22:
            self = .lock(passphrase: try reader.string())
        case 23:
            self = .unlock(passphrase: try reader.string())
        case 27:
            let name = try reader.text()
            guard name == "session-bind@openssh.com" else {
                self = .otherExtension(name: name)
                return
            }
            self = .sessionBind(hostKey: try reader.string(), sessionID: try reader.string(), signature: try reader.string(), forwarding: try reader.boolean())
        default:
            self = .unsupported(type: type)
            return
        }
        guard reader.isAtEnd else {
            throw KeychainError(code: .corruptData, message: "An SSH agent request has bytes after its fields.")
        }
    }

    /// The message's contents (without the length prefix), as a client sends it.
    package var message: [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .requestIdentities:
            writer.byte(11)
        case .sign(let key, let data, let flags):
            writer.byte(13)
            writer.string(key)
            writer.string(data)
            writer.uint32(flags)
        case .addIdentity(let key, let comment, let constraints):
            writer.byte(constraints.isEmpty ? 17 : 25)
            key.write(to: &writer)
            writer.string(comment)
            for constraint in constraints {
                switch constraint {
                case .lifetime(let seconds):
                    writer.byte(1)
                    writer.uint32(seconds)
                case .confirm:
                    writer.byte(2)
                case .restrictDestination(let contents):
                    writer.byte(255)
                    writer.string("restrict-destination-v00@openssh.com")
                    writer.string(contents)
                case .otherExtension(let name, let contents):
                    writer.byte(255)
                    writer.string(name)
                    writer.raw(contents)
                }
            }
        case .removeIdentity(let key):
            writer.byte(18)
            writer.string(key)
        case .removeAllIdentities:
            writer.byte(19)
        case .lock(let passphrase):
            writer.byte(22)
            writer.string(passphrase)
        case .unlock(let passphrase):
            writer.byte(23)
            writer.string(passphrase)
        case .sessionBind(let hostKey, let sessionID, let signature, let forwarding):
            writer.byte(27)
            writer.string("session-bind@openssh.com")
            writer.string(hostKey)
            writer.string(sessionID)
            writer.string(signature)
            writer.boolean(forwarding)
        case .otherExtension(let name):
            writer.byte(27)
            writer.string(name)
        case .unsupported(let type):
            writer.byte(type)
        }
        return writer.bytes
    }
}

/// One key an agent lists: its blob and comment.
package struct SSHAgentIdentity: Sendable, Hashable {
    /// The public key's wire blob.
    package var key: [UInt8]
    /// The comment (`ssh-add -l` prints it).
    package var comment: String

    /// An identity of `key` with `comment`.
    package init(key: [UInt8], comment: String) {
        self.key = key
        self.comment = comment
    }
}

/// An SSH agent's answer, typed.
package enum SSHAgentResponse: Sendable, Hashable {
    /// `SSH_AGENT_FAILURE` (5).
    case failure
    /// `SSH_AGENT_SUCCESS` (6).
    case success
    /// `SSH_AGENT_IDENTITIES_ANSWER` (12).
    case identities([SSHAgentIdentity])
    /// `SSH_AGENT_SIGN_RESPONSE` (14): a wire signature blob.
    case signature([UInt8])

    /// The message's contents (without the length prefix).
    package var message: [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .failure:
            writer.byte(5)
        case .success:
            writer.byte(6)
        case .identities(let identities):
            writer.byte(12)
            writer.uint32(UInt32(identities.count))
            for identity in identities {
                writer.string(identity.key)
                writer.string(identity.comment)
            }
        case .signature(let signature):
            writer.byte(14)
            writer.string(signature)
        }
        return writer.bytes
    }

    /// Reads an answer's contents, as a client does.
    package init(message: [UInt8]) throws(KeychainError) {
        var reader = SSHWireReader(message)
        switch try reader.byte() {
        case 5: self = .failure
        case 6: self = .success
        case 12:
            let count = try reader.uint32()
            var identities: [SSHAgentIdentity] = []
            for _ in 0..<count { identities.append(SSHAgentIdentity(key: try reader.string(), comment: String(decoding: try reader.string(), as: UTF8.self))) }
            self = .identities(identities)
        case 14: self = .signature(try reader.string())
        default: throw KeychainError(code: .corruptData, message: "An SSH agent's answer is of an unknown type.")
        }
        guard reader.isAtEnd else { throw KeychainError(code: .corruptData, message: "An SSH agent's answer has bytes after its fields.") }
    }
}

/// The agent protocol's frames: a big-endian `uint32` length, then that many bytes.
package enum SSHAgentFrame {
    /// `message` framed.
    package static func frame(_ message: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(message)
        return writer.bytes
    }

    /// The first complete message in `buffer` and how many bytes it took, nil when more must be read;
    /// `corruptData` when the stated length is 0 or over ``SSHAgentRequest/maximumLength``.
    package static func next(in buffer: [UInt8]) throws(KeychainError) -> (message: [UInt8], consumed: Int)? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(UInt32(buffer[0]) << 24 | UInt32(buffer[1]) << 16 | UInt32(buffer[2]) << 8 | UInt32(buffer[3]))
        guard length >= 1, length <= SSHAgentRequest.maximumLength else {
            throw KeychainError(code: .corruptData, message: "An SSH agent message of \(length) bytes is refused (at most 256 KiB).")
        }
        guard buffer.count >= 4 + length else { return nil }
        return (Array(buffer[4..<4 + length]), 4 + length)
    }
}
