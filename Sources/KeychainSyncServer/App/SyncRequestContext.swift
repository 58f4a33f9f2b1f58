#if Network
import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of the sync server's routers: Hummingbird's core storage, the WebSocket upgrade slot, and
/// the device the authentication middleware found.
package struct SyncRequestContext: RequestContext, WebSocketRequestContext {
    /// Hummingbird's per-request storage.
    package var coreContext: CoreRequestContextStorage
    /// Where a WebSocket route leaves its handler for the upgrade.
    package let webSocket: WebSocketHandlerReference<SyncRequestContext>
    /// The signing device, once ``AuthenticationMiddleware`` verified the request.
    package var device: AuthenticatedDevice?
    /// The connection's peer address (a proxy's, when the server is behind one).
    package let peerAddress: String

    /// A context for a new request.
    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.device = nil
        self.peerAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The largest body a handler may collect (the authentication middleware enforces it first).
    package var maxUploadSize: Int { SyncLimits.maximumBodyBytes }
}
#endif
