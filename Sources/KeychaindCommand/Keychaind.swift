import ArgumentParser
import CKeychainLinux
import Foundation
import KeychainCore
import KeychainDaemon
import KeychainProtocol
import KeychainSSH
import KeychainSecretService
import KeychainVersion
import Logging
import ServiceLifecycle
#if Network
// The sync client and OCSP over HTTP, registered with KeychainCore at start (the Network trait).
import KeychainSyncClient
#endif

/// keychaind: the one process that opens the keychain in `KEYCHAIN_HOME`, holds its unlocked class keys in
/// memory, and serves keychain calls over a Unix-domain socket, deciding each caller's access groups from
/// the kernel's peer credentials. With `--system` it runs as a system user and serves every local user their own
/// keychain. Everything but the command line lives in the KeychainDaemon library.
package struct Keychaind: AsyncParsableCommand {

    package static let configuration = CommandConfiguration(
        commandName: "keychaind",
        abstract: "The keychain daemon: serves the keychain in KEYCHAIN_HOME to the programs of this user.",
        discussion: """
            Listens on $XDG_RUNTIME_DIR/keychain/keychaind.sock (or --socket, or the socket systemd passes), \
            and serves SecItem calls, lock/unlock and backups. Programs get the access groups registered for \
            them with `security app add`; others get a private group of their own. SIGTERM finishes the \
            requests in progress and closes the database.

            With --system, keychaind runs as the `keychain` system user (keychaind-system.service) and serves \
            each local user their own keychain, kept in --state-directory/UID (default $STATE_DIRECTORY, else \
            /var/lib/keychain; folders of the system user, mode 0700, which the users' own programs cannot \
            open), on one socket every user may connect to (default /run/keychain/keychaind.sock, where \
            clients look first). The kernel's uid of each connection decides whose keychain it uses. It needs \
            CAP_SYS_PTRACE to identify other users' programs from /proc.
            """,
        version: KeychainVersion.line(program: "keychaind")
    )

    @Flag(name: .long, help: "Run in the terminal, logging to standard error (the default under systemd too; kept for clarity in scripts).")
    var foreground = false

    @Option(name: .long, help: "The socket to listen on (default: $XDG_RUNTIME_DIR/keychain/keychaind.sock; with --system, /run/keychain/keychaind.sock).")
    var socket: String?

    @Flag(name: .long, help: "Serve every local user their own keychain, as a system service (see the discussion).")
    var system = false

    @Option(name: .customLong("state-directory"), help: "With --system: the folder of the users' keychains (default: $STATE_DIRECTORY, else /var/lib/keychain).")
    var stateDirectory: String?

    @Option(name: .customLong("max-users"), help: "With --system: how many users' keychains may be open at once.")
    var maxUsers = 256

    @Option(name: .customLong("idle-lock"), help: "Lock the keychain after this many seconds without a request (0: never), unless `security set-keychain-settings` set another time.")
    var idleLock: Double = Double(KeychainSettings.defaultIdleTimeout)

    @Option(name: .customLong("max-connections"), help: "Open connections, all users together (each is a thread and three descriptors).")
    var maxConnections = ConnectionLimits.standard.connections

    @Option(name: .customLong("max-connections-per-user"), help: "Open connections of one user.")
    var maxConnectionsPerUser = ConnectionLimits.standard.connectionsPerUser

    @Option(name: .customLong("max-buffered-mib"), help: "MiB of requests still arriving, all connections together.")
    var maxBufferedMiB = ConnectionLimits.standard.bufferedBytes >> 20

    @Option(name: .customLong("frame-timeout"), help: "Seconds a request may take to arrive once it has begun.")
    var frameTimeout: Double = 10

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "notice"

    @Flag(name: .customLong("secret-service"), help: "Also serve the freedesktop Secret Service (org.freedesktop.secrets) on the session bus.")
    var secretService = false

    @Flag(name: .customLong("secret-service-replace"), help: "With --secret-service: take the name over from another provider that allows it (gnome-keyring), instead of refusing to start.")
    var secretServiceReplace = false

    @Flag(name: .customLong("ssh-agent"), help: "Also serve an SSH agent (SSH_AUTH_SOCK) on the keychain's SSH keys, at ssh-agent.sock beside the socket.")
    var sshAgent = false

    @Option(
        name: .customLong("ready-fd"),
        help: ArgumentHelp("Write \"ready\" to this descriptor and close it once connections are accepted (how a client that starts keychaind waits for it).", valueName: "fd"))
    var readyFD: Int32?

    @Option(
        name: .customLong("exit-when-idle"),
        help: ArgumentHelp(
            "Exit after this many seconds with no connection open, when no keychain is unlocked with a passcode and none syncs (how a keychaind a client started goes away).", valueName: "seconds"))
    var exitWhenIdle: Int?

    /// The exit status when another program owns org.freedesktop.secrets.
    static let nameTakenStatus: Int32 = 3

    package init() {}

    /// Parses the command line and runs keychaind; `--help`, `--version` and bad flags exit as ArgumentParser's do.
    package static func runCommandLine() async {
        do {
            var command = try parse()
            try await command.run()
        } catch {
            exit(withError: error)
        }
    }

    package mutating func run() async throws {
        #if Network
        NetworkServices.install()
        #endif
        // No core dumps, no ptrace or /proc/PID/mem by other processes of this user: the class keys live here.
        if ckeychain_set_nondumpable() != 0 {
            throw StartFailure("keychaind could not make itself non-dumpable (prctl failed); refusing to hold keys.")
        }
        let level = Logger.Level(rawValue: logLevel) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        guard maxConnections > 0, maxConnectionsPerUser > 0, maxBufferedMiB > 0, frameTimeout > 0, maxUsers > 0 else {
            throw ValidationError("The limits must be positive.")
        }
        if let exitWhenIdle, exitWhenIdle <= 0 {
            throw ValidationError("--exit-when-idle must be a positive number of seconds.")
        }
        if let readyFD, readyFD < 3 || fcntl(readyFD, F_GETFD) < 0 {
            throw ValidationError("--ready-fd \(readyFD) is not an open descriptor above standard error.")
        }
        // Programs keychaind starts (pinentry) never inherit it.
        if let readyFD { _ = fcntl(readyFD, F_SETFD, FD_CLOEXEC) }
        guard system || stateDirectory == nil else {
            throw ValidationError("--state-directory is for --system; a per-user keychaind serves KEYCHAIN_HOME.")
        }
        let mode: DaemonMode = system ? .system(stateDirectory: stateDirectory ?? DaemonMode.defaultStateDirectory(), maximumUsers: maxUsers) : .user
        var limits = ConnectionLimits.standard
        limits.connections = maxConnections
        limits.connectionsPerUser = maxConnectionsPerUser
        limits.bufferedBytes = maxBufferedMiB << 20
        limits.frameTimeout = .milliseconds(Int(frameTimeout * 1000))
        var launcher = DaemonLauncher(socket: socket, idleLock: idleLock, limits: limits, mode: mode, logger: Logger(label: "keychaind"))
        launcher.exitWhenIdle = exitWhenIdle.map { .seconds($0) }
        var makeBridge: (@Sendable (DaemonLauncher.DaemonContext) throws -> [any Service])?
        if secretService || secretServiceReplace {
            guard !system else {
                throw ValidationError("--secret-service serves one user's session bus; a --system keychaind serves every user and cannot. Run a per-user keychaind with --secret-service.")
            }
            let environment = ProcessInfo.processInfo.environment
            let address = try SecretServiceBridge.sessionBusAddress(environment)
            let replace = secretServiceReplace
            makeBridge = { context in
                guard let served = context.keychains.open.first else { return [] }
                let policy = try UnregisteredCallerPolicy.fromEnvironment(environment)
                return [SecretServiceBridge(address: address, replace: replace, policy: policy, engine: served.engine, context: context)]
            }
        }
        var makeAgent: (@Sendable (DaemonLauncher.DaemonContext) -> [any Service])?
        // systemd passes the agent's socket (keychaind-ssh-agent.socket) when it is enabled: that serves it too.
        let activatedAgent = DaemonLauncher.activationSockets?.sshAgent
        if sshAgent || activatedAgent != nil {
            guard !system else {
                throw ValidationError("--ssh-agent serves one user's SSH keys; a --system keychaind cannot. Run a per-user keychaind with --ssh-agent.")
            }
            guard let socketPath = socket ?? DaemonSocket.defaultPath(ProcessInfo.processInfo.environment) else {
                throw ValidationError("XDG_RUNTIME_DIR is not set, so there is no default socket. Pass --socket PATH.")
            }
            let agentPath = DaemonSocket.sshAgentPath(forSocket: socketPath)
            makeAgent = { context in
                guard let served = context.keychains.open.first else { return [] }
                // The person is asked on the display when there is one, else on the terminal of the program that
                // asked (ssh in a terminal), as for every other prompt of keychaind.
                let prompters = context.prompters, location = served.engine.location
                let handler = SSHAgentHandler(store: SSHKeyStore(engine: served.engine), logger: context.logger) { peer in
                    prompters.prompter(for: location, terminal: PeerTerminal.path(of: peer.pid))
                }
                return [SSHAgentListener(path: agentPath, handler: handler, inherited: activatedAgent)]
            }
        }
        if makeBridge != nil || makeAgent != nil {
            launcher.additionalServices = { [makeBridge, makeAgent] context in
                try (makeBridge?(context) ?? []) + (makeAgent?(context) ?? [])
            }
        }
        do {
            let ready = readyFD
            try await launcher.run {
                // Tests and scripts wait for this line on stderr before connecting; a client that started this
                // keychaind waits for the word on its pipe.
                FileHandle.standardError.write(Data("keychaind: ready\n".utf8))
                if let ready {
                    _ = write(ready, "ready\n", 6)
                    close(ready)
                }
            }
        } catch let taken as SecretServiceProvider.NameTaken {
            // Its own status, so that systemd does not restart into the same refusal (RestartPreventExitStatus=3).
            FileHandle.standardError.write(Data("keychaind: \(taken)\n".utf8))
            throw ExitCode(Self.nameTakenStatus)
        }
    }
}
