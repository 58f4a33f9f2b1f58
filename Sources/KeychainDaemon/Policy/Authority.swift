import Foundation
import KeychainCore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Decides, from a session's kernel-given identity and the program registry, which access groups a call
/// may use. A client's own claim (its entitlements file) can only narrow what it is registered for.
package final class Authority: Sendable {
    package let engine: KeychainEngine
    let inspector: PeerInspector
    /// The uid keychaind runs as; any other user's process is refused at connect.
    let uid: UInt32
    /// The admin tool's path and SHA-256, recorded at start-up.
    let adminTool: (path: String, sha256: String)?
    let logger: Logger

    private let registryCache = Mutex<(stamp: FileStamp, registry: AppRegistry)?>(nil)

    /// - Parameters:
    ///   - adminToolPath: The `security` tool this daemon trusts as the user's admin tool; by default the one
    ///     installed beside keychaind's own executable. Its SHA-256 is recorded now: a changed tool is not trusted.
    package init(engine: KeychainEngine, inspector: PeerInspector = PeerInspector(), adminToolPath: String? = nil, logger: Logger) {
        self.engine = engine
        self.inspector = inspector
        self.logger = logger
        uid = getuid()
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

    /// Identifies the process at the other end of a new connection, refusing other users.
    package func session(pid: Int32, uid peerUID: UInt32) throws(KeychainError) -> Session {
        guard peerUID == uid else {
            throw KeychainError(code: .missingEntitlement, message: "keychaind serves user \(uid) only; a process of user \(peerUID) connected.")
        }
        let identity = try inspector.identity(pid: pid, uid: peerUID)
        var admin = false
        if let untrusted = identity.untrusted {
            logger.notice("untrusted client: no registered or admin identity", metadata: ["pid": "\(pid)", "reason": "\(untrusted)"])
        } else if let adminTool, case .executable(let path) = identity.program {
            admin = path == adminTool.path && identity.executableSHA256 == adminTool.sha256
        }
        return Session(identity: identity, isAdminTool: admin)
    }

    /// Whether the session may manage the keychain (passcode, backup, program registry): the admin tool,
    /// after giving the passcode when one is set.
    func requireAdmin(_ session: Session, for action: String) throws(KeychainError) {
        guard session.isAdminTool else {
            throw KeychainError(code: .missingEntitlement, message: "Only the security tool may \(action) through keychaind; \(session.identity) may not.")
        }
        guard engine.lockState == .noPasscode || session.authenticated else {
            throw KeychainError(code: .interactionNotAllowed, message: "The security tool must give the keychain's passcode to \(action). Run it from a terminal to be asked for the passcode.")
        }
    }

    /// The access groups a call may use, given what the caller claims (nil: everything it has).
    func policy(for session: Session, claim: [String]?) throws(KeychainError) -> AccessPolicy {
        if session.isAdminTool {
            try requireAdmin(session, for: "use every access group")
            return AccessPolicy(groups: claim ?? [session.identity.privateGroup, "*"])
        }
        let allowed = try registeredGroups(session.identity)
        guard let claim else { return AccessPolicy(groups: allowed) }
        let everything = allowed.contains("*")
        for group in claim where !(everything || allowed.contains(group)) {
            logger.notice("refused claim", metadata: ["pid": "\(session.identity.pid)"])
            throw KeychainError(code: .missingEntitlement, message: "\(session.identity) asks for access group '\(group)', which it is not registered for. Register it with `security app add --group \(group) <program>`.")
        }
        return AccessPolicy(groups: claim)
    }

    /// The groups the registry gives the program, or its private group when it is not registered.
    func registeredGroups(_ identity: PeerIdentity) throws(KeychainError) -> [String] {
        if let entry = try registry().registration(for: identity) { return entry.groups }
        return [identity.privateGroup]
    }

    /// The registry, read again whenever the file changes.
    func registry() throws(KeychainError) -> AppRegistry {
        guard let stamp = FileStamp(path: engine.location.registryPath) else {
            if errno == ENOENT { return AppRegistry() }
            throw KeychainError(code: .io, message: "Cannot read \(engine.location.registryPath). Check its permissions.")
        }
        if let cached = registryCache.withLock({ $0 }), cached.stamp == stamp { return cached.registry }
        let registry = try engine.appRegistry()
        registryCache.withLock { $0 = (stamp, registry) }
        return registry
    }
}
