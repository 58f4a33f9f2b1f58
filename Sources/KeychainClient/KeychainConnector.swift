import Foundation
import KeychainCore
import KeychainProtocol
import Logging

/// Who a connection's calls act as.
package enum KeychainCaller: Sendable, Hashable {
    /// The groups of the entitlements plist named by `KEYCHAIN_ENTITLEMENTS` (else the executable's name). Through
    /// keychaind, the file is a claim the daemon checks against the program's registration.
    case environment
    /// These access groups, in order (`"*"` grants every group). Through keychaind, a claim as above.
    case groups([String])
    /// The user's own admin tool (`security`): every access group, new items in `defaultGroup`. keychaind grants
    /// this only to the `security` installed beside it, after the passcode when one is set.
    case administrator(defaultGroup: String)

    /// The groups in-process calls use.
    func policy() throws(KeychainError) -> AccessPolicy {
        switch self {
        case .environment: try EngineRegistry.shared.environmentPolicy()
        case .groups(let groups): AccessPolicy(groups: groups)
        case .administrator(let group): .unrestricted(defaultGroup: group)
        }
    }

    /// What a client claims from keychaind: nil asks for everything its registration gives.
    func claim() throws(KeychainError) -> [String]? {
        switch self {
        case .environment:
            let environment = KeychainLocation.processEnvironment()
            guard let path = environment["KEYCHAIN_ENTITLEMENTS"], !path.isEmpty else { return nil }
            let policy = try EngineRegistry.shared.environmentPolicy(environment)
            return policy.unrestricted ? policy.groups + ["*"] : policy.groups
        case .groups(let groups): return groups
        case .administrator(let group): return [group, "*"]
        }
    }
}

/// Chooses the keychain a process talks to: keychaind when it serves the keychain, else the engine opened in
/// this process. This is the one place in the code base that decides between them.
package enum KeychainConnector {
    /// A connection that replaces the environment's for the current task (tests direct calls with
    /// `KeychainConnector.$override.withValue(connection) { … }`).
    @TaskLocal package static var override: (any KeychainConnection)?

    /// The keychain the environment names, acting as the environment's caller: what SecItem calls and
    /// KeychainKit's default store use.
    ///
    /// keychaind when `KEYCHAIN_DAEMON_SOCKET` names it (`off`: never) or, with neither that nor `KEYCHAIN_HOME`
    /// set, when the system keychaind's socket `/run/keychain/keychaind.sock` answers (`keychaind --system`, which
    /// serves this user's keychain) or else the per-user default socket `$XDG_RUNTIME_DIR/keychain/keychaind.sock`
    /// answers; else the store in
    /// `KEYCHAIN_HOME` (default `$XDG_DATA_HOME/keychain`, else `~/.local/share/keychain`) opened here.
    ///
    /// SecItem calls ask for every call, so the answer is kept with the variables' values it came from and
    /// reused while they are unchanged (compared without copying them). Only when the default socket decides is
    /// it worked out again each time, since keychaind may start or stop meanwhile.
    package static func environment() throws(KeychainError) -> any KeychainConnection {
        if let override { return override }
        let values = EnvironmentValues.current()
        if let connection = EngineRegistry.shared.cachedConnection(for: values) { return connection }
        let (connection, decidedBySocket) = try choose(.environment, home: nil, createIfMissing: true)
        if !decidedBySocket { EngineRegistry.shared.remember(connection, for: values) }
        return connection
    }

    /// The keychain for `caller`: in `home` when given (else the environment's folder), through keychaind when
    /// the environment's keychaind serves that folder.
    ///
    /// - Parameter createIfMissing: false for read-only work: a keychain that does not exist yet is not created,
    ///   and the call fails with `errSecNoSuchKeychain` instead.
    package static func connection(for caller: KeychainCaller, home: String? = nil, createIfMissing: Bool = true,
                                   logger: Logger? = nil) throws(KeychainError) -> any KeychainConnection {
        if let override { return override }
        return try choose(caller, home: home, createIfMissing: createIfMissing, logger: logger).connection
    }

    /// keychaind at `socket`, whether or not it answers (`security daemon status` asks a given socket).
    package static func daemon(socket: String, caller: KeychainCaller) throws(KeychainError) -> DaemonKeychain {
        DaemonKeychain(client: EngineRegistry.shared.daemonClient(for: socket), claim: try caller.claim())
    }

    /// The socket keychaind is expected on: `KEYCHAIN_DAEMON_SOCKET` unless `off`, else the system keychaind's socket
    /// when it answers, else the default socket under `XDG_RUNTIME_DIR`; nil when none can be named.
    package static func expectedDaemonSocket() -> String? {
        let environment = KeychainLocation.processEnvironment()
        if let named = environment["KEYCHAIN_DAEMON_SOCKET"], !named.isEmpty {
            return named == "off" ? nil : named
        }
        if DaemonEndpoint.systemDaemonAnswers(DaemonSocket.systemPath) { return DaemonSocket.systemPath }
        return DaemonSocket.defaultPath(environment)
    }

    private static func choose(_ caller: KeychainCaller, home: String?, createIfMissing: Bool,
                               logger: Logger? = nil) throws(KeychainError) -> (connection: any KeychainConnection, decidedBySocket: Bool) {
        let environment = KeychainLocation.processEnvironment()
        let registry = EngineRegistry.shared
        let location = home.map { KeychainLocation(home: URL(fileURLWithPath: $0).standardizedFileURL.path) } ?? .fromEnvironment(environment)
        let endpoint = DaemonEndpoint.fromEnvironment(environment)
        if let endpoint {
            let client = registry.daemonClient(for: endpoint.path)
            if endpoint.explicit && home == nil || client.isReachable() && (home == nil || client.serves(location.home)) {
                return (DaemonKeychain(client: client, claim: try caller.claim()), !endpoint.explicit)
            }
        }
        // A keychain a keychaind has served is reached through it only: while it is stopped, calls fail with
        // errSecNotAvailable instead of opening the store here and bypassing its decisions.
        if let socket = try servingDaemon(location) {
            return (DaemonKeychain(client: registry.daemonClient(for: socket), claim: try caller.claim()), false)
        }
        let engine = try registry.engine(for: location, pinned: home == nil, createIfMissing: createIfMissing, logger: logger)
        return (InProcessKeychain(engine: engine, caller: try caller.policy()), endpoint != nil)
    }

    /// The socket of the keychaind that serves the keychain at `location` (its `keychaind.serves`); nil when no
    /// keychaind ever served it. A marker that is there but names no socket (unreadable, a link, damaged) still
    /// says a keychaind serves the keychain, so it fails closed too: `errSecNotAvailable`, never the store
    /// opened here.
    static func servingDaemon(_ location: KeychainLocation) throws(KeychainError) -> String? {
        let marker = location.daemonMarkerPath
        let data: Data?
        do {
            data = try FileSystem.read(marker)
        } catch {
            throw unnamedDaemon(marker, because: error.message)
        }
        guard let data else { return nil }
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard path.hasPrefix("/"), !path.contains("\n") else {
            throw unnamedDaemon(marker, because: "it does not hold a socket's absolute path")
        }
        return path
    }

    private static func unnamedDaemon(_ marker: String, because reason: String) -> KeychainError {
        KeychainError(code: .notAvailable, message: "\(marker) says keychaind serves this keychain, but it cannot be used to reach keychaind (\(reason)), and a keychain keychaind serves is never opened without it. Start keychaind on this keychain (`systemctl --user start keychaind`), which writes the file again; or, to stop using keychaind for this keychain, stop it and remove \(marker).")
    }
}

