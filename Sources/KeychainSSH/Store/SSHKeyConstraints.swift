import Foundation
import KeychainCore

/// The constraints a key was added with (`ssh-add -t`, `-c`, `-h`), as the keychain keeps them beside the key.
package struct SSHKeyConstraints: Sendable, Hashable {
    /// When the key is forgotten (`ssh-add -t`); nil: never.
    package var expires: Date?
    /// Whether each use is confirmed by the person (`ssh-add -c`).
    package var confirm: Bool
    /// Where the key may be used (`ssh-add -h`); empty: anywhere.
    package var destinations: [SSHDestinationConstraint]

    /// No constraint.
    package init(expires: Date? = nil, confirm: Bool = false, destinations: [SSHDestinationConstraint] = []) {
        self.expires = expires
        self.confirm = confirm
        self.destinations = destinations
    }

    /// The constraints of an add request, with lifetimes counted from `now`: `unimplemented` for a constraint
    /// extension this agent does not know (a constraint is never dropped), `corruptData` for a malformed one, and
    /// `invalidParameter` for a lifetime of 0 or two of one kind.
    package init(_ constraints: [SSHKeyConstraint], now: Date) throws(KeychainError) {
        self.init()
        var seen: Set<String> = []
        for constraint in constraints {
            let kind: String
            switch constraint {
            case .lifetime(let seconds):
                guard seconds > 0 else { throw KeychainError(code: .invalidParameter, message: "An SSH key's lifetime is 0 seconds.") }
                expires = now.addingTimeInterval(TimeInterval(seconds))
                kind = "lifetime"
            case .confirm:
                confirm = true
                kind = "confirm"
            case .restrictDestination(let contents):
                destinations = try SSHDestinationConstraint.list(from: contents)
                kind = "destination"
            case .otherExtension(let name, _):
                throw KeychainError(
                    code: .unimplemented, message: "The SSH key constraint \(name.prefix(64)) is not supported by this agent: add the key without it.")
            }
            guard seen.insert(kind).inserted else { throw KeychainError(code: .invalidParameter, message: "An SSH key was added with two \(kind) constraints.") }
        }
    }

    /// Whether the key has expired at `now`.
    package func expired(at now: Date) -> Bool {
        expires.map { $0 <= now } ?? false
    }

    // MARK: Stored form

    /// The generic attribute (`gena`) of a key's item: the public key's blob, then — when there is any constraint —
    /// the expiry (Unix seconds, 0 for none), the confirmation flag and the destination constraints as `ssh-add -h`
    /// sends them. An item with the blob alone has no constraint.
    package static func stored(publicKey: [UInt8], _ constraints: SSHKeyConstraints) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(publicKey)
        guard constraints != SSHKeyConstraints() else { return writer.bytes }
        let seconds = constraints.expires.map { UInt32(clamping: Int64($0.timeIntervalSince1970.rounded(.up))) } ?? 0
        writer.uint32(seconds)
        writer.boolean(constraints.confirm)
        writer.string(constraints.destinations.isEmpty ? [] : SSHDestinationConstraint.contents(of: constraints.destinations))
        return writer.bytes
    }

    /// The public key's blob and the constraints in a stored generic attribute; `corruptData` when malformed.
    package static func read(stored bytes: [UInt8]) throws(KeychainError) -> (publicKey: [UInt8], constraints: SSHKeyConstraints) {
        var reader = SSHWireReader(bytes)
        let blob = try reader.string()
        guard !reader.isAtEnd else { return (blob, SSHKeyConstraints()) }
        var constraints = SSHKeyConstraints()
        let seconds = try reader.uint32()
        if seconds != 0 { constraints.expires = Date(timeIntervalSince1970: TimeInterval(seconds)) }
        constraints.confirm = try reader.boolean()
        let destinations = try reader.string()
        if !destinations.isEmpty { constraints.destinations = try SSHDestinationConstraint.list(from: destinations) }
        guard reader.isAtEnd else { throw KeychainError(code: .corruptData, message: "A stored SSH key's constraints are malformed.") }
        return (blob, constraints)
    }
}
