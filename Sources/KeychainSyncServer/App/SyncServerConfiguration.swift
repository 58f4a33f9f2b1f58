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
    /// The most bytes (records' ciphertexts and wrapped keys) one account may store; a write past it answers 507.
    package var storageQuotaBytes: Int64 = SyncLimits.defaultStorageQuotaBytes
    /// Who may create accounts.
    package var accountCreation: AccountCreationPolicy = .open
    /// How many costly requests the server takes per source address and per account.
    package var rateLimits = SyncRateLimits()
    /// The request header that carries the client's address when the server is behind a proxy that sets it
    /// (`X-Forwarded-For`: its last entry); nil: the connection's peer address.
    package var clientAddressHeader: String?
    /// The database as the logs name it: its socket or host and port, and its name (never a password).
    package var databaseDescription = "PostgreSQL"
    /// How long a request may wait on the database (its authentication's lookups, then its handler) before it
    /// answers 503: a request in flight when PostgreSQL goes away gets an answer.
    package var requestTimeout: Duration = .seconds(SyncLimits.defaultRequestTimeoutSeconds)
    /// Where `/metrics` and `/health` are served, apart from the API (nil: nowhere). Loopback by default: the
    /// API's listener serves `/health` too, but never the metrics.
    package var monitoring: (host: String, port: Int)?

    /// A configuration; the defaults suit production.
    package init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        tombstoneHorizonSeconds: Int64 = 30 * 24 * 60 * 60,
        maintenanceInterval: Duration = .seconds(300),
        pushSocketsPerAccount: Int = SyncLimits.maximumSocketsPerAccount,
        pushSockets: Int = SyncLimits.maximumSockets,
        idleTimeout: Duration = .seconds(SyncLimits.defaultIdleTimeoutSeconds),
        monitoring: (host: String, port: Int)? = nil
    ) {
        self.idleTimeout = idleTimeout
        self.monitoring = monitoring
        self.host = host
        self.port = port
        self.tombstoneHorizonSeconds = tombstoneHorizonSeconds
        self.maintenanceInterval = maintenanceInterval
        self.pushSocketsPerAccount = pushSocketsPerAccount
        self.pushSockets = pushSockets
    }
}

/// Who may create accounts on a server.
package enum AccountCreationPolicy: Sendable, Equatable {
    /// Anyone (within the rate limit per address).
    case open
    /// Whoever gives one of these tokens in `Keychain-Account-Token` (kept as the lowercase hex SHA-256 of each).
    case token(hashes: Set<String>)
    /// Nobody: the server serves the accounts it has.
    case closed
}
#endif
