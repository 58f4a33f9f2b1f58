import ArgumentParser
import Foundation
import KeychainKit
import Synchronization

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
        guard let path = socket ?? KeychainStore.expectedDaemonSocket else {
            Output.standardOutput("keychaind: not running (no socket: XDG_RUNTIME_DIR is not set; pass --socket PATH)\n")
            throw ExitCode(1)
        }
        let status: KeychainStore.Status
        do throws(KeychainError) {
            status = try KeychainStore.daemonStatus(socket: path)
        } catch where error.code == .notAvailable && error.status != .wrongSecVersion {
            Output.standardOutput("keychaind: not running (socket \(path))\n")
            throw ExitCode(1)
        } catch {
            throw ToolFailure(Self.function, error)
        }
        Output.standardOutput(Self.describe(status, socket: path))
    }

    /// The lines printed for the daemon's status.
    static func describe(_ status: KeychainStore.Status, socket: String) -> String {
        var lines = [
            "keychaind: running (pid \(status.daemon.map { String($0.pid) } ?? "unknown"))",
            "socket: \(socket)",
            "keychain: \(status.directory)",
            "lock state: \(lockState(status.lockStatus))",
            "caller: \(status.daemon?.caller ?? "unknown")",
        ]
        if let daemon = status.daemon {
            lines.append("admin tool: \(daemon.isAdminTool ? "yes" : "no")")
            if let groups = daemon.accessGroups { lines.append("access groups: \(groups.joined(separator: ","))") }
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// The daemon's lock state in words.
    static func lockState(_ state: KeychainStore.LockStatus) -> String {
        switch state {
        case .noPasscode: "no passcode"
        case .beforeFirstUnlock: "before first unlock"
        case .unlocked: "unlocked"
        case .locked: "locked"
        }
    }
}
