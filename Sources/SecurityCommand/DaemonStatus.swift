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
            Asks the keychaind the item verbs use (KEYCHAIN_DAEMON_SOCKET, else the system keychaind when it is \
            installed, else the keychain's per-user keychaind), or the one at --socket. When it answers, prints \
            "keychaind: running (pid N)", then "socket:", "mode:" (per-user, started on demand, or system), \
            "uptime:", "keychain:" (its KEYCHAIN_HOME), "lock state:" (unlocked, locked, no passcode or before \
            first unlock), "caller:" (this process as the daemon identifies it), "admin tool:" (yes when this is \
            the security installed beside keychaind, which may manage the keychain) and "access groups:", one \
            per line, and exits 0. When nothing answers, prints "keychaind: not running (socket PATH)" and exits 1. \
            Warns on standard error when the kernel lets any program of a user attach to another of the same user \
            (kernel.yama.ptrace_scope 0, or no Yama): such a program can act as any other of that user, and keychaind \
            can refuse only the ones it sees being traced.
            """
    )

    /// The function name printed when the daemon answers with an error.
    static let function = "daemon status"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The daemon's socket (default: the keychaind the item verbs use).",
            valueName: "path"))
    var socket: String?

    func run() async throws {
        let expected = socket == nil ? KeychainStore.expectedDaemon : nil
        guard let path = socket ?? expected?.socket else {
            Output.standardOutput("keychaind: not used (KEYCHAIN_DAEMON_SOCKET=off, or no keychaind is installed): this process opens the keychain itself, with no isolation between programs\n")
            throw ExitCode(1)
        }
        let status: KeychainStore.Status
        do throws(KeychainError) {
            status = try KeychainStore.daemonStatus(socket: path)
        } catch  where error.code == .notAvailable && error.status != .wrongSecVersion {
            let onDemand = expected?.startsOnDemand == true ? "; the next keychain call starts it" : ""
            Output.standardOutput("keychaind: not running (socket \(path)\(onDemand))\n")
            throw ExitCode(1)
        } catch {
            throw ToolFailure(Self.function, error)
        }
        Output.standardOutput(Self.describe(status, socket: path, mode: expected?.mode, uptime: status.daemon.flatMap { Self.uptime(ofProcess: $0.pid) }))
        if let warning = Self.ptraceWarning(scope: try? String(contentsOfFile: "/proc/sys/kernel/yama/ptrace_scope", encoding: .utf8)) {
            Output.standardError(warning)
        }
    }

    /// The warning for the kernel's `kernel.yama.ptrace_scope` (its file's text; nil: Yama is absent), or nil when
    /// processes of one user cannot attach to each other.
    static func ptraceWarning(scope: String?) -> String? {
        let value = scope?.trimmingCharacters(in: .whitespacesAndNewlines)
        guard value == nil || value == "0" else { return nil }
        let setting = value == nil ? "this kernel has no Yama (kernel.yama.ptrace_scope)" : "kernel.yama.ptrace_scope is 0"
        return """
            warning: \(setting), so any program you run can attach to any other of yours (ptrace, /proc/PID/mem) and act \
            as it. keychaind refuses a client it sees traced, but code injected without a tracer goes unseen: a program \
            registered with keychaind is only as safe as every other program you run. Set kernel.yama.ptrace_scope=1 \
            (sysctl, or /etc/sysctl.d) to allow attaching to one's own children only.

            """
    }

    /// The lines printed for the daemon's status.
    static func describe(_ status: KeychainStore.Status, socket: String, mode: String? = nil, uptime: Int? = nil) -> String {
        var lines = [
            "keychaind: running (pid \(status.daemon.map { String($0.pid) } ?? "unknown"))",
            "socket: \(socket)",
        ]
        if let mode { lines.append("mode: \(mode)") }
        if let uptime { lines.append("uptime: \(duration(uptime))") }
        lines += [
            "keychain: \(status.directory)",
            "lock state: \(lockState(status.lockStatus))",
            "caller: \(status.daemon?.caller ?? "unknown")",
        ]
        if let daemon = status.daemon {
            lines.append("admin tool: \(daemon.isAdminTool ? "yes" : "no")")
            if let groups = daemon.accessGroups { lines.append("access groups: \(groups.joined(separator: ","))") }
            lines.append("writes: \(writes(daemon))")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// How long process `pid` has run, in whole seconds, from `/proc` (its start in clock ticks since boot); nil
    /// when it cannot be read.
    static func uptime(ofProcess pid: Int32) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"),
            let boot = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8),
            let sinceBoot = boot.split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        // Fields after the command's closing parenthesis start at field 3; the start time is field 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        guard fields.count > 19, let start = Double(fields[19]), ticks > 0 else { return nil }
        return max(0, Int(sinceBoot - start / Double(ticks)))
    }

    /// `seconds` as `1h 2m 3s` (largest units first, zeros left out; `0s` for none).
    static func duration(_ seconds: Int) -> String {
        let parts = [(seconds / 86400, "d"), (seconds / 3600 % 24, "h"), (seconds / 60 % 60, "m"), (seconds % 60, "s")]
        let shown = parts.drop { $0.0 == 0 }.filter { $0.0 > 0 }.map { "\($0.0)\($0.1)" }
        return shown.isEmpty ? "0s" : shown.joined(separator: " ")
    }

    /// The writes keychaind committed, how many shared each commit (group commit) and how long each held the
    /// writer, e.g. `1200 in 75 commits (16.0 per commit; writer busy 14 µs per write)`.
    static func writes(_ daemon: KeychainStore.Status.Daemon) -> String {
        guard daemon.commits > 0 else { return "none since keychaind started" }
        let perCommit = (Double(daemon.writes) / Double(daemon.commits) * 10).rounded() / 10
        let busy = daemon.writerTime / max(daemon.writes, 1)
        let microseconds = busy.components.seconds * 1_000_000 + busy.components.attoseconds / 1_000_000_000_000
        return "\(daemon.writes) in \(daemon.commits) commit\(daemon.commits == 1 ? "" : "s") (\(perCommit) per commit; writer busy \(microseconds) µs per write)"
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
