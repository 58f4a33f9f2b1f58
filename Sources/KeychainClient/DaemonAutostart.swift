import CKeychainLinux
import Foundation
import KeychainCore
import KeychainProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Starts a per-user keychaind for one keychain when a client finds none at the keychain's socket, as GnuPG's tools
/// start gpg-agent: detached (a session of its own, never the client's child), its socket in a private folder, its
/// log beside the socket, and exiting by itself after ``idleExitSeconds`` with no connection, when no keychain it
/// serves is unlocked or syncing.
///
/// Clients that start one at the same moment take turns on `autostart.lock` in the socket's folder: the first
/// starts keychaind and waits until it accepts connections, the others then find it answering. A keychaind that
/// exits when idle holds the same lock while it gives up its socket, so a client never races a daemon going away.
package struct DaemonAutostart: Sendable, Hashable {
    /// The keychaind executable to run.
    package var program: String
    /// The socket it listens on.
    package var socket: String
    /// The keychain folder it serves (`KEYCHAIN_HOME`).
    package var home: String
    /// Seconds without a connection after which it exits (when nothing is unlocked or syncing).
    package var idleExitSeconds: Int = 600
    /// How long a client waits for the keychaind it started to accept connections.
    package var readyTimeout: Duration = .seconds(30)

    package init(program: String, socket: String, home: String) {
        self.program = program
        self.socket = socket
        self.home = home
    }

    /// The folder of the socket, the lock and the log.
    package var folder: String { NSString(string: socket).deletingLastPathComponent }
    /// The log of the keychaind started here (its standard error).
    package var logPath: String { folder + "/keychaind.log" }
    /// The lock clients and an exiting keychaind take turns on.
    package var lockPath: String { DaemonSocket.autostartLockPath(forSocket: socket) }

    /// The keychaind to start: the one beside this program's executable (where `security`, `git-credential-keychain`
    /// and keychaind are installed together), else the first on `PATH`; nil when there is none.
    package static func locateProgram(searchPath: String?) -> String? {
        var candidates: [String] = []
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(NSString(string: NSString(string: own).deletingLastPathComponent).appendingPathComponent("keychaind"))
        }
        for folder in (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where folder.hasPrefix("/") {
            candidates.append(String(folder) + "/keychaind")
        }
        return candidates.first { access($0, X_OK) == 0 && !FileManager.default.directoryExists($0) }
    }

    /// Makes sure a keychaind answers at ``socket``: returns at once when one does, else starts one and waits until
    /// it accepts connections. Fails with `errSecNotAvailable` saying why it could not start, with the end of its log.
    package func ensureRunning(environment: [String: String]) throws(KeychainError) {
        do {
            try FileSystem.ensurePrivateDirectory(folder)
        } catch {
            throw failure("its folder \(folder) cannot be used: \(error.message)", hint: "Make \(folder) a folder of yours with mode 0700, or set XDG_RUNTIME_DIR.")
        }
        let lock: Int32
        do {
            lock = try FileSystem.openOwnFile(lockPath, flags: O_RDONLY)
        } catch {
            throw failure("\(lockPath) cannot be opened: \(error.message)", hint: "Remove it; it is made again.")
        }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw failure("\(lockPath) cannot be locked: \(String(cString: strerror(errno)))", hint: "Check the folder's file system.") }
        }
        if DaemonSocket.accepts(socket) { return }
        try start(environment: environment)
    }

    /// Starts keychaind (the caller holds the lock) and waits for its word on the ready pipe.
    private func start(environment: [String: String]) throws(KeychainError) {
        var pipeFDs: [Int32] = [-1, -1]
        guard ckeychain_pipe_cloexec(&pipeFDs) == 0 else {
            throw failure("no pipe could be made (\(String(cString: strerror(errno))))", hint: "Close some programs and try again.")
        }
        defer { if pipeFDs[0] >= 0 { close(pipeFDs[0]) } }
        let log: Int32
        do {
            log = try FileSystem.openOwnFile(logPath, flags: O_WRONLY | O_APPEND)
        } catch {
            close(pipeFDs[1])
            throw failure("its log \(logPath) cannot be opened: \(error.message)", hint: "Remove it; it is made again.")
        }
        // A log of an earlier start that grew large is started again.
        var info = stat()
        if fstat(log, &info) == 0, info.st_size > 1 << 20 { _ = ftruncate(log, 0) }
        let arguments = [program, "--socket", socket, "--ready-fd", "3", "--exit-when-idle", String(idleExitSeconds)]
        let spawned = Self.withCStrings(arguments) { argv in
            Self.withCStrings(Self.daemonEnvironment(environment, home: home)) { envp in
                ckeychain_spawn_detached(program, argv, envp, pipeFDs[1], log)
            }
        }
        close(pipeFDs[1])
        close(log)
        guard spawned == 0 else {
            throw failure("\(program) could not be started (\(String(cString: strerror(spawned))))", hint: "Check that it is an executable keychaind.")
        }
        if let reason = waitForReady(pipeFDs[0]) {
            throw failure(reason + lastLines(), hint: "See \(logPath); run `keychaind --foreground` with KEYCHAIN_HOME=\(home) to see it start.")
        }
    }

    /// Reads the ready pipe until keychaind writes `ready` (nil) or closes it by exiting (the reason).
    private func waitForReady(_ fd: Int32) -> String? {
        let deadline = ContinuousClock.now + readyTimeout
        var received: [UInt8] = []
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return "keychaind did not become ready within \(readyTimeout)" }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let n = poll(&poller, 1, milliseconds)
            if n < 0 {
                if errno == EINTR { continue }
                return "waiting for keychaind failed (\(String(cString: strerror(errno))))"
            }
            if n == 0 { continue }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return "waiting for keychaind failed (\(String(cString: strerror(errno))))"
            }
            if count == 0 { return "keychaind exited before it was ready" }
            received += buffer[0..<count]
            if received.starts(with: Array("ready".utf8)) { return nil }
        }
    }

    /// The last lines of the log, after a colon, for a failure's message.
    private func lastLines() -> String {
        guard let data = try? FileSystem.read(logPath) else { return "" }
        let lines = String(decoding: data.suffix(2048), as: UTF8.self).split(separator: "\n").suffix(3)
        return lines.isEmpty ? "" : ": " + lines.joined(separator: " / ")
    }

    private func failure(_ what: String, hint: String) -> KeychainError {
        KeychainError(code: .notAvailable, message: "keychaind could not be started for \(home) on \(socket): \(what).\n\(hint)")
    }

    /// keychaind's environment: the client's, less what names another daemon, another caller's claim or code to
    /// load into it, with `KEYCHAIN_HOME` set to the keychain it serves.
    static func daemonEnvironment(_ environment: [String: String], home: String) -> [String] {
        let dropped: Set<String> = [
            "KEYCHAIN_DAEMON_SOCKET", "KEYCHAIN_ENTITLEMENTS", "LISTEN_PID", "LISTEN_FDS",
            "LISTEN_FDNAMES", "NOTIFY_SOCKET", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
        ]
        var result = environment.filter { !dropped.contains($0.key) && !$0.key.hasPrefix("LD_") }
        result["KEYCHAIN_HOME"] = home
        return result.map { "\($0.key)=\($0.value)" }.sorted()
    }

    /// Runs `body` with `strings` as a NULL-terminated array of C strings.
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> T) -> T {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}

extension FileManager {
    /// Whether `path` is a folder (following links).
    func directoryExists(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
