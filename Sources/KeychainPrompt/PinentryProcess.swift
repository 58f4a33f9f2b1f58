import Foundation
import CKeychainLinux

/// One running pinentry and the Assuan conversation with it.
///
/// The program is started with `posix_spawn` (never a shell), with argv just its path, in a session of its own
/// (`setsid`: no controlling terminal, so a terminal pinentry writing to the tty it is told about with
/// `OPTION ttyname` is never stopped as a background job; and its process group, led by it, can be killed whole).
/// Its standard input and output are the two ends of one Unix socket pair rather than two pipes: writing to a
/// pinentry that has exited then fails with `EPIPE` (`send` with `MSG_NOSIGNAL`) instead of raising `SIGPIPE`,
/// which would kill the process the prompt runs in (keychaind, or an app using the keychain in-process, whose
/// signal handling is not ours to change). Its standard error is `/dev/null`, and it inherits no other descriptor
/// (every descriptor from 3 up is closed in the child). Its environment holds only
/// ``PinentryProcess/allowedVariables`` (and the test pinentry's ``PinentryProcess/testVariablePrefix`` variables).
///
/// Not thread-safe: one prompt owns it. ``terminate()`` (also run on deinit) kills the process group with
/// `SIGKILL` and reaps the child, so neither a zombie nor a descriptor outlives it.
package final class PinentryProcess {
    /// The pinentry's process id (also its process group and session id).
    package let pid: pid_t
    /// This side of the socket pair; -1 once closed.
    private var fd: Int32
    private var reader: AssuanLineReader
    private var reaped = false

    /// This side's descriptor, -1 once closed (for the tests' leak checks).
    var descriptor: Int32 { fd }

    /// The variables passed to the pinentry when set: what a graphical pinentry needs to reach the display and the
    /// session bus (X11, Wayland, GNOME's prompter), what a terminal pinentry needs (`TERM`, `GPG_TTY`), the locale,
    /// `HOME` and `PATH`. Nothing else of the caller's environment reaches it (no `LD_*`, no secrets).
    package static let allowedVariables: Set<String> = [
        "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP",
        "DBUS_SESSION_BUS_ADDRESS", "HOME", "USER", "LOGNAME", "PATH", "TERM", "GPG_TTY", "PINENTRY_USER_DATA",
        "LANG", "LANGUAGE",
    ]

    /// Variables starting with this prefix pass as well: they drive the scripted pinentry the tests use
    /// (`SCRIPTED_PINENTRY_SCRIPT`, `SCRIPTED_PINENTRY_LOG`), including through keychaind, and mean nothing to a
    /// real pinentry.
    package static let testVariablePrefix = "SCRIPTED_PINENTRY_"

    /// The pinentry's environment: the allowed variables of `environment`, the locale's `LC_*` variables, and the
    /// test pinentry's variables. Values with a NUL byte are dropped.
    package static func environment(from environment: [String: String]) -> [String: String] {
        environment.filter { name, value in
            !value.utf8.contains(0)
                && (allowedVariables.contains(name) || name.hasPrefix("LC_") || name.hasPrefix(testVariablePrefix))
        }
    }

    private init(pid: pid_t, fd: Int32) {
        self.pid = pid
        self.fd = fd
        self.reader = AssuanLineReader(fd: fd)
    }

    deinit { terminate() }

    /// Starts `program` (an absolute path) with `environment` as it is (build it with
    /// ``environment(from:)``). Fails with the errno of the failed step (`ENOENT`, `EACCES` when the program
    /// cannot be run).
    package static func start(program: String, environment: [String: String]) throws(AssuanError) -> PinentryProcess {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw .system("socketpair", errno)
        }
        let ours = pair[0]
        var theirs = pair[1]
        defer { close(theirs) }
        // dup2 onto 0 or 1 from the same number would keep close-on-exec: move the child's end above 2 first.
        if theirs < 3 {
            let moved = fcntl(theirs, F_DUPFD_CLOEXEC, 3)
            guard moved >= 0 else {
                let code = errno
                close(ours)
                throw .system("fcntl", code)
            }
            close(theirs)
            theirs = moved
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, theirs, 0)
        posix_spawn_file_actions_adddup2(&actions, theirs, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let closing = ckeychain_spawn_add_closefrom(&actions, 3)
        guard closing == 0 else {
            close(ours)
            throw .system("posix_spawn_file_actions_addclosefrom_np", closing)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        // Signals the caller ignores (SIGPIPE, often) are reset, so the pinentry starts with the defaults.
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        let setsid = ckeychain_spawn_setsid_flag()
        guard setsid != 0 else {
            close(ours)
            throw .system("posix_spawn with POSIX_SPAWN_SETSID", ENOSYS)
        }
        posix_spawnattr_setflags(&attributes, setsid | Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, &attributes, &argv, &envp)
        guard spawned == 0 else {
            close(ours)
            throw .system("posix_spawn", spawned)
        }
        return PinentryProcess(pid: pid, fd: ours)
    }

    /// Sends one line (the LF is added) before `deadline`.
    package func send(_ line: String, deadline: ContinuousClock.Instant) throws(AssuanError) {
        guard fd >= 0 else { throw .closed }
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        guard bytes.count <= Assuan.maximumLineLength else { throw .lineTooLong }
        var offset = 0
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT), deadline: deadline)
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                if code == EPIPE || code == ECONNRESET { throw .closed }
                throw .system("send", code)
            }
            offset += sent
        }
    }

    /// The next response line before `deadline`.
    package func receive(deadline: ContinuousClock.Instant) throws(AssuanError) -> AssuanResponse {
        guard fd >= 0 else { throw .closed }
        var line = try reader.nextLine(deadline: deadline)
        defer { for index in line.indices { line[index] = 0 } }
        return try AssuanResponse.parse(line)
    }

    /// Sends `line` and reads up to its final `OK` or `ERR`: data lines are gathered (at most
    /// ``Assuan/maximumDataLength`` bytes), status and comment lines skipped, and an `INQUIRE` answered `CAN`
    /// (nothing this prompter sends asks for one; at most 8 are answered).
    package func transact(_ line: String, deadline: ContinuousClock.Instant) throws(AssuanError) -> AssuanReply {
        try send(line, deadline: deadline)
        var data: [UInt8] = []
        var inquiries = 0
        while true {
            switch try receive(deadline: deadline) {
            case .ok:
                return .ok(data)
            case .error(let code, let text):
                for index in data.indices { data[index] = 0 }
                return .error(code: code, text: text)
            case .data(var bytes):
                guard data.count + bytes.count <= Assuan.maximumDataLength else {
                    for index in data.indices { data[index] = 0 }
                    throw .dataTooLong
                }
                data.append(contentsOf: bytes)
                for index in bytes.indices { bytes[index] = 0 }
            case .status, .comment:
                continue
            case .inquire:
                inquiries += 1
                guard inquiries <= 8 else { throw .malformed("too many INQUIRE lines") }
                try send("CAN", deadline: deadline)
            }
        }
    }

    /// Ends the conversation politely: `BYE`, its answer, then up to `grace` for the pinentry to exit on its own
    /// (a terminal pinentry restores the terminal on the way out); then ``terminate()``.
    package func finish(grace: Duration = .seconds(1)) {
        let deadline = ContinuousClock.now.advanced(by: grace)
        if fd >= 0, (try? send("BYE", deadline: deadline)) != nil {
            _ = try? receive(deadline: deadline)
        }
        closeConnection()
        while !reaped {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) {
                reaped = true
            } else if ContinuousClock.now >= deadline {
                break
            } else {
                usleep(5_000)
            }
        }
        terminate()
    }

    /// Kills the pinentry's process group and the pinentry with `SIGKILL`, reaps it, and closes the connection.
    /// Does nothing once done.
    package func terminate() {
        closeConnection()
        guard !reaped else { return }
        reaped = true
        // Signal only a child not reaped yet (alive, or a zombie): its pid, and the process group it leads, cannot
        // have been reused. (Where SIGCHLD is ignored the kernel reaps it at exit, and there is nothing to kill.)
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return }
        // Its process group (it leads one: it was started in a session of its own) takes any child it started.
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }

    private func closeConnection() {
        guard fd >= 0 else { return }
        reader.clear()
        close(fd)
        fd = -1
    }

    private func wait(for events: Int16, deadline: ContinuousClock.Instant) throws(AssuanError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut }
            let milliseconds = Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var poller = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw .system("poll", errno) }
        }
    }
}

/// How one command ended: `OK` with the data that came before it, or `ERR`.
package enum AssuanReply: Equatable, Sendable {
    /// `OK`, after the data lines (unescaped, possibly empty). The data may be a secret.
    case ok([UInt8])
    /// `ERR code text`.
    case error(code: UInt32, text: String)
}
