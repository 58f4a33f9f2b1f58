import Foundation
import KeychainCore

/// One hop of a destination constraint (`ssh-add -h`): a user and host name, and the host keys that identify the
/// host. An empty host name with no keys is the origin: the machine the agent runs on.
package struct SSHDestinationHop: Sendable, Hashable {
    /// The user the key may log in as on this hop; empty: any.
    package var user: String
    /// The host's name as `ssh-add -h` gave it; empty for the origin.
    package var host: String
    /// The host's keys, and whether each is a certificate authority's.
    package var keys: [(blob: [UInt8], isCA: Bool)]

    /// A hop of `user`@`host` identified by `keys`.
    package init(user: String, host: String, keys: [(blob: [UInt8], isCA: Bool)]) {
        self.user = user
        self.host = host
        self.keys = keys
    }

    /// Whether this is the origin hop (no host).
    package var isOrigin: Bool { host.isEmpty && keys.isEmpty }

    /// Whether `hostKey` (a wire blob) is one of this hop's keys. Host certificates are not accepted: a hop named
    /// only by a certificate authority's key matches no host key this agent is shown.
    package func identifies(_ hostKey: [UInt8]) -> Bool {
        keys.contains { !$0.isCA && $0.blob == hostKey }
    }

    package static func == (lhs: SSHDestinationHop, rhs: SSHDestinationHop) -> Bool {
        lhs.user == rhs.user && lhs.host == rhs.host && lhs.keys.map(\.blob) == rhs.keys.map(\.blob)
            && lhs.keys.map(\.isCA) == rhs.keys.map(\.isCA)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(user)
        hasher.combine(host)
        for key in keys {
            hasher.combine(key.blob)
            hasher.combine(key.isCA)
        }
    }
}

/// One permitted step of a key's use: from one hop to the next (OpenSSH's `restrict-destination-v00@openssh.com`).
package struct SSHDestinationConstraint: Sendable, Hashable {
    /// Where the connection comes from (the origin for the first hop).
    package var from: SSHDestinationHop
    /// Where it may go.
    package var to: SSHDestinationHop

    /// A step from `from` to `to`.
    package init(from: SSHDestinationHop, to: SSHDestinationHop) {
        self.from = from
        self.to = to
    }

    /// The constraints in a `restrict-destination-v00@openssh.com` constraint's contents (the string OpenSSH's
    /// `ssh-add -h` sends): `corruptData` when malformed or empty, `unimplemented` for the reserved fields OpenSSH
    /// leaves empty. At most 64 constraints of at most 64 keys each.
    package static func list(from contents: [UInt8]) throws(KeychainError) -> [SSHDestinationConstraint] {
        var reader = SSHWireReader(contents)
        var constraints: [SSHDestinationConstraint] = []
        while !reader.isAtEnd {
            guard constraints.count < 64 else { throw malformed("more than 64 destination constraints") }
            var inner = SSHWireReader(try reader.string())
            let from = try hop(try inner.string())
            let to = try hop(try inner.string())
            guard try inner.string().isEmpty, inner.isAtEnd else { throw reserved }
            guard !to.host.isEmpty, !to.keys.isEmpty else { throw malformed("a destination without a host or its keys") }
            constraints.append(SSHDestinationConstraint(from: from, to: to))
        }
        guard !constraints.isEmpty else { throw malformed("no destination") }
        return constraints
    }

    private static func hop(_ bytes: [UInt8]) throws(KeychainError) -> SSHDestinationHop {
        var reader = SSHWireReader(bytes)
        let user = try reader.text(), host = try reader.text()
        guard try reader.string().isEmpty else { throw reserved }
        var keys: [(blob: [UInt8], isCA: Bool)] = []
        while !reader.isAtEnd {
            guard keys.count < 64 else { throw malformed("more than 64 host keys in a hop") }
            keys.append((try reader.string(), try reader.boolean()))
        }
        return SSHDestinationHop(user: user, host: host, keys: keys)
    }

    /// The contents of a `restrict-destination-v00@openssh.com` constraint for `constraints`, as `ssh-add -h` sends.
    package static func contents(of constraints: [SSHDestinationConstraint]) -> [UInt8] {
        var writer = SSHWireWriter()
        for constraint in constraints {
            var inner = SSHWireWriter()
            inner.string(Self.encode(constraint.from))
            inner.string(Self.encode(constraint.to))
            inner.string([UInt8]())
            writer.string(inner.bytes)
        }
        return writer.bytes
    }

    private static func encode(_ hop: SSHDestinationHop) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(hop.user)
        writer.string(hop.host)
        writer.string([UInt8]())
        for key in hop.keys {
            writer.string(key.blob)
            writer.boolean(key.isCA)
        }
        return writer.bytes
    }

    static func malformed(_ what: String) -> KeychainError {
        KeychainError(code: .corruptData, message: "An SSH key's destination constraint is malformed: \(what).")
    }

    static let reserved = KeychainError(
        code: .unimplemented, message: "An SSH key's destination constraint uses a reserved field this agent does not know.")
}

