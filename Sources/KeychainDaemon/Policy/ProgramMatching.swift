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

extension PeerIdentity {
    /// The program its remembered permissions (``ConsentDecision``) are kept under: the executable's path and
    /// SHA-256, the Flatpak app ID or the snap name, as the kernel identified the process. Nil for an untrusted
    /// process (``untrusted``: it may run code that is not its program's, so it neither uses the program's
    /// decisions nor makes new ones) and for an executable whose contents could not be hashed.
    package var consentProgram: AppRegistration.Program? {
        guard untrusted == nil else { return nil }
        switch program {
        case .executable(let path):
            guard !executableSHA256.isEmpty else { return nil }
            return .executable(path: path, sha256: executableSHA256)
        case .flatpak(let id): return .flatpak(id)
        case .snap(let name): return .snap(name)
        }
    }
}

extension PeerIdentity {
    /// The term items' trusted-application lists name this program by (``TrustedApplications``): its executable's
    /// path, `flatpak:APPID` or `snap:NAME`. Nil for an untrusted process: code injected into a program is never that
    /// program in a trusted list (it still matches `*`, as any program of the user does).
    package var trustedApplication: String? {
        guard untrusted == nil else { return nil }
        return switch program {
        case .executable(let path): path
        case .flatpak(let id): "flatpak:\(id)"
        case .snap(let name): "snap:\(name)"
        }
    }
}
