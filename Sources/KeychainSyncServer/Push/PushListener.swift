#if Network
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service that keeps this instance's one `LISTEN keychain_sync` connection and hands each notification to the
/// ``PushHub``: every instance on the database hears every committed write, whichever instance took it.
///
/// When the connection fails it marks the hub as not listening and tries again after a second.
struct PushListener: Service, CustomStringConvertible {
    /// The database.
    let client: PostgresClient
    /// Where notifications go.
    let hub: PushHub
    /// Where the listener logs.
    let logger: Logger

    var description: String { "PushListener" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: SyncStore.notificationChannel) { notifications in
                            hub.setListening(true)
                            logger.debug("Listening for committed writes")
                            for try await notification in notifications {
                                if let parsed = PushNotification(payload: notification.payload) {
                                    hub.publish(parsed)
                                }
                            }
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        logger.error("The push listener lost its database connection; retrying", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
                    }
                }
                hub.setListening(false)
                try? await Task.sleep(for: .seconds(1))
            }
        }
        hub.finishAll()
    }
}
#endif
