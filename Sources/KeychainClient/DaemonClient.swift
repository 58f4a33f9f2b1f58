import CKeychainLinux
import Foundation
import KeychainCore
import KeychainProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A client of keychaind: sends one request per call and waits for its response, over blocking Unix-socket
/// connections kept in a small pool, so calls from many threads run side by side without sharing a
/// connection.
package final class DaemonClient: Sendable {
    package let socketPath: String
    /// Idle connections, each with the time (monotonic nanoseconds) it was last used and the process that made it.
    private let idle = Mutex<[(fd: Int32, since: UInt64, owner: pid_t)]>([])
    private let nextID = Atomic<UInt32>(1)
    /// Idle connections kept for reuse; more are closed after their call. As many as the threads of a busy program
    /// call at once: a connection closed after its call costs keychaind a thread and a new identification on the
    /// next (a quarter of its time per add with 32 threads adding and 16 kept). keychaind allows 256 per user.
    private let maximumIdle = 64

    /// How to start keychaind when nothing listens at the socket (the per-user keychaind a client starts on
    /// demand); nil: never start one.
    package let autostart: DaemonAutostart?

    package init(socketPath: String, autostart: DaemonAutostart? = nil) {
        self.socketPath = socketPath
        self.autostart = autostart
    }

    deinit {
        for connection in idle.withLock({ $0 }) { close(connection.fd) }
    }

    /// Whether a daemon accepts connections at the path: an idle connection is open, or a new one can be
    /// made (and is kept for the next call).
    package func isReachable() -> Bool {
        guard let connection = try? checkOut() else { return false }
        checkIn(connection.fd)
        return true
    }

    /// Sends `request` and returns keychaind's response. A failure response comes back as the
    /// ``KeychainError`` the daemon reported, with its code, `OSStatus` and message.
    package func call(_ request: KeychainRequest) throws(KeychainError) -> KeychainResponse {
        var (fd, reused) = try checkOut()
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let frame = Frame(id: id, body: .request(request)).encoded
        let response: Frame
        do throws(KeychainError) {
            if let failure = send(fd, frame) {
                // A pooled connection the daemon closed since (it restarted): nothing was delivered, so the
                // request goes again on a new connection.
                guard reused, failure == EPIPE || failure == ECONNRESET else { throw lost(String(cString: strerror(failure))) }
                close(fd)
                (fd, reused) = (try connect(), false)
                if let again = send(fd, frame) { throw lost(String(cString: strerror(again))) }
            }
            response = try receive(fd)
        } catch {
            close(fd)
            throw error
        }
        switch response.body {
        case .response(let answer) where response.id == id:
            checkIn(fd)
            if case .failure(let error) = answer { throw error }
            return answer
        case .response(.failure(let error)) where response.id == 0:
            // keychaind closed the connection and said why (a limit, a request that took too long).
            close(fd)
            throw error
        case .versionRefused(_, let message):
            close(fd)
            throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: message)
        default:
            close(fd)
            throw lost("answered a different request")
        }
    }

    // MARK: Connections

    /// An idle connection (`reused`), else a new one. A connection idle for a while is checked first, since the
    /// daemon may have restarted meanwhile; one used a moment ago is not (a send on it fails at once if it was
    /// closed, and is then made again on a new connection).
    ///
    /// A connection belongs to the process that made it: keychaind closes one that another process sends on, so a
    /// child after `fork` leaves its parent's connections alone and makes its own.
    private func checkOut() throws(KeychainError) -> (fd: Int32, reused: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        let me = CurrentProcess.id
        while let connection = idle.withLock({ $0.popLast() }) {
            guard connection.owner == me else {
                // The parent's connection, inherited across fork: this process's copy is closed, the parent's stays.
                close(connection.fd)
                continue
            }
            if now &- connection.since < 500_000_000 || DaemonClient.isOpen(connection.fd) { return (connection.fd, true) }
            close(connection.fd)
        }
        return (try connect(), false)
    }

    private func checkIn(_ fd: Int32) {
        let since = DispatchTime.now().uptimeNanoseconds
        let owner = CurrentProcess.id
        let kept = idle.withLock { pool in
            guard pool.count < maximumIdle else { return false }
            pool.append((fd, since, owner))
            return true
        }
        if !kept { close(fd) }
    }

    /// Whether an idle connection is still usable: the daemon has not closed it (it restarted, say).
    private static func isOpen(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, 0)
        // An idle connection has nothing to read; readable means end of stream or an error.
        return n == 0
    }

    private func unreachable(_ reason: String) -> KeychainError {
        if socketPath == DaemonSocket.systemPath(KeychainLocation.processEnvironment()) {
            return KeychainError(
                code: .notAvailable,
                message:
                    "The system keychaind is not answering at \(socketPath) (\(reason)).\nAsk an administrator to check it (`systemctl status keychaind-system.socket keychaind-system.service`); while the system keychaind is installed, your keychain is reached only through it."
            )
        }
        return KeychainError(
            code: .notAvailable,
            message:
                "keychaind is not answering at \(socketPath) (\(reason)).\nStart it with `systemctl --user start keychaind.socket` or `keychaind --foreground`. A keychain that keychaind has served is never opened without it; to use one without keychaind again, stop keychaind and remove keychaind.serves from the keychain's folder (and unset KEYCHAIN_DAEMON_SOCKET)."
        )
    }

    private func lost(_ reason: String) -> KeychainError {
        KeychainError(
            code: .notAvailable, message: "The connection to keychaind at \(socketPath) was lost (\(reason)); the call may not have completed. Check that keychaind is running and try again.")
    }

    /// A new connection, once keychaind has greeted it: keychaind identifies the process first and answers only
    /// what is sent after its greeting.
    private func connect() throws(KeychainError) -> Int32 {
        let fd: Int32
        do {
            fd = try DaemonSocket.connect(socketPath)
        } catch  where error.code == .notAvailable {
            guard let autostart, DaemonSocket.nobodyListens(error) else { throw unreachable(error.message) }
            // No keychaind for this keychain yet (or it exited when idle): start one, then connect to it.
            try autostart.ensureRunning(environment: ProcessInfo.processInfo.environment)
            do {
                fd = try DaemonSocket.connect(socketPath)
            } catch  where error.code == .notAvailable {
                throw unreachable(error.message)
            }
        }
        let greeting: Frame
        do {
            try checkOwner(fd)
            greeting = try receive(fd)
        } catch {
            close(fd)
            throw error
        }
        switch greeting.body {
        case .response(.done) where greeting.id == 0:
            return fd
        case .response(.failure(var refusal)):
            // Said before anything was sent (a limit, an identity it cannot read): name the keychaind that said it.
            close(fd)
            refusal.message = "keychaind at \(socketPath) refused the connection: " + refusal.message
            throw refusal
        case .versionRefused(_, let message):
            close(fd)
            throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: message)
        default:
            close(fd)
            throw lost("keychaind did not greet the connection")
        }
    }

    /// Refuses a socket served by a process of another user than this one, root, or the `keychain` system user
    /// (the system keychaind): another user could listen at a path this program trusts and collect passcodes and
    /// secrets. Checked from the kernel (`SO_PEERCRED`) before anything is sent.
    private func checkOwner(_ fd: Int32) throws(KeychainError) {
        var peer = ckeychain_peer_credentials()
        guard ckeychain_peer_credentials_of(fd, &peer) == 0 else {
            throw KeychainError(code: .notAvailable, message: "Cannot tell who serves \(socketPath) (\(String(cString: strerror(errno)))); nothing was sent.")
        }
        guard peer.uid == geteuid() || peer.uid == 0 || peer.uid == Self.systemUserID else {
            throw KeychainError(
                code: .notAvailable,
                message:
                    "The process serving \(socketPath) runs as user \(peer.uid), not as you or the keychain's system user, so it is not keychaind; nothing was sent to it. Remove that socket or point KEYCHAIN_DAEMON_SOCKET at your keychaind."
            )
        }
    }

    /// The uid of the `keychain` system user, looked up once per process (nil when there is none).
    private static let systemUserID: UInt32? = {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(DaemonSocket.systemUser, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }()

    /// Sends all of `bytes`; returns the `errno` of a failure, nil when everything went.
    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return systemSend(fd, base + offset, raw.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += n
        }
        return nil
    }

    /// Reads into `buffer` from `offset` until it holds at least `count` bytes; returns how many it holds.
    private func receive(_ fd: Int32, into buffer: inout [UInt8], from offset: Int, atLeast count: Int) throws(KeychainError) -> Int {
        var filled = offset
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return recv(fd, base + filled, raw.count - filled, 0)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw lost(String(cString: strerror(errno)))
            }
            if n == 0 { throw lost("keychaind closed the connection; a keychaind older than this program does so for requests it cannot read, so install both from the same release") }
            filled += n
        }
        return filled
    }

    /// One response frame. Most fit the first read (2 KiB); a larger one is read to its announced length. The
    /// frame is parsed where it was read, without copying its body out.
    private func receive(_ fd: Int32) throws(KeychainError) -> Frame {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let filled = try receive(fd, into: &buffer, from: 0, atLeast: 4)
        let announced = UInt32(buffer[0]) << 24 | UInt32(buffer[1]) << 16 | UInt32(buffer[2]) << 8 | UInt32(buffer[3])
        guard let length = try? Frame.checkedLength(announced) else { throw lost("a malformed response") }
        // One request, one response: nothing follows it on the connection, so the read never takes more.
        guard filled <= 4 + length else { throw lost("bytes beyond the response") }
        if buffer.count < 4 + length {
            buffer += [UInt8](repeating: 0, count: 4 + length - buffer.count)
        } else {
            buffer.removeLast(buffer.count - (4 + length))
        }
        if filled < 4 + length {
            _ = try receive(fd, into: &buffer, from: filled, atLeast: 4 + length)
        }
        do {
            return try Frame.decode(body: buffer, from: 4)
        } catch  where error.status == .wrongSecVersion {
            throw error
        } catch {
            throw lost("a malformed response")
        }
    }
}

/// This process's pid, kept current across `fork` by a fork handler instead of asked of the kernel twice per call (glibc
/// no longer caches it). A child made without the handler (a raw `clone`) that calls keychaind on its parent's pooled
/// connections is refused by keychaind, which checks every message's sender, so the call fails and nothing leaks.
enum CurrentProcess {
    private static let cached = Atomic<Int32>(0)
    private static let registered: Bool = {
        let handler = pthread_atfork(nil, nil, { CurrentProcess.cached.store(getpid(), ordering: .relaxed) }) == 0
        cached.store(getpid(), ordering: .relaxed)
        return handler
    }()

    /// The pid of the process running now.
    static var id: pid_t {
        guard registered else { return getpid() }
        return cached.load(ordering: .relaxed)
    }
}

private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if os(Linux)
    send(fd, bytes, count, Int32(MSG_NOSIGNAL))
    #else
    send(fd, bytes, count, 0)
    #endif
}
