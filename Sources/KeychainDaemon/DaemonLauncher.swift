import Foundation
import KeychainBiometry
import KeychainPrompt
import KeychainCore
import KeychainProtocol
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Starts keychaind's services on a keychain and runs them until SIGTERM or SIGINT: the one keychaind per
/// keychain folder, its socket, the request server, the idle lock, and background sync. In system mode (``DaemonMode/system(stateDirectory:maximumUsers:)``)
/// the same services serve every local user their own keychain.
package struct DaemonLauncher: Sendable {
    /// The socket to listen on; nil: the one systemd passed, else `$XDG_RUNTIME_DIR/keychain/keychaind.sock`.
    package var socket: String?
    /// Seconds without a request before the keychain locks (0: never), unless `keychain.settings` says otherwise.
    /// The engine applies it (``KeychainEngine/applyLockSettings(countingAsUse:)``).
    package var idleLock: Double
    package var logger: Logger
    /// What clients may hold: connections, bytes in flight, time per frame.
    package var limits: ConnectionLimits
    /// Whose keychains it serves: the user's own (`KEYCHAIN_HOME`), or every local user's (system mode).
    package var mode: DaemonMode
    /// How long keychaind may go with no connection open before it exits, when no keychain it serves is unlocked
    /// with a passcode and none syncs (``IdleExit``); nil: it runs until stopped.
    package var exitWhenIdle: Duration?
    /// More services to run beside the socket server, made once the keychain is open (the Secret Service on the
    /// session bus); they stop with the rest, and when one of them returns or throws, keychaind stops.
    package var additionalServices: @Sendable (DaemonContext) throws -> [any Service] = { _ in [] }

    /// What an additional service may use: the policy that identifies callers, the served keychains, the prompts.
    package struct DaemonContext: Sendable {
        /// Identifies callers and decides their access groups.
        package var authority: Authority
        /// The keychains served.
        package var keychains: ServedKeychains
        /// What asks the person at this machine.
        package var prompters: PrompterCache
        /// The requests waiting for `security approve`, shared with the socket's requests (one list for the person).
        package var approvals: PendingApprovals
        /// Where services log.
        package var logger: Logger
    }

    package init(socket: String?, idleLock: Double, limits: ConnectionLimits = .standard, mode: DaemonMode = .user, logger: Logger) {
        self.socket = socket
        self.idleLock = idleLock
        self.limits = limits
        self.mode = mode
        self.logger = logger
    }

    /// Opens the keychain the environment names (in system mode: finds the state folder) and serves it until asked
    /// to stop; then finishes the requests in progress and closes the databases. `ready` runs once the socket accepts
    /// connections.
    package func run(ready: @escaping @Sendable () -> Void) async throws {
        let listener: Listener
        let keychains: ServedKeychains
        let guardFD: Int32
        switch mode {
        case .user:
            (listener, keychains, guardFD) = try openUserKeychain()
        case .system(let stateDirectory, let maximumUsers):
            (listener, guardFD) = try claimSystem(stateDirectory: stateDirectory)
            keychains = .perUser(stateDirectory: stateDirectory, maximum: maximumUsers, idleLock: idleLock, logger: logger)
        }
        defer { close(guardFD) }
        // The system socket keychaind bound itself (not systemd's) goes with it, even when serving fails.
        defer { if case .system = mode, case .inherited(_, let path?) = listener, !Self.socketActivated { unlink(path) } }
        let authority = Authority(keychains: keychains, logger: logger)
        let prompters = PrompterCache(logger: logger)
        let approvals = PendingApprovals()
        let dispatcher = RequestDispatcher(authority: authority, logger: logger, prompters: prompters, biometrics: FprintdVerifier(), approvals: approvals)
        let tracker = ConnectionTracker()
        let server = DaemonServer(listener: listener, dispatcher: dispatcher, limits: Self.fitting(limits), tracker: tracker, logger: logger, ready: ready)
        let idle = IdleLock(keychains: keychains)
        let sync = BackgroundSync(keychains: keychains)
        let more = try additionalServices(DaemonContext(authority: authority, keychains: keychains, prompters: prompters, approvals: approvals, logger: logger))
        var exit: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let exitWhenIdle, let path = listener.path {
            exit = [
                .init(
                    service: IdleExit(idleFor: exitWhenIdle, tracker: tracker, keychains: keychains, socket: path, logger: logger),
                    successTerminationBehavior: .gracefullyShutdownGroup)
            ]
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: server, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                    .init(service: idle, successTerminationBehavior: .ignore),
                    .init(service: sync, successTerminationBehavior: .ignore),
                ] + exit
                    + more.map {
                        .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                    },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            ))
        try await group.run()
        keychains.closeAll(logger: logger)
        logger.notice("stopped")
    }

    /// The per-user keychaind's socket, its one keychain (the one the environment names, served to this user),
    /// and the lock that keeps a second keychaind from serving it.
    func openUserKeychain() throws -> (Listener, ServedKeychains, Int32) {
        let environment = KeychainLocation.processEnvironment()
        let listener = try resolveListener(environment)
        let location = KeychainLocation.fromEnvironment(environment)

        // One daemon per keychain: a second one waits for nothing and says why.
        let guardFD = try Self.claimKeychain(location, runtimeFolder: listener.path.map { NSString(string: $0).deletingLastPathComponent })
        let engine: KeychainEngine
        do {
            engine = try KeychainEngine(location: location, logger: logger, defaultIdleTimeout: idleLock > 0 ? idleLock : nil, pkcs11: .shared)
        } catch {
            close(guardFD)
            throw StartFailure("keychaind cannot open the keychain in \(location.home): \(error.message)")
        }
        // From now on clients reach this keychain only through keychaind at this socket (fail closed: a client
        // never opens a keychain a keychaind serves, even while it is stopped).
        if let path = listener.path {
            do {
                try FileSystem.writeAtomically(Array((path + "\n").utf8), to: location.daemonMarkerPath, exclusive: false)
            } catch {
                close(guardFD)
                throw StartFailure("keychaind cannot record that it serves \(location.home): \(error.message)")
            }
        }
        return (listener, .single(engine, uid: getuid()), guardFD)
    }

    /// `limits` within the descriptors this process may open: the soft limit is raised to the hard one, and each
    /// connection holds three descriptors (its socket, its client's pidfd and its client's `/proc/PID/status`).
    static func fitting(_ limits: ConnectionLimits) -> ConnectionLimits {
        var files = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) == 0 else { return limits }
        if files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) != 0 { _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) }
        }
        var fitted = limits
        let room = files.rlim_cur == rlim_t.max ? Int.max : (Int(clamping: files.rlim_cur) - 64) / 3
        fitted.connections = max(1, min(limits.connections, room))
        fitted.connectionsPerUser = min(limits.connectionsPerUser, fitted.connections)
        return fitted
    }

    /// The socket systemd passed (`LISTEN_FDS`), else `socket`, else the default path. Its folder is made 0700 when
    /// missing; an existing one is used as it is if it is this user's and others cannot write to it (keychaind never
    /// changes the mode of a folder it did not make: `--socket` may name a folder other programs use), and refused
    /// otherwise.
    func resolveListener(_ environment: [String: String]) throws -> Listener {
        if Self.takeActivationSocket(), let sockets = Self.activationSockets {
            return .inherited(sockets.main, path: socket ?? DaemonSocket.defaultPath(environment))
        }
        guard let path = socket ?? DaemonSocket.defaultPath(environment) else {
            throw StartFailure("XDG_RUNTIME_DIR is not set, so there is no default socket. Pass --socket PATH.")
        }
        let folder = NSString(string: path).deletingLastPathComponent
        do {
            try FileSystem.ensurePrivateDirectory(folder, tightening: false)
        } catch {
            throw StartFailure(error.message)
        }
        if DaemonSocket.accepts(path) {
            throw StartFailure("Another keychaind already serves \(path). Stop it first (systemctl --user stop keychaind).")
        }
        return .path(path)
    }

    /// Whether systemd passed a listening socket (`LISTEN_PID`, `LISTEN_FDS`), and the variables are removed so
    /// that no child sees them; keychaind's own socket is then ``activationSockets``' `main`.
    static func takeActivationSocket() -> Bool {
        guard socketActivated else { return false }
        unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES")
        return true
    }

    /// Whether systemd started this process with a listening socket.
    static var socketActivated: Bool { activationSockets != nil }

    /// The listening sockets systemd passed, by their names (`FileDescriptorName=`, in `LISTEN_FDNAMES`).
    package struct ActivationSockets: Sendable, Hashable {
        /// keychaind's own socket (`keychaind.socket`): the first one not named `ssh-agent`.
        package var main: Int32
        /// The SSH agent's socket (`keychaind-ssh-agent.socket`, named `ssh-agent`), when it was passed.
        package var sshAgent: Int32?
    }

    /// The sockets systemd passed this process (read once, before the variables are removed), or nil when it
    /// passed none (or only an agent socket, which keychaind cannot serve without its own).
    package static let activationSockets: ActivationSockets? = {
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"], Int32(pid) == getpid(), let count = environment["LISTEN_FDS"].flatMap(Int.init),
            (1...64).contains(count)
        else { return nil }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var main: Int32?, agent: Int32?
        for index in 0..<count {
            let fd = Int32(3 + index)
            if index < names.count, names[index] == "ssh-agent" {
                agent = agent ?? fd
            } else if main == nil {
                main = fd
            }
        }
        return main.map { ActivationSockets(main: $0, sshAgent: agent) }
    }()

    /// Holds `keychaind.lock` in the keychain's folder locked for the daemon's life, so two daemons never serve one
    /// keychain (the file is never written), and writes keychaind's pid to `keychaind.pid` in the socket's folder
    /// (the runtime folder). Neither is opened through a link or when it has another name or owner.
    static func claimKeychain(_ location: KeychainLocation, runtimeFolder: String?) throws -> Int32 {
        let fd: Int32
        do {
            try FileSystem.ensurePrivateDirectory(location.home)
            fd = try FileSystem.openOwnFile(location.home + "/keychaind.lock", flags: O_RDONLY)
        } catch {
            throw StartFailure(error.message)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StartFailure("Another keychaind already serves \(location.home).")
        }
        if let runtimeFolder {
            do {
                let pidFile = try FileSystem.openOwnFile(runtimeFolder + "/keychaind.pid", flags: O_WRONLY)
                defer { close(pidFile) }
                _ = ftruncate(pidFile, 0)
                let text = Array("\(getpid())\n".utf8)
                _ = text.withUnsafeBytes { write(pidFile, $0.baseAddress, $0.count) }
            } catch {
                close(fd)
                throw StartFailure(error.message)
            }
        }
        return fd
    }
}

/// Why keychaind cannot start, printed as `Error: …` (without the usage text a flag mistake gets).
package struct StartFailure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
