import CKeychainLinux
import Foundation
import KeychainCore
import KeychainProtocol
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the server listens: a path it binds, or a socket systemd passed in (socket activation).
package enum Listener: Sendable {
    case path(String)
    case inherited(Int32, path: String?)

    /// The socket's path, when known.
    package var path: String? {
        switch self {
        case .path(let path): path
        case .inherited(_, let path): path
        }
    }
}

/// keychaind's listener: accepts connections on the Unix socket and serves each on a thread of its own
/// (``PeerConnection``), within the ``ConnectionLimits``.
///
/// The connections are read with `recvmsg`, not through SwiftNIO: keychaind needs the kernel's credentials of the
/// sender of every message (`SCM_CREDENTIALS`), and NIO's stream channels read with `read`, which drops them. A
/// connection's requests run one after another on its thread (the engine blocks on SQLite and the group commit,
/// which batches the writes of all connections).
struct DaemonServer: Service {
    let listener: Listener
    let dispatcher: RequestDispatcher
    let limits: ConnectionLimits
    /// The open connections (``IdleExit`` reads it too).
    let tracker: ConnectionTracker
    let logger: Logger
    let ready: @Sendable () -> Void

    func run() async throws {
        let fd = try Self.listen(listener)
        let context = ServerContext(dispatcher: dispatcher, budget: ResourceBudget(limits: limits), tracker: tracker, logger: logger)
        let acceptor = Acceptor(fd: fd, context: context)
        logger.notice("listening", metadata: ["socket": "\(listener.path ?? "inherited")"])
        ready()
        await withGracefulShutdownHandler {
            await acceptor.run()
        } onGracefulShutdown: {
            logger.notice("shutting down: finishing requests in progress")
            tracker.drain()
            acceptor.stop()
        }
        // Busy connections answer their request in progress, then close.
        tracker.drain()
        await tracker.waitUntilAllClosed()
        _ = close(fd)
        if case .path(let path) = listener { unlink(path) }
        logger.notice("all connections closed")
    }

    /// The listening socket: the inherited one, or a new one bound at the path (replacing a stale socket file, never
    /// anything else) and readable and writable by its owner only.
    static func listen(_ listener: Listener) throws -> Int32 {
        switch listener {
        case .inherited(let fd, _):
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return fd
        case .path(let path):
            var existing = stat()
            if lstat(path, &existing) == 0 {
                guard existing.st_mode & S_IFMT == S_IFSOCK else {
                    throw StartFailure("\(path) exists and is not a socket; remove it or choose another --socket.")
                }
                unlink(path)
            }
            var address: sockaddr_un
            do {
                address = try DaemonSocket.address(path)
            } catch {
                throw StartFailure(error.message)
            }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw StartFailure("Cannot make a socket: \(String(cString: strerror(errno))).") }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 512) == 0 else {
                let reason = String(cString: strerror(errno))
                _ = close(fd)
                throw StartFailure("Cannot listen on \(path): \(reason).")
            }
            return fd
        }
    }
}

/// Accepts connections on a thread of its own and starts a thread for each; ``stop()`` ends the loop.
final class Acceptor: Sendable {
    let fd: Int32
    let context: ServerContext
    private let stopped = Atomic<Bool>(false)

    init(fd: Int32, context: ServerContext) {
        self.fd = fd
        self.context = context
    }

    /// Accepts until ``stop()``.
    func run() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if !startThread(
                stackSize: 256 << 10,
                {
                    self.loop(); done.resume()
                })
            {
                context.logger.critical("cannot start the accepting thread")
                done.resume()
            }
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        _ = shutdown(fd, Int32(SHUT_RDWR))  // wakes the blocked accept
    }

    private func loop() {
        let context = self.context
        while !stopped.load(ordering: .acquiring) {
            let client = ckeychain_accept(fd)
            if client < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors or memory: wait for connections to close rather than spin.
                    context.logger.warning("cannot accept a connection", metadata: ["reason": "\(String(cString: strerror(errno)))"])
                    usleep(50_000)
                    continue
                default:
                    if !stopped.load(ordering: .acquiring) {
                        context.logger.error("accepting stopped", metadata: ["reason": "\(String(cString: strerror(errno)))"])
                    }
                    return
                }
            }
            // Limits first: a thread is started only for a connection within them.
            guard let peer = PeerConnection.admit(client, context: context) else { continue }
            // The engine's calls (SQLite, crypto, the group commit) fit well in 1 MiB of stack.
            if !startThread(stackSize: 1 << 20, { PeerConnection.serve(client, peer: peer, context: context) }) {
                context.logger.warning("cannot start a thread for a connection; closing it")
                context.budget.release(uid: peer.uid)
                _ = close(client)
            }
        }
    }
}

/// A thread's work, handed through `pthread_create`'s context pointer.
private final class ThreadBody: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a detached thread running `body`; false when the system has no thread to give.
func startThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) -> Bool {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, stackSize)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
        &thread, &attributes,
        { raw in
            if let raw { Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue().body() }
            return nil
        }, context)
    if result != 0 {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return false
    }
    return true
}
