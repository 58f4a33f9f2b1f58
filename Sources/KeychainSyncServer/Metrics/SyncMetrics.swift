#if Network
import Synchronization
import Metrics
import Prometheus

/// The server instance's metrics, in a Prometheus registry of its own (so that several servers in one process,
/// as in the tests, keep separate counts), recorded through swift-metrics types bound to that registry.
package final class SyncMetrics: Sendable {
    /// The registry `/metrics` exposes.
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let written: Metrics.Counter
    private let conflicts: Metrics.Counter
    private let sockets: Metrics.Gauge

    /// Empty metrics.
    package init() {
        registry = PrometheusCollectorRegistry()
        factory = PrometheusMetricsFactory(registry: registry)
        written = Metrics.Counter(label: "keychain_sync_records_written_total", factory: factory)
        conflicts = Metrics.Counter(label: "keychain_sync_write_conflicts_total", factory: factory)
        sockets = Metrics.Gauge(label: "keychain_sync_websocket_clients", factory: factory)
    }

    /// Counts a finished request.
    /// - Parameters:
    ///   - route: The matched route pattern (never the concrete path, which names an account).
    ///   - status: The answer's status code.
    ///   - duration: How long it took.
    func request(route: String, status: Int, duration: Duration) {
        Metrics.Counter(label: "keychain_sync_requests_total", dimensions: [("route", route), ("status", String(status))], factory: factory)
            .increment()
        Metrics.Timer(label: "keychain_sync_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// Counts records a batch wrote.
    func recordsWritten(_ count: Int) { written.increment(by: count) }

    /// Counts a batch refused for a version conflict.
    func conflict() { conflicts.increment() }

    /// Counts a push socket opening (`+1`) or closing (`-1`).
    func socketsChanged(by delta: Int) { sockets.record(Double(socketCount.add(delta))) }

    private let socketCount = SocketCount()

    /// The metrics in Prometheus's text format.
    package func exposition() -> [UInt8] { registry.emitToBuffer() }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// The number of open push sockets, for the gauge.
private final class SocketCount: Sendable {
    private let value = Mutex(0)

    func add(_ delta: Int) -> Int {
        value.withLock {
            $0 += delta
            return $0
        }
    }
}
#endif
