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
/// ones finish the request they are serving. Connections are registered only while the server is not draining.
final class ConnectionTracker: Sendable {
    private struct State {
        var open: [ObjectIdentifier: (channel: any Channel, busy: Bool)] = [:]
        var draining = false
    }
    private let state = Mutex(State())

    /// Registers an accepted channel (from the child channel initializer); false when the server is draining.
    func opened(_ channel: any Channel) -> Bool {
        state.withLock { s in
            guard !s.draining else { return false }
            s.open[ObjectIdentifier(channel)] = (channel, false)
            return true
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

    /// Stops new connections and requests, and closes every idle connection.
    func drain() {
        let idle: [any Channel] = state.withLock { s in
            s.draining = true
            return s.open.values.filter { !$0.busy }.map(\.channel)
        }
        for channel in idle { channel.close(promise: nil) }
    }

    /// The connections still open (busy ones finishing their request).
    var remaining: [any Channel] { state.withLock { $0.open.values.map(\.channel) } }
}

/// Serves one connection's requests in order, on its event loop.
///
/// Reads (`SecItemCopyMatching`, status) take microseconds and never wait on a disk flush: they are answered on
/// the event loop as their frame arrives, so a read costs the socket round trip and the engine's work, with no
/// hand-over between threads. Everything else (writes wait on the group commit's fsync; key generation and
/// passcode stretching are slow) runs on the thread pool; frames that arrive meanwhile wait their turn, so
/// answers keep the requests' order.
final class RequestChannelHandler: ChannelInboundHandler {
    typealias InboundIn = WireFrame
    typealias OutboundOut = WireFrame

    private let session: Session
    private let handler: RequestHandler
    private let threads: NIOThreadPool
    private let tracker: ConnectionTracker
    private let activity: ActivityClock
    private let logger: Logger
    /// A request is running on the thread pool.
    private var busy = false
    /// Frames that arrived while busy.
    private var queued = CircularBuffer<WireFrame>()
    /// The client half-closed: close once the requests it sent are answered.
    private var inputClosed = false

    init(session: Session, handler: RequestHandler, threads: NIOThreadPool, tracker: ConnectionTracker, activity: ActivityClock, logger: Logger) {
        self.session = session
        self.handler = handler
        self.threads = threads
        self.tracker = tracker
        self.activity = activity
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if busy {
            queued.append(frame)
        } else {
            serve(frame, context: context)
        }
    }

    private func serve(_ frame: WireFrame, context: ChannelHandlerContext) {
        guard case .request(let operation, let arguments) = frame.body else {
            logger.notice("closing a connection that sent a response frame", metadata: ["pid": "\(session.identity.pid)"])
            context.close(promise: nil)
            return
        }
        guard tracker.begin(context.channel) else {
            context.close(promise: nil)
            return
        }
        activity.touch()
        if operation == .copyMatching || operation == .status {
            answer(frame.id, handler.respond(operation, arguments, session: session), context: context)
            return
        }
        busy = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (handler, session) = (self.handler, self.session)
        threads.runIfActive(eventLoop: context.eventLoop) {
            handler.respond(operation, arguments, session: session)
        }.whenComplete { result in
            let (this, context) = bound.value
            this.busy = false
            switch result {
            case .success(let body):
                this.answer(frame.id, body, context: context)
            case .failure:
                // The thread pool stopped: the daemon is going away.
                context.close(promise: nil)
            }
            while !this.busy, context.channel.isActive, let next = this.queued.popFirst() {
                this.serve(next, context: context)
            }
            if !this.busy, this.queued.isEmpty, this.inputClosed { context.close(promise: nil) }
        }
    }

    private func answer(_ id: UInt32, _ body: WireFrame.Body, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(WireFrame(id: id, body: body)), promise: nil)
        if !tracker.end(context.channel) { context.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // A client that half-closes after its last request still gets the answer; then the connection closes.
            inputClosed = true
            if !busy { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed, oversized or truncated frame, or the peer went away: this connection only.
        logger.debug("connection closed", metadata: ["pid": "\(session.identity.pid)", "reason": "\(type(of: error))"])
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        tracker.closed(context.channel)
        context.fireChannelInactive()
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

    func run() async throws {
        let tracker = ConnectionTracker()
        let authority = handler.authority
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            // A client that half-closes after its last request still gets the answer; then the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let (handler, threads, activity, logger) = (self.handler, self.threads, self.activity, self.logger)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Bool> = { channel in
            DaemonServer.peerCredentials(channel).flatMapThrowing { credentials -> Bool in
                let session: Session
                do {
                    session = try authority.session(pid: credentials.pid, uid: credentials.uid)
                } catch {
                    logger.notice("refused connection", metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)", "reason": "\((error as? KeychainError)?.message ?? "\(error)")"])
                    channel.close(promise: nil)
                    return false
                }
                guard tracker.opened(channel) else {
                    channel.close(promise: nil)
                    return false
                }
                try channel.pipeline.syncOperations.addHandlers([
                    ByteToMessageHandler(WireFrameByteDecoder()),
                    MessageToByteHandler(WireFrameByteEncoder()),
                    RequestChannelHandler(session: session, handler: handler, threads: threads, tracker: tracker, activity: activity, logger: logger),
                ])
                return true
            }
        }
        let server: NIOAsyncChannel<Bool, Never>
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
                // Each connection is served by its pipeline's handler; the accept loop only waits for the end.
                try await server.executeThenClose { inbound in
                    for try await _ in inbound {}
                }
            } onGracefulShutdown: {
                logger.notice("shutting down: finishing requests in progress")
                tracker.drain()
                server.channel.close(promise: nil)
            }
        } catch {
            failure = error
        }
        // Busy connections answer their request in progress, then close.
        tracker.drain()
        for channel in tracker.remaining {
            try? await channel.closeFuture.get()
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

    /// The peer's pid and uid as the kernel recorded them at connect (`SO_PEERCRED`).
    static func peerCredentials(_ channel: any Channel) -> EventLoopFuture<ckeychain_peer_credentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(KeychainError(code: .internal, message: "The connection does not expose its credentials."))
        }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(ckeychain_so_peercred()))
    }
}
