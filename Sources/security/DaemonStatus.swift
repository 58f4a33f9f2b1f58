import ArgumentParser
import Foundation
import KeychainCore
import Synchronization

/// How the tool reaches keychaind: which socket the environment names, one shared client per socket (so a
/// passcode given on a connection stays with the calls that follow it), and the unlock that answers keychaind's
/// demand for the passcode.
enum ToolDaemon {
    /// The clients made so far, by socket path.
    private static let clients = Mutex<[String: DaemonClient]>([:])

    /// The client of the daemon at `path`, made once per process: a retry after a prompt must reuse the
    /// connection the passcode was given on.
    static func client(_ path: String) -> DaemonClient {
        clients.withLock { clients in
            if let known = clients[path] { return known }
            let made = DaemonClient(socketPath: path)
            clients[path] = made
            return made
        }
    }

    /// The daemon the registry verbs go through, chosen as SecItem calls choose: the socket
    /// `KEYCHAIN_DAEMON_SOCKET` names (even when nothing answers there, so the failure says so), else the
    /// default socket when `KEYCHAIN_HOME` is unset and a daemon answers there. Nil: work on the store in-process.
    static func fromEnvironment() -> DaemonClient? {
        guard let endpoint = DaemonEndpoint.fromEnvironment() else { return nil }
        let client = client(endpoint.path)
        return endpoint.explicit || client.isReachable() ? client : nil
    }

    /// The socket `security daemon status` asks: `--socket`, else `KEYCHAIN_DAEMON_SOCKET` (unless `off`),
    /// else the default socket under `XDG_RUNTIME_DIR`. Nil when none can be named.
    static func statusSocket(_ override: String?) -> String? {
        if let override { return override }
        let environment = KeychainLocation.processEnvironment()
        if let named = environment["KEYCHAIN_DAEMON_SOCKET"], !named.isEmpty, named != "off" { return named }
        return DaemonEndpoint.defaultPath(environment)
    }

    /// Sends one call, reporting a failure as `function` failing (as macOS names it).
    @discardableResult
    static func call(_ client: DaemonClient, _ operation: WireFrame.Operation, _ arguments: [String: PlistValue],
                     function: String) throws(ToolFailure) -> PlistValue? {
        do {
            return try client.call(operation, arguments)
        } catch {
            var failure = ToolFailure(function, error)
            failure.daemon = client
            throw failure
        }
    }

    /// The daemon's lock state.
    static func lockState(_ client: DaemonClient, function: String) throws(ToolFailure) -> LockState {
        guard case .dictionary(let status)? = try call(client, .status, [:], function: function),
              case .string(let name)? = status["lockState"] else {
            throw ToolFailure(function, KeychainError(code: .internal, message: "keychaind answered its status in an unknown form; install keychaind and security from the same build."))
        }
        switch name {
        case "noPasscode": return .noPasscode
        case "beforeFirstUnlock": return .beforeFirstUnlock
        case "locked": return .locked
        default: return .unlocked
        }
    }

    /// Asks for the keychain's passcode on the terminal and gives it to keychaind through `client`, whose
    /// connection the daemon then trusts with the admin tool's calls. Fails with `errSecInteractionNotAllowed`
    /// at once when there is no terminal, and with the daemon's error for a wrong or throttled passcode.
    static func unlock(_ client: DaemonClient) throws(ToolFailure) {
        let passcode = try PasswordPrompt.ask("password to unlock default: ", function: UnlockKeychain.function,
                                              hint: "keychaind lets the security tool manage the keychain only after it gives the keychain's passcode; run the command from a terminal to be asked for it.")
        do {
            _ = try client.call(.unlock, ["passcode": .string(passcode)])
        } catch {
            throw ToolFailure(UnlockKeychain.function, error)
        }
    }
}

/// `security daemon`: keychaind, as this tool sees it.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Show keychaind's state.",
        subcommands: [DaemonStatus.self]
    )
}

/// `security daemon status`: whether keychaind answers, which keychain it serves, its lock state, and how
/// it sees this tool.
struct DaemonStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether keychaind is running and what it serves.",
        discussion: """
        Asks the daemon at --socket, else at KEYCHAIN_DAEMON_SOCKET, else at \
        $XDG_RUNTIME_DIR/keychain/keychaind.sock. When it answers, prints "keychaind: running (pid N)", then \
        "socket:", "keychain:" (its KEYCHAIN_HOME), "lock state:" (unlocked, locked, no passcode or before \
        first unlock), "caller:" (this process as the daemon identifies it), "admin tool:" (yes when this is \
        the security installed beside keychaind, which may manage the keychain) and "access groups:", one \
        per line, and exits 0. When nothing answers, prints "keychaind: not running (socket PATH)" and exits 1.
        """
    )

    /// The function name printed when the daemon answers with an error.
    static let function = "daemon status"

    @Option(name: .long, help: ArgumentHelp("The daemon's socket (default: KEYCHAIN_DAEMON_SOCKET, else $XDG_RUNTIME_DIR/keychain/keychaind.sock).",
                                            valueName: "path"))
    var socket: String?

    func run() async throws {
        guard let path = ToolDaemon.statusSocket(socket) else {
            Output.standardOutput("keychaind: not running (no socket: XDG_RUNTIME_DIR is not set; pass --socket PATH)\n")
            throw ExitCode(1)
        }
        let result: PlistValue?
        do throws(KeychainError) {
            result = try ToolDaemon.client(path).call(.status, [:])
        } catch let error where error.code == .notAvailable {
            Output.standardOutput("keychaind: not running (socket \(path))\n")
            throw ExitCode(1)
        } catch {
            throw ToolFailure(Self.function, error)
        }
        guard case .dictionary(let status)? = result else {
            throw ToolFailure(Self.function, status: .internal,
                              detail: "keychaind at \(path) sent a status this security tool cannot read. Install keychaind and security from the same build.")
        }
        Output.standardOutput(Self.describe(status, socket: path))
    }

    /// The lines printed for the daemon's status dictionary.
    static func describe(_ status: [String: PlistValue], socket: String) -> String {
        func text(_ key: String) -> String {
            switch status[key] {
            case .string(let value)?: value
            case .int(let value)?: String(value)
            default: "unknown"
            }
        }
        var lines = [
            "keychaind: running (pid \(text("pid")))",
            "socket: \(socket)",
            "keychain: \(text("home"))",
            "lock state: \(lockState(text("lockState")))",
            "caller: \(text("caller"))",
        ]
        if case .bool(let admin)? = status["adminTool"] {
            lines.append("admin tool: \(admin ? "yes" : "no")")
        }
        if case .array(let list)? = status["groups"] {
            var groups: [String] = []
            for case .string(let group) in list { groups.append(group) }
            lines.append("access groups: \(groups.joined(separator: ","))")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// The daemon's lock state (a ``LockState`` case name) in words.
    static func lockState(_ name: String) -> String {
        switch name {
        case "noPasscode": "no passcode"
        case "beforeFirstUnlock": "before first unlock"
        default: name
        }
    }
}
