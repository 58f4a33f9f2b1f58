#if Network
import Hummingbird
import Logging
import NIOCore

/// The monitoring listener: `GET /metrics` (Prometheus text) and `GET /health`, on an address of their own —
/// loopback unless the operator says otherwise — so that the API's listener, which faces the internet, never
/// tells anyone the server's counters.
enum MonitoringListener {
    /// The application serving the two routes at `host`:`port`.
    static func makeApplication(
        host: String, port: Int, store: SyncStore, metrics: SyncMetrics, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }
        router.get("/health") { _, _ -> Response in
            let healthy = await SyncAPI.databaseAnswers(store, logger: logger)
            return Response(
                status: healthy ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: healthy ? #"{"status":"ok"}"# : #"{"status":"unavailable"}"#)))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "keychain-sync-server"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
    }
}
#endif
