#if Network
import Hummingbird
import HummingbirdWebSocket
import KeychainSyncAPI
import Logging
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime
import PostgresNIO

/// Builds the sync server: the Hummingbird application with the OpenAPI routes, the push WebSocket route, the
/// middleware (observation, then authentication) and its background services (push listener, maintenance).
///
/// The application runs beside the `PostgresClient` in one `ServiceGroup` (the client must run for the queries and
/// the migrations to proceed); migrations run before the server binds. Instances share nothing but the database.
package enum SyncServer {
    /// The application of one server instance.
    /// - Parameters:
    ///   - configuration: Address, horizon and maintenance period.
    ///   - database: The PostgreSQL client (run it in the same service group).
    ///   - logger: Where the server logs.
    ///   - onRunning: Called with the bound port once the server listens (useful with port 0).
    ///   - onMonitoringRunning: Called with the monitoring listener's bound port, when there is one.
    /// - Returns: The application, a `Service` (the monitoring listener runs as one of its services).
    package static func makeApplication(
        configuration: SyncServerConfiguration,
        database: PostgresClient,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onMonitoringRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        // Every line about the database names it (socket or host, database), so that an operator sees which one.
        var named = logger
        named[metadataKey: "database"] = "\(configuration.databaseDescription)"
        let logger = named
        let store = SyncStore(client: database, logger: logger)
        let metrics = SyncMetrics()
        let listening = APIListening()
        let hub = PushHub(perAccount: configuration.pushSocketsPerAccount, total: configuration.pushSockets)

        let router = Router(context: SyncRequestContext.self)
        router.add(middleware: RequestObservationMiddleware(metrics: metrics))
        let limits = RequestLimits(configuration.rateLimits)
        let authentication = AuthenticationMiddleware(
            store: store, limits: limits, clientAddressHeader: configuration.clientAddressHeader, requestTimeout: configuration.requestTimeout)
        router.add(middleware: authentication)
        let api = SyncAPI(
            store: store, metrics: metrics, logger: logger, quotaBytes: configuration.storageQuotaBytes,
            accountCreation: configuration.accountCreation)
        try api.registerHandlers(on: router, middlewares: [RequestErrorMiddleware(logger: logger, timeout: configuration.requestTimeout)])

        let webSocketRouter = Router(context: SyncRequestContext.self)
        webSocketRouter.add(middleware: RequestObservationMiddleware(metrics: metrics))
        webSocketRouter.add(middleware: authentication)
        PushRoute.add(to: webSocketRouter, hub: hub, metrics: metrics)

        var app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: webSocketRouter,
                configuration: .init(
                    // The idle timeout also closes a connection whose request stops arriving (a half-sent body),
                    // and one a client left open after a refused upgrade.
                    http1: .init(idleTimeout: .milliseconds(Int64(configuration.idleTimeout / .milliseconds(1)))),
                    ws: .init(maxFrameSize: 1 << 16, autoPing: .enabled(timePeriod: .seconds(30))))
            ),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "keychain-sync-server"),
            onServerRunning: { channel in
                listening.markListening()
                await onRunning(channel.localAddress?.port ?? configuration.port)
            },
            logger: logger
        )
        let (schemaReady, schemaReadyContinuation) = AsyncStream.makeStream(of: Void.self)
        app.beforeServerStarts {
            try await SchemaMigrations.run(on: database, logger: logger)
            schemaReadyContinuation.finish()
        }
        if let monitoring = configuration.monitoring {
            app.addServices(
                MonitoringListener.makeApplication(
                    host: monitoring.host, port: monitoring.port, store: store, metrics: metrics, api: listening, logger: logger,
                    onRunning: onMonitoringRunning))
        }
        app.addServices(
            PushListener(client: database, hub: hub, logger: logger),
            MaintenanceService(
                store: store, tombstoneHorizonSeconds: configuration.tombstoneHorizonSeconds, interval: configuration.maintenanceInterval,
                logger: logger, schemaReady: schemaReady
            )
        )
        return app
    }
}
#endif
