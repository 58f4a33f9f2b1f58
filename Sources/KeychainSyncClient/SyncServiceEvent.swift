#if Network
import KeychainCore

/// What a ``SyncService`` tells whoever listens (``SyncService/events()``): each round's outcome and the push
/// connection's changes.
package enum SyncServiceEvent: Sendable, Hashable {
    /// A round ended without error; what it did.
    case round(SyncRoundReport)
    /// A round failed: why (never item data). The service retries on its own while it runs.
    case roundFailed(message: String)
    /// The push connection to the server opened (true) or closed (false).
    case push(connected: Bool)
}
#endif
