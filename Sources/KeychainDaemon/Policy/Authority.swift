import Foundation
import KeychainCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Decides, from a session's kernel-given identity and the program registry, which access groups a call
/// may use. A client's own claim (its entitlements file) can only narrow what it is registered for.
///
/// Each connection is served the keychain of its user (``ServedKeychains``): the per-user keychaind's one keychain,
/// or in system mode that user's own. The registry, the passcode and the lock state consulted here are always
/// those of the session's keychain.
package final class Authority: Sendable {
    /// The keychains this keychaind serves, by user.
    package let keychains: ServedKeychains
    /// Reads what the kernel says of a process (`/proc`): the one every identification here uses.
    package let inspector: PeerInspector
    /// The admin tool's path and SHA-256, recorded at start-up.
    let adminTool: (path: String, sha256: String)?
    let logger: Logger

    /// A per-user keychaind's authority: `engine` is served to the processes of the user keychaind runs as.
    ///
    /// - Parameters:
    ///   - adminToolPath: The `security` tool this daemon trusts as the user's admin tool; by default the one
    ///     installed beside keychaind's own executable. Its SHA-256 is recorded now: a changed tool is not trusted.
    package convenience init(engine: KeychainEngine, inspector: PeerInspector = PeerInspector(), adminToolPath: String? = nil, logger: Logger) {
        self.init(keychains: .single(engine, uid: getuid()), inspector: inspector, adminToolPath: adminToolPath, logger: logger)
    }

    /// An authority over `keychains` (one keychain, or one per user in system mode).
    ///
    /// - Parameters:
    ///   - adminToolPath: The `security` tool this daemon trusts as the admin tool; by default the one installed
    ///     beside keychaind's own executable. In system mode it is every user's admin tool, acting for the user who
    ///     runs it on that user's keychain only. Its SHA-256 is recorded now: a changed tool is not trusted.
    package init(keychains: ServedKeychains, inspector: PeerInspector = PeerInspector(), adminToolPath: String? = nil, logger: Logger) {
        self.keychains = keychains
        self.inspector = inspector
        self.logger = logger
        let toolPath = adminToolPath ?? Authority.toolBesideThisExecutable()
        if let digest = try? FileDigest.sha256Hex(ofFileAt: toolPath) {
            adminTool = (toolPath, digest)
        } else {
            adminTool = nil
        }
    }

    /// `security` in the folder of keychaind's own executable.
    static func toolBesideThisExecutable() -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? (CommandLine.arguments.first ?? "")
        return NSString(string: NSString(string: own).deletingLastPathComponent).appendingPathComponent("security")
    }

    /// Identifies the process at the other end of a new connection and finds its user's keychain, refusing a user
    /// this keychaind does not serve.
    package func session(pid: Int32, uid peerUID: UInt32) throws(KeychainError) -> Session {
        let keychain = try keychains.keychain(for: peerUID)
        let identity = try inspector.identity(pid: pid, uid: peerUID)
        var admin = false
        if let untrusted = identity.untrusted {
            logger.notice("untrusted client: no registered or admin identity", metadata: ["pid": "\(pid)", "reason": "\(untrusted)"])
        } else if let adminTool, case .executable(let path) = identity.program {
            admin = path == adminTool.path && identity.executableSHA256 == adminTool.sha256
        }
        return Session(identity: identity, isAdminTool: admin, keychain: keychain)
    }

    /// Whether the session may manage the keychain (passcode, backup, program registry): only the admin tool, and
    /// then what changes the keychain still needs the person's approval (``RequestDispatcher/approve(_:session:engine:)``).
    func requireAdmin(_ session: Session, for action: String) throws(KeychainError) {
        guard session.isAdminTool else {
            throw KeychainError(code: .missingEntitlement, message: "Only the security tool may \(action) through keychaind; \(session.identity) may not.")
        }
    }

    /// The access groups a call may use, given what the caller claims (nil: everything it has).
    func policy(for session: Session, claim: [String]?) throws(KeychainError) -> AccessPolicy {
        guard !session.isAdminTool else { return try workOutPolicy(for: session, claim: claim) }
        // The same claim gets the same answer until the registry changes (a client sends the same claim with every
        // request, or none).
        let (registry, generation) = try session.keychain.registryAndGeneration()
        if let cached = session.cachedPolicy.withLock({ $0 }), cached.generation == generation, cached.claim == claim {
            if cached.unregistered { adoptLegacyPrivateGroup(session) }
            return cached.policy
        }
        let policy = try workOutPolicy(for: session, claim: claim)
        let unregistered = registry.registration(for: session.identity) == nil
        session.cachedPolicy.withLock { $0 = (generation, claim, unregistered, policy) }
        return policy
    }

    private func workOutPolicy(for session: Session, claim: [String]?) throws(KeychainError) -> AccessPolicy {
        let policy = try groupPolicy(for: session, claim: claim)
            .identified(as: session.identity.presenceKey, name: session.identity.description)
        // Known in items' trusted-application lists as the kernel identified it, and by the teams of the groups the
        // registry gave it (never of its private group, whose name the program chose: a Flatpak app ID).
        return policy.trusted(
            as: session.identity.trustedApplication,
            teamGroups: policy.groups.filter { $0 != session.identity.privateGroup })
    }

    private func groupPolicy(for session: Session, claim: [String]?) throws(KeychainError) -> AccessPolicy {
        if session.isAdminTool {
            // Every group, but another program's secrets, changes and new items each need the person's approval
            // (RequestDispatcher+Approval).
            return AccessPolicy(groups: claim ?? [session.identity.privateGroup, "*"])
        }
        let allowed = try registeredGroups(session)
        guard let claim else { return AccessPolicy(groups: allowed) }
        let everything = allowed.contains("*")
        for group in claim where !(everything || allowed.contains(group)) {
            logger.notice("refused claim", metadata: ["pid": "\(session.identity.pid)"])
            throw KeychainError(
                code: .missingEntitlement,
                message: "\(session.identity) asks for access group '\(group)', which it is not registered for. Register it with `security app add --group \(group) <program>`.")
        }
        return AccessPolicy(groups: claim)
    }

    /// The groups the registry of the session's keychain gives its program, or its private group when it is not
    /// registered.
    func registeredGroups(_ session: Session) throws(KeychainError) -> [String] {
        if let entry = try session.keychain.registry().registration(for: session.identity) { return entry.groups }
        adoptLegacyPrivateGroup(session)
        return [session.identity.privateGroup]
    }

    /// Moves the items an unregistered program stored in its own process before 0.30, under its executable's name,
    /// to its private group (once per keychain; again after a try that found the keychain locked).
    private func adoptLegacyPrivateGroup(_ session: Session) {
        guard let legacy = session.legacyPrivateGroup, case .executable(let path) = session.identity.program else { return }
        session.engine.adoptLegacyPrivateGroup(legacy, as: path)
    }
}
