#if Network
/// What an operator chooses about a sync server instance.
package struct SyncServerConfiguration: Sendable {
    /// The address to listen on.
    package var host: String
    /// The port to listen on (0: any free port, see ``SyncServer/makeApplication(configuration:database:logger:onRunning:)``).
    package var port: Int
    /// How long tombstones stay before they are purged, in seconds (30 days by default).
    package var tombstoneHorizonSeconds: Int64
    /// How often the maintenance pass (purge, expired nonces, lapsed joins) runs, after the one at start-up.
    package var maintenanceInterval: Duration
    /// The most push sockets one account may open on this instance.
    package var pushSocketsPerAccount: Int
    /// The most push sockets on this instance.
    package var pushSockets: Int
    /// How long a connection may stay silent before it is closed: between requests, and in the middle of one (a
    /// half-sent body). Push sockets are kept by their pings instead.
    package var idleTimeout: Duration

    /// A configuration; the defaults suit production.
    package init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        tombstoneHorizonSeconds: Int64 = 30 * 24 * 60 * 60,
        maintenanceInterval: Duration = .seconds(300),
        pushSocketsPerAccount: Int = SyncLimits.maximumSocketsPerAccount,
        pushSockets: Int = SyncLimits.maximumSockets,
        idleTimeout: Duration = .seconds(SyncLimits.defaultIdleTimeoutSeconds)
    ) {
        self.idleTimeout = idleTimeout
        self.host = host
        self.port = port
        self.tombstoneHorizonSeconds = tombstoneHorizonSeconds
        self.maintenanceInterval = maintenanceInterval
        self.pushSocketsPerAccount = pushSocketsPerAccount
        self.pushSockets = pushSockets
    }
}
#endif
