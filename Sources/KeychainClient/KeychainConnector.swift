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

/// Chooses the keychain a process talks to. This is the one place in the code base that decides between keychaind
/// and the engine opened in this process, and the decision comes from configuration only, never from which socket
/// happens to answer (a client that picks whoever answers can be steered):
///
/// 1. `KEYCHAIN_DAEMON_SOCKET=PATH`: keychaind at PATH, always.
/// 2. `KEYCHAIN_DAEMON_SOCKET=off`: the engine in this process ("no isolation": for tests and single-program
///    containers), unless a keychaind has served that keychain (`keychaind.serves`), which is then used (and started
///    again on demand when it was the keychain's per-user keychaind).
/// 3. With no `KEYCHAIN_HOME`, when the system keychaind is installed (its socket `/run/keychain/keychaind.sock`
///    exists): the system keychaind, and only it — busy or stopped, it is an error naming it.
/// 4. Otherwise the per-user keychaind of the keychain (`KEYCHAIN_HOME`, else the default folder): at
///    `$XDG_RUNTIME_DIR/keychain/keychaind.sock` for the default keychain (where systemd's socket unit listens),
///    else at `run/keychaind.sock` in the keychain's folder; started on demand when nothing listens there
///    (``DaemonAutostart``). A keychain whose `keychaind.serves` names another socket is reached there only.
///    Where no keychaind is installed (none beside this program, none on `PATH`), the engine in this process.
package enum KeychainConnector {
    /// A connection that replaces the environment's for the current task (tests direct calls with
    /// `KeychainConnector.$override.withValue(connection) { … }`).
    @TaskLocal package static var override: (any KeychainConnection)?

    /// The keychain the environment names, acting as the environment's caller: what SecItem calls and
    /// KeychainKit's default store use (see the type's rules).
    ///
    /// SecItem calls ask for every call, so the answer is kept with the variables' values it came from and
    /// reused while they are unchanged (compared without copying them).
    package static func environment() throws(KeychainError) -> any KeychainConnection {
        if let override { return override }
        let values = EnvironmentValues.current()
        if let connection = EngineRegistry.shared.cachedConnection(for: values) { return connection }
        let connection = try choose(.environment, home: nil, createIfMissing: true)
        EngineRegistry.shared.remember(connection, for: values)
        return connection
    }

    /// The keychain for `caller`: in `home` when given (else the environment's folder), through keychaind when
    /// the environment's keychaind serves that folder.
    ///
    /// - Parameter createIfMissing: false for read-only work: a keychain that does not exist yet is not created,
    ///   and the call fails with `errSecNoSuchKeychain` instead.
    package static func connection(
        for caller: KeychainCaller, home: String? = nil, createIfMissing: Bool = true,
        logger: Logger? = nil
    ) throws(KeychainError) -> any KeychainConnection {
        if let override { return override }
        return try choose(caller, home: home, createIfMissing: createIfMissing, logger: logger)
    }

    /// keychaind at `socket`, whether or not it answers (`security daemon status --socket` asks a given socket).
    package static func daemon(socket: String, caller: KeychainCaller) throws(KeychainError) -> DaemonKeychain {
        DaemonKeychain(client: EngineRegistry.shared.daemonClient(for: socket), claim: try caller.claim())
    }

    /// Where the environment's keychain is served (the type's rules), without starting anything.
    package static func environmentEndpoint() throws(KeychainError) -> KeychainEndpoint {
        try KeychainEndpoint.resolve(KeychainLocation.processEnvironment())
    }

    /// The socket keychaind is expected on for the environment's keychain; nil when it is opened in this process.
    package static func expectedDaemonSocket() -> String? {
        guard case .daemon(let socket, _, _)? = try? environmentEndpoint() else { return nil }
        return socket
    }

    private static func choose(
        _ caller: KeychainCaller, home: String?, createIfMissing: Bool,
        logger: Logger? = nil
    ) throws(KeychainError) -> any KeychainConnection {
        let environment = KeychainLocation.processEnvironment()
        let registry = EngineRegistry.shared
        if let home {
            return try chooseExplicit(caller, home: home, environment: environment, createIfMissing: createIfMissing, logger: logger)
        }
        switch try KeychainEndpoint.resolve(environment) {
        case .daemon(let socket, _, let autostart):
            let client = registry.daemonClient(for: socket, autostart: autostart)
            return DaemonKeychain(client: client, claim: try caller.claim())
        case .inProcess(let location):
            let engine = try registry.engine(for: location, pinned: true, createIfMissing: createIfMissing, logger: logger)
            adoptLegacyGroup(engine, caller)
            return InProcessKeychain(engine: engine, caller: try caller.policy())
        }
    }

    /// A program acting as itself (no entitlements file) finds the items it stored under its old in-process group,
    /// its executable's name (``KeychainEngine/adoptLegacyPrivateGroup(_:as:)``).
    private static func adoptLegacyGroup(_ engine: KeychainEngine, _ caller: KeychainCaller) {
        guard caller == .environment, (KeychainLocation.processEnvironment()["KEYCHAIN_ENTITLEMENTS"] ?? "").isEmpty else { return }
        engine.adoptLegacyPrivateGroup(AccessPolicy.processName, as: ProgramName.ownPrivateGroup)
    }

    /// A keychain folder the program names itself (KeychainKit's `KeychainStore(directory:)`): through the
    /// environment's keychaind when it serves that folder, through the keychaind that has served it
    /// (`keychaind.serves`), else opened in this process.
    private static func chooseExplicit(
        _ caller: KeychainCaller, home: String, environment: [String: String],
        createIfMissing: Bool, logger: Logger?
    ) throws(KeychainError) -> any KeychainConnection {
        let registry = EngineRegistry.shared
        let location = KeychainLocation(home: URL(fileURLWithPath: home).standardizedFileURL.path)
        if case .daemon(let socket, _, _)? = try? KeychainEndpoint.resolve(environment) {
            // Only a keychaind already running: asking whether it serves this folder starts none.
            let client = registry.daemonClient(for: socket)
            if DaemonSocket.accepts(socket) && client.isReachable() && client.serves(location.home) {
                return DaemonKeychain(client: client, claim: try caller.claim())
            }
        }
        // A keychain a keychaind has served is reached through it only: while it is stopped, calls fail with
        // errSecNotAvailable instead of opening the store here and bypassing its decisions.
        if let socket = try servingDaemon(location) {
            return DaemonKeychain(client: registry.daemonClient(for: socket), claim: try caller.claim())
        }
        let engine = try registry.engine(for: location, pinned: false, createIfMissing: createIfMissing, logger: logger)
        adoptLegacyGroup(engine, caller)
        return InProcessKeychain(engine: engine, caller: try caller.policy())
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
            // The keychain's folder cannot be reached at all (a file on the way, a folder closed to this user):
            // that is the cause to name; the keychain is not opened either way.
            if let obstacle = FileSystem.obstacle(to: location.home) { throw obstacle.error(location.home) }
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
        KeychainError(
            code: .notAvailable,
            message:
                "\(marker) says keychaind serves this keychain, but it cannot be used to reach keychaind (\(reason)), and a keychain keychaind serves is never opened without it. Start keychaind on this keychain (`systemctl --user start keychaind`), which writes the file again; or, to stop using keychaind for this keychain, stop it and remove \(marker)."
        )
    }
}

