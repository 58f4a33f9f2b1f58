#if Network
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// Whether the API's listener is up: `/health` says so only once it is, so that a load balancer or a script that
/// waits for health never sends a request to a port nobody listens on yet (the monitoring listener may come up first,
/// and the API's waits for the schema).
final class APIListening: Sendable {
    private let listening = Atomic<Bool>(false)

    /// Whether the API's listener accepts connections.
    var isListening: Bool { listening.load(ordering: .acquiring) }

    /// Records that the API's listener is up.
    func markListening() { listening.store(true, ordering: .releasing) }
}

/// The monitoring listener: `GET /metrics` (Prometheus text) and `GET /health`, on an address of their own —
/// loopback unless the operator says otherwise — so that the API's listener, which faces the internet, never
/// tells anyone the server's counters.
enum MonitoringListener {
    /// The application serving the two routes at `host`:`port`; `/health` answers 200 once `api` listens and the
    /// database answers, 503 before.
    static func makeApplication(
        host: String, port: Int, store: SyncStore, metrics: SyncMetrics, api: APIListening, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }
        router.get("/health") { _, _ -> Response in
            let status: String
            if !api.isListening {
                status = "starting"
            } else {
                status = await SyncAPI.databaseAnswers(store, logger: logger) ? "ok" : "unavailable"
            }
            return Response(
                status: status == "ok" ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"\#(status)"}"#)))
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
