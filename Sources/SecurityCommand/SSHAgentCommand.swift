import ArgumentParser
import Foundation
import KeychainKit
import KeychainProtocol

/// `security ssh-agent --env`: where keychaind's SSH agent listens, as shell commands that set `SSH_AUTH_SOCK`.
struct SSHAgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-agent",
        abstract: "Print the shell commands that point SSH at keychaind's SSH agent.",
        discussion: """
            keychaind started with --ssh-agent serves the keychain's SSH keys on ssh-agent.sock, in the folder of its \
            socket (the per-user keychaind's: $XDG_RUNTIME_DIR/keychain). With --env (the default) this prints \
            `SSH_AUTH_SOCK=PATH; export SSH_AUTH_SOCK;`, as ssh-agent -s does, for eval "$(security ssh-agent --env)" \
            in a shell's start-up file; it exits 1 when no agent answers there (the line is printed all the same). \
            A system keychaind (--system) serves no SSH agent.
            """
    )

    @Flag(name: .long, help: "Print the shell commands (the default).")
    var env = false

    @Option(name: .long, help: ArgumentHelp("keychaind's socket (default: the keychaind the item verbs use).", valueName: "path"))
    var socket: String?

    func run() throws {
        guard let daemon = socket ?? KeychainStore.expectedDaemon?.socket else {
            throw ToolFailure.input(
                "ssh-agent", "No keychaind is used here (KEYCHAIN_DAEMON_SOCKET=off, or none is installed), so there is no SSH agent. Start keychaind --ssh-agent.")
        }
        let path = DaemonSocket.sshAgentPath(forSocket: daemon)
        Output.standardOutput("SSH_AUTH_SOCK=\(Self.quoted(path)); export SSH_AUTH_SOCK;\n")
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            Output.standardError("security: no SSH agent is listening at \(path): start keychaind with --ssh-agent (the user unit's ExecStart).\n")
            throw ExitCode(1)
        }
    }

    /// `text` quoted for a POSIX shell when it holds anything but safe characters.
    static func quoted(_ text: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%")
        return text.allSatisfy { safe.contains($0) } ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
