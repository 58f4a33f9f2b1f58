import CKeychainLinux
import Foundation
import KeychainCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Where the server listens: a path it binds, or a socket systemd passed in (socket activation).
package enum Listener: Sendable {
    case path(String)
    case inherited(Int32, path: String?)
}

/// keychaind's listener: accepts connections on the Unix socket, identifies each peer from the kernel,
/// and serves its requests in order, running the engine's blocking calls on a thread pool.
struct DaemonServer: Service {
    let listener: Listener
    let dispatcher: RequestDispatcher
    let threads: NIOThreadPool
    let logger: Logger
    let ready: @Sendable () -> Void

    func run() async throws {
        let tracker = ConnectionTracker()
        let authority = dispatcher.authority
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            // A client that half-closes after its last request still gets the answer; then the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let (dispatcher, threads, logger) = (self.dispatcher, self.threads, self.logger)
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
                    ByteToMessageHandler(RequestFrameDecoder()),
                    RequestChannelHandler(session: session, dispatcher: dispatcher, threads: threads, tracker: tracker, logger: logger),
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