/// Where a keychain is served, as configuration says (``KeychainConnector``'s rules).
package enum KeychainEndpoint: Sendable, Hashable {
    /// Which rule chose a keychaind.
    package enum Kind: String, Sendable, Hashable {
        /// `KEYCHAIN_DAEMON_SOCKET` names it.
        case named
        /// The system keychaind (`keychaind --system`), installed on this machine.
        case system
        /// The keychain's per-user keychaind, started on demand (or by systemd's socket unit).
        case perUser
        /// The keychaind the keychain's `keychaind.serves` names.
        case recorded
    }

    /// keychaind at `socket`; `autostart` says how to start it when nothing listens there.
    case daemon(socket: String, kind: Kind, autostart: DaemonAutostart?)
    /// The engine opened in this process, on the keychain at `location`.
    case inProcess(KeychainLocation)

    /// The socket, when a keychaind serves the keychain.
    package var socket: String? {
        if case .daemon(let socket, _, _) = self { return socket }
        return nil
    }

    /// The endpoint of the keychain `environment` names (``KeychainConnector``'s rules).
    ///
    /// - Parameters:
    ///   - systemSocket: The system keychaind's socket (tests put one elsewhere).
    ///   - daemonProgram: The keychaind to start on demand; nil: look beside this program, then on `PATH`.
    package static func resolve(
        _ environment: [String: String], systemSocket: String? = nil,
        daemonProgram: String? = nil
    ) throws(KeychainError) -> KeychainEndpoint {
        let systemSocket = systemSocket ?? DaemonSocket.systemPath(environment)
        let location = KeychainLocation.fromEnvironment(environment)
        if let named = environment["KEYCHAIN_DAEMON_SOCKET"], !named.isEmpty {
            guard named == "off" else { return .daemon(socket: named, kind: .named, autostart: nil) }
            guard let recorded = try KeychainConnector.servingDaemon(location) else { return .inProcess(location) }
            // A keychain keychaind has served is reached through it only; one started on demand is started again.
            if recorded == perUserSocket(for: location, environment),
                let program = daemonProgram ?? DaemonAutostart.locateProgram(searchPath: getenv("PATH").map { String(cString: $0) })
            {
                return .daemon(socket: recorded, kind: .perUser, autostart: DaemonAutostart(program: program, socket: recorded, home: location.home))
            }
            return .daemon(socket: recorded, kind: .recorded, autostart: nil)
        }
        let homeNamed = environment["KEYCHAIN_HOME"].map { !$0.isEmpty } ?? false
        if !homeNamed && systemInstalled(systemSocket) {
            return .daemon(socket: systemSocket, kind: .system, autostart: nil)
        }
        let socket = perUserSocket(for: location, environment)
        if let recorded = try KeychainConnector.servingDaemon(location), recorded != socket {
            return .daemon(socket: recorded, kind: .recorded, autostart: nil)
        }
        guard let program = daemonProgram ?? DaemonAutostart.locateProgram(searchPath: getenv("PATH").map { String(cString: $0) }) else {
            // keychaind is not installed: a socket unit may still listen, else the keychain is opened here.
            return FileManager.default.fileExists(atPath: socket) ? .daemon(socket: socket, kind: .perUser, autostart: nil) : .inProcess(location)
        }
        return .daemon(socket: socket, kind: .perUser, autostart: DaemonAutostart(program: program, socket: socket, home: location.home))
    }

    /// The per-user keychaind's socket for the keychain at `location`: `$XDG_RUNTIME_DIR/keychain/keychaind.sock` for
    /// the default keychain (with a runtime folder), else `run/keychaind.sock` in the keychain's own folder.
    package static func perUserSocket(for location: KeychainLocation, _ environment: [String: String]) -> String {
        var withoutHome = environment
        withoutHome.removeValue(forKey: "KEYCHAIN_HOME")
        if location == KeychainLocation.fromEnvironment(withoutHome), let runtime = DaemonSocket.defaultPath(environment) {
            return runtime
        }
        return location.home + "/run/keychaind.sock"
    }

    /// Whether the system keychaind is installed: its socket exists (systemd's socket unit, or keychaind itself,
    /// keeps it in a folder only root may write to).
    static func systemInstalled(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }
}