/// Where keychaind listens, as the environment says.
struct DaemonEndpoint: Sendable, Hashable {
    /// The socket's path.
    var path: String
    /// Whether `KEYCHAIN_DAEMON_SOCKET` named it: then every call must go to it. The default socket is used
    /// only when it answers; a stale one (left by a killed daemon) falls back to opening the store.
    var explicit: Bool

    init(path: String, explicit: Bool) {
        self.path = path
        self.explicit = explicit
    }

    /// The default socket: `$XDG_RUNTIME_DIR/keychain/keychaind.sock`.
    static func defaultPath(_ environment: [String: String]) -> String? {
        DaemonSocket.defaultPath(environment)
    }

    /// The daemon SecItem calls should use: `KEYCHAIN_DAEMON_SOCKET` when set (`off` to never use one); else, when
    /// `KEYCHAIN_HOME` does not name some other keychain, the system keychaind (`systemSocket`) when its socket
    /// exists and answers, else the per-user default socket when it exists.
    ///
    /// The system keychaind comes first: once an administrator installs it, the user's keychain lives where the
    /// user's own programs cannot read it, and a per-user keychaind left running must not be preferred to it.
    static func fromEnvironment(_ environment: [String: String] = KeychainLocation.processEnvironment(),
                                systemSocket: String = DaemonSocket.systemPath) -> DaemonEndpoint? {
        if let named = environment["KEYCHAIN_DAEMON_SOCKET"], !named.isEmpty {
            return named == "off" ? nil : DaemonEndpoint(path: named, explicit: true)
        }
        if let home = environment["KEYCHAIN_HOME"], !home.isEmpty { return nil }
        if systemDaemonAnswers(systemSocket) { return DaemonEndpoint(path: systemSocket, explicit: false) }
        guard let path = defaultPath(environment), FileManager.default.fileExists(atPath: path) else { return nil }
        return DaemonEndpoint(path: path, explicit: false)
    }

    /// Whether the system keychaind's socket exists and a keychaind answers on it (its connection is then pooled,
    /// so asking again costs no new connection).
    static func systemDaemonAnswers(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path) && EngineRegistry.shared.daemonClient(for: path).isReachable()
    }
}
