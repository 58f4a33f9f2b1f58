import CKeychainLinux
import Foundation
import KeychainCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Where the server listens: a path it binds, or a socket systemd passed in (socket activation).
enum Listener: Sendable {
    case path(String)
    case inherited(Int32, path: String?)
}

/// The time of the last request, for the idle lock.
final class ActivityClock: Sendable {
    private let last = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
    func touch() { last.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }
    var idleSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds &- last.load(ordering: .relaxed)) / 1e9 }
}

/// The open connections, so that a graceful shutdown can close the idle ones at once and let the busy
/// ones finish the request they are serving.
///
/// It also owns each accepted connection from the moment it is made until a serving task claims it. An
/// `NIOAsyncChannel` that is dropped without `executeThenClose` traps, and NIO can drop one that was accepted
/// just as the listening channel closes (swift-nio#2637): so connections are made only while not draining,
/// and whatever was made but never claimed is closed properly once the accept loop has ended.
final class ConnectionTracker: Sendable {
    typealias Connection = NIOAsyncChannel<WireFrame, WireFrame>

    private struct State {
        var open: [ObjectIdentifier: (channel: any Channel, busy: Bool)] = [:]
        var unclaimed: [ObjectIdentifier: Connection] = [:]
        var draining = false
    }
    private let state = Mutex(State())

    /// Wraps an accepted channel (on its event loop, from the child channel initializer) and keeps it until
    /// ``opened(_:)`` claims it; nil when the server is draining, so nothing is made that could be dropped.
    func make(_ channel: any Channel) throws -> Connection? {
        try state.withLock { s in
            guard !s.draining else { return nil }
            let connection = try Connection(wrappingChannelSynchronously: channel)
            s.unclaimed[ObjectIdentifier(channel)] = connection
            return connection
        }
    }

    /// Claims and registers a connection for serving; false when the server is already shutting down.
    func opened(_ channel: any Channel) -> Bool {
        state.withLock { s in
            s.unclaimed.removeValue(forKey: ObjectIdentifier(channel))
            guard !s.draining else { return false }
            s.open[ObjectIdentifier(channel)] = (channel, false)
            return true
        }
    }

    /// Stops making connections and hands over those made but never claimed, to be closed.
    func takeUnclaimed() -> [Connection] {
        state.withLock { s in
            s.draining = true
            defer { s.unclaimed = [:] }
            return Array(s.unclaimed.values)
        }
    }

    func closed(_ channel: any Channel) {
        _ = state.withLock { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Marks a connection busy; false when the server is shutting down (no new request starts).
    func begin(_ channel: any Channel) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[ObjectIdentifier(channel)]?.busy = true
            return true
        }
    }

    /// Marks a connection idle again; false when it should now close (shutting down).
    func end(_ channel: any Channel) -> Bool {
        state.withLock { s in
            s.open[ObjectIdentifier(channel)]?.busy = false
            return !s.draining
        }
    }

    /// Stops new requests and closes every idle connection.
    func drain() {
        let idle: [any Channel] = state.withLock { s in
            s.draining = true
            return s.open.values.filter { !$0.busy }.map(\.channel)
        }
        for channel in idle { channel.close(promise: nil) }
    }
}

/// keychaind's listener: accepts connections on the Unix socket, identifies each peer from the kernel,
/// and serves its requests in order, running the engine's blocking calls on a thread pool.
struct DaemonServer: Service {
    let listener: Listener
    let handler: RequestHandler
    let threads: NIOThreadPool
    let activity: ActivityClock
    let logger: Logger
    let ready: @Sendable () -> Void

    typealias Connection = ConnectionTracker.Connection

    func run() async throws {
        let tracker = ConnectionTracker()
        let authority = handler.authority
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            // A client that half-closes after its last request still gets the answer; then the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<(Connection, Session)?> = { channel in
            DaemonServer.peerCredentials(channel).flatMapThrowing { credentials -> (Connection, Session)? in
                let session: Session
                do {
                    session = try authority.session(pid: credentials.pid, uid: credentials.uid)
                } catch {
                    logger.notice("refused connection", metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)", "reason": "\((error as? KeychainError)?.message ?? "\(error)")"])
                    channel.close(promise: nil)
                    return nil
                }
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WireFrameByteDecoder()))
                try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(WireFrameByteEncoder()))
                guard let connection = try tracker.make(channel) else {
                    channel.close(promise: nil)
                    return nil
                }
                return (connection, session)
            }
        }
        let server: NIOAsyncChannel<(Connection, Session)?, Never>
        switch listener {
        case .path(let path):
            server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            _ = chmod(path, 0o600)
        case .inherited(let fd, _):
            server = try await bootstrap.bind(fd, childChannelInitializer: initializer)
        }
        logger.notice("listening", metadata: ["socket": "\(listenerPath ?? "inherited")"])
        ready()
        var failure: (any Error)?
        do {
            try await withGracefulShutdownHandler {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { inbound in
                        for try await accepted in inbound {
                            guard let (connection, session) = accepted else { continue }
                            group.addTask { await serve(connection, session, tracker) }
                        }
                    }
                }
            } onGracefulShutdown: {
                logger.notice("shutting down: finishing requests in progress")
                tracker.drain()
                server.channel.close(promise: nil)
            }
        } catch {
            failure = error
        }
        // Connections accepted as the listener closed, which the accept loop never received.
        for connection in tracker.takeUnclaimed() {
            try? await connection.executeThenClose { _, _ in }
        }
        if case .path(let path) = listener { unlink(path) }
        if let failure { throw failure }
        logger.notice("all connections closed")
    }

    var listenerPath: String? {
        switch listener {
        case .path(let path): path
        case .inherited(_, let path): path
        }
    }

    /// Serves one connection's requests in order until it closes, sends a bad frame, or the server drains.
    func serve(_ connection: Connection, _ session: Session, _ tracker: ConnectionTracker) async {
        let channel = connection.channel
        guard tracker.opened(channel) else {
            // Accepted while draining: close it unserved, but through executeThenClose, which finishes the
            // channel's writer (an NIOAsyncChannel dropped without that traps, taking the daemon down mid-drain).
            try? await connection.executeThenClose { _, _ in }
            return
        }
        defer { tracker.closed(channel) }
        do {
            try await connection.executeThenClose { inbound, outbound in
                for try await frame in inbound {
                    guard case .request(let operation, let arguments) = frame.body else {
                        logger.notice("closing a connection that sent a response frame", metadata: ["pid": "\(session.identity.pid)"])
                        return
                    }
                    guard tracker.begin(channel) else { return }
                    activity.touch()
                    let body = try await threads.runIfActive {
                        handler.respond(operation, arguments, session: session)
                    }
                    try await outbound.write(WireFrame(id: frame.id, body: body))
                    guard tracker.end(channel) else { return }
                }
            }
        } catch {
            // A malformed, oversized or truncated frame, or the peer went away: this connection only.
            logger.debug("connection closed", metadata: ["pid": "\(session.identity.pid)", "reason": "\(type(of: error))"])
        }
    }

    /// The peer's pid and uid as the kernel recorded them at connect (`SO_PEERCRED`).
    static func peerCredentials(_ channel: any Channel) -> EventLoopFuture<ckeychain_peer_credentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(KeychainError(code: .internal, message: "The connection does not expose its credentials."))
        }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(ckeychain_so_peercred()))
    }
}
