import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// A Unix-socket round trip to a SwiftNIO server that echoes what it reads: the floor under a keychaind call
/// that the event loop itself sets (a wake-up from `epoll_wait`, the channel pipeline, one read and one write),
/// beside the bare round trip of ``SocketEcho``. The client side is the same blocking `send`/`recv` pair.
public final class NIOEcho: @unchecked Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let server: any Channel
    private let client: Int32
    private let folder: String

    /// Starts the server on a socket in a new temporary folder and connects to it.
    public init() throws {
        folder = NSTemporaryDirectory() + "skb-nio-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/echo.sock"
        server = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) }
            }
            .bind(unixDomainSocketPath: path).wait()
        client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw BenchmarkFailure("cannot connect to the NIO echo server: \(String(cString: strerror(errno)))") }
    }

    /// One request and its response.
    public func roundTrip() -> Bool { echoRoundTrip(client) }

    /// Closes the connection and the server.
    public func stop() {
        close(client)
        try? server.close().wait()
        try? group.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// Writes back every read at once.
private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(data, promise: nil)
    }
}
