import CKeychainLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The keychaind a client started on demand for the keychain in `home` (its socket, pid file and log in
/// `home/run`, where a keychain other than the default one, or one without `XDG_RUNTIME_DIR`, keeps them).
public struct AutostartedDaemon: Sendable {
    /// The keychain folder it serves.
    public let home: String

    public init(home: String) {
        self.home = home
    }

    /// Its socket.
    public var socket: String { home + "/run/keychaind.sock" }

    /// Its pid, from the pid file keychaind writes beside its socket; nil when there is none.
    public var pid: Int32? {
        guard let text = try? String(contentsOfFile: home + "/run/keychaind.pid", encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Whether its process runs.
    public var isRunning: Bool {
        guard let pid else { return false }
        return kill(pid, 0) == 0
    }

    /// Its log (standard error of the keychaind the client started).
    public var log: String { (try? String(contentsOfFile: home + "/run/keychaind.log", encoding: .utf8)) ?? "" }

    /// Stops it with SIGTERM and waits (at most `timeout`) until its process is gone; true when it is.
    @discardableResult
    public func stop(timeout: Duration = .seconds(20)) -> Bool {
        guard let pid, kill(pid, SIGTERM) == 0 else { return true }
        return waitUntilGone(pid, timeout: timeout)
    }

    /// Waits until process `pid` no longer exists (it is not this process's child, so it cannot be waited for),
    /// through a pidfd that becomes readable when it exits; true when it is gone within `timeout`.
    public func waitUntilGone(_ pid: Int32, timeout: Duration) -> Bool {
        let fd = ckeychain_pidfd_open(pid)
        guard fd >= 0 else { return errno == ESRCH }
        defer { close(fd) }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let (seconds, attoseconds) = timeout.components
        return poll(&poller, 1, Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)) == 1
    }
}
