import KeychainCore

extension AppRegistration {
    /// Whether `identity` is this program: the same executable path and contents, Flatpak app ID or snap name. An
    /// untrusted process (``PeerIdentity/untrusted``) is no registered program.
    package func matches(_ identity: PeerIdentity) -> Bool {
        guard identity.untrusted == nil else { return false }
        return switch (program, identity.program) {
        case let (.executable(path, digest), .executable(peerPath)):
            path == peerPath && digest == identity.executableSHA256
        case let (.flatpak(id), .flatpak(peer)): id == peer
        case let (.snap(name), .snap(peer)): name == peer
        default: false
        }
    }
}

extension AppRegistry {
    /// The registration for `identity`, if any.
    package func registration(for identity: PeerIdentity) -> AppRegistration? {
        entries.first { $0.matches(identity) }
    }
}