/// An SSH session a client bound to its agent connection (`session-bind@openssh.com`), after the agent checked the
/// host's signature of the session identifier.
package struct SSHSessionBinding: Sendable, Hashable {
    /// The host key's wire blob.
    package var hostKey: [UInt8]
    /// The session identifier (the exchange hash).
    package var sessionID: [UInt8]
    /// Whether the agent connection is forwarded over this session (a hop towards another host), rather than
    /// used to log in to this host.
    package var forwarding: Bool

    /// A binding of the session `sessionID` to the host `hostKey`.
    package init(hostKey: [UInt8], sessionID: [UInt8], forwarding: Bool) {
        self.hostKey = hostKey
        self.sessionID = sessionID
        self.forwarding = forwarding
    }
}

extension [SSHDestinationConstraint] {
    /// Whether a key with these constraints may be used on a connection bound to `bindings`, to log in as `user`
    /// (nil when listing), following OpenSSH's agent: every hop — from the origin to the first host, then from each
    /// host to the next — must be permitted by one constraint, and the last hop's user, when the constraint names
    /// one, must be the user. A key without constraints is permitted everywhere. A connection with no binding (a local program such as `ssh-keygen -Y sign`) may list
    /// the key; signing with it there is refused by ``SSHAgentHandler``.
    package func permit(_ bindings: [SSHSessionBinding], user: String?) -> Bool {
        // No constraint: the key goes anywhere.
        guard !isEmpty else { return true }
        var previous: [UInt8]? = nil
        for (index, binding) in bindings.enumerated() {
            let last = index == bindings.count - 1
            let allowed = contains { constraint in
                let fromMatches: Bool
                if let previous {
                    fromMatches = constraint.from.identifies(previous)
                } else {
                    fromMatches = constraint.from.isOrigin
                }
                guard fromMatches, constraint.to.identifies(binding.hostKey) else { return false }
                if last, let user, !constraint.to.user.isEmpty { return constraint.to.user == user }
                return true
            }
            guard allowed else { return false }
            previous = binding.hostKey
        }
        return true
    }
}

/// The parts of an SSH user-authentication request (RFC 4252 §7) that a destination-constrained key is checked
/// against: what the agent is asked to sign when a client logs in.
package struct SSHUserAuthRequest: Sendable, Hashable {
    /// The session identifier the signature is bound to.
    package var sessionID: [UInt8]
    /// The user to log in as.
    package var user: String
    /// The host key, for OpenSSH's `publickey-hostbound-v00@openssh.com` method; nil for plain `publickey`.
    package var hostKey: [UInt8]?

    /// Reads `data` as a public-key authentication request signed with `key`; nil when it is anything else.
    package init?(_ data: [UInt8], key: [UInt8]) {
        var reader = SSHWireReader(data)
        guard let sessionID = try? reader.string(), let type = try? reader.byte(), type == 50,
            let user = try? reader.text(), let service = try? reader.text(), service == "ssh-connection",
            let method = try? reader.text(), let hasSignature = try? reader.boolean(), hasSignature,
            (try? reader.text()) != nil, let blob = try? reader.string(), blob == key
        else { return nil }
        switch method {
        case "publickey":
            hostKey = nil
        case "publickey-hostbound-v00@openssh.com":
            guard let host = try? reader.string() else { return nil }
            hostKey = host
        default:
            return nil
        }
        guard reader.isAtEnd, !sessionID.isEmpty else { return nil }
        self.sessionID = sessionID
        self.user = user
    }
}
