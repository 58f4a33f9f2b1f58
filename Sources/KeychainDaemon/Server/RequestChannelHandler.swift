import Foundation
import KeychainCore
import KeychainProtocol
import Logging
import NIOCore
import NIOPosix

/// Serves one connection's requests in order, on its event loop, writing each response as one frame.
///
/// Quick reads (`find`, status, settings) take microseconds and never wait on a disk flush: they are answered on
/// the event loop as their frame arrives, so a read costs the socket round trip and the engine's work, with no
/// hand-over between threads. Everything else (writes wait on the group commit's fsync; key generation and
/// passcode stretching are slow) runs on the thread pool; frames that arrive meanwhile wait their turn, so
/// answers keep the requests' order.
package final class RequestChannelHandler: ChannelInboundHandler {
    package typealias InboundIn = InboundMessage
    package typealias OutboundOut = ByteBuffer

    private let session: Session
    private let dispatcher: RequestDispatcher
    private let threads: NIOThreadPool
    private let tracker: ConnectionTracker
    private let logger: Logger
    /// A request is running on the thread pool.
    private var busy = false
    /// Requests that arrived while busy.
    private var queued = CircularBuffer<(id: UInt32, request: KeychainRequest)>()
    /// The client half-closed: close once the requests it sent are answered.
    private var inputClosed = false

    package init(session: Session, dispatcher: RequestDispatcher, threads: NIOThreadPool, tracker: ConnectionTracker,
                 logger: Logger) {
        self.session = session
        self.dispatcher = dispatcher
        self.threads = threads
        self.tracker = tracker
        self.logger = logger
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .unsupportedVersion(let version, let id):
            logger.notice("closing a connection of another protocol version", metadata: ["pid": "\(session.identity.pid)", "version": "\(version)"])
            let refusal = context.channel.allocator.buffer(bytes: VersionMismatch.refusal(peerVersion: version, id: id))
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(refusal)).whenComplete { _ in bound.value.close(promise: nil) }
        case .request(let id, let request):
            if busy {
                queued.append((id, request))
            } else {
                serve(id, request, context: context)
            }
        }
    }

    private func serve(_ id: UInt32, _ request: KeychainRequest, context: ChannelHandlerContext) {
        if request.isQuickRead {
            // Answered before anything else runs on this loop, so a shutdown's close comes after the answer: the
            // connection need not be marked busy.
            guard tracker.isAccepting else {
                context.close(promise: nil)
                return
            }
            write(id, dispatcher.respond(to: request, session: session), context: context)
            if !tracker.isAccepting { context.close(promise: nil) }
            return
        }
        guard tracker.begin(context.channel) else {
            context.close(promise: nil)
            return
        }
        busy = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (dispatcher, session) = (self.dispatcher, self.session)
        threads.runIfActive(eventLoop: context.eventLoop) {
            dispatcher.respond(to: request, session: session)
        }.whenComplete { result in
            let (this, context) = bound.value
            this.busy = false
            switch result {
            case .success(let response):
                this.answer(id, response, context: context)
            case .failure:
                // The thread pool stopped: the daemon is going away.
                context.close(promise: nil)
            }
            while !this.busy, context.channel.isActive, let next = this.queued.popFirst() {
                this.serve(next.id, next.request, context: context)
            }
            if !this.busy, this.queued.isEmpty, this.inputClosed { context.close(promise: nil) }
        }
    }

    /// Answers a request that ran on the thread pool, and marks the connection idle again.
    private func answer(_ id: UInt32, _ response: KeychainResponse, context: ChannelHandlerContext) {
        write(id, response, context: context)
        if !tracker.end(context.channel) { context.close(promise: nil) }
    }

    private func write(_ id: UInt32, _ response: KeychainResponse, context: ChannelHandlerContext) {
        let frame = Frame(id: id, body: .response(response)).encoded
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame)), promise: nil)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // A client that half-closes after its last request still gets the answer; then the connection closes.
            inputClosed = true
            if !busy { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed, oversized or truncated frame, or the peer went away: this connection only.
        logger.debug("connection closed", metadata: ["pid": "\(session.identity.pid)", "reason": "\(type(of: error))"])
        context.close(promise: nil)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        tracker.closed(context.channel)
        context.fireChannelInactive()
    }
}
