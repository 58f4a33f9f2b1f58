#if Network
/// The bounds the server enforces on what clients send; the OpenAPI document lists the same numbers.
package enum SyncLimits {
    /// The largest request body, in bytes (8 MiB: a write batch).
    package static let maximumBodyBytes = 8 * 1024 * 1024

    /// The largest body a route takes, in bytes, checked from `Content-Length` before anything is read (and while
    /// reading a body sent in chunks): a write batch 8 MiB, zone keys 2 MiB, a new account 256 KiB, a device list
    /// 128 KiB, a join request 16 KiB, an invitation 4 KiB, anything else none.
    package static func bodyLimit(method: String, path: String) -> Int {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "accounts", account, ...
        guard segments.count >= 3, segments[1] == "v1", segments[2] == "accounts" else { return 0 }
        switch (method, segments.count, segments.count > 4 ? segments[4] : "") {
        case ("POST", 3, _): return 256 * 1024
        case ("POST", 5, "joins"): return 16 * 1024
        case ("POST", 5, "invitations"): return 4 * 1024
        case ("PUT", 5, "device-list"): return 128 * 1024
        case ("PUT", 5, "zone-keys"): return 2 * 1024 * 1024
        case ("POST", 7, "zones") where segments[6] == "records": return maximumBodyBytes
        default: return 0
        }
    }
    /// The most writes in one batch.
    package static let maximumWritesPerBatch = 500
    /// The longest item id, in UTF-8 bytes.
    package static let maximumItemIDLength = 128
    /// The longest zone name or key id, in UTF-8 bytes.
    package static let maximumNameLength = 64
    /// The largest record ciphertext, in bytes (256 KiB).
    package static let maximumCiphertextBytes = 256 * 1024
    /// The largest wrapped record key, in bytes (1 KiB).
    package static let maximumWrappedKeyBytes = 1024
    /// The largest wrapped zone key, in bytes (4 KiB).
    package static let maximumWrappedZoneKeyBytes = 4 * 1024
    /// The most zone keys in one upload.
    package static let maximumZoneKeysPerUpload = 256
    /// The largest join code hash, in bytes.
    package static let maximumCodeHashBytes = 64
    /// The largest device list blob, in bytes (64 KiB).
    package static let maximumDeviceListBytes = 64 * 1024
    /// The most device ids in a device list.
    package static let maximumDevicesPerList = 256
    /// The most unexpired invitations per account.
    package static let maximumInvitations = 16
    /// The longest an invitation lasts, in seconds (15 minutes).
    package static let maximumInvitationLifetimeSeconds: Int64 = 900
    /// The longest invitation secret, in UTF-8 bytes.
    package static let maximumInvitationLength = 128
    /// The most pending devices per account.
    package static let maximumPendingDevices = 16
    /// How long a join request stays pending, in seconds (24 hours).
    package static let pendingLifetimeSeconds: Int64 = 24 * 60 * 60
    /// The most records on one change-feed page.
    package static let maximumPageSize = 1000
    /// The page size when the client names none.
    package static let defaultPageSize = 500
    /// The most push sockets per account on one server instance.
    package static let maximumSocketsPerAccount = 64
    /// The most push sockets on one server instance.
    package static let maximumSockets = 10_000
    /// The storage quota of an account, in bytes (100 MiB).
    package static let defaultStorageQuotaBytes: Int64 = 100 * 1024 * 1024
    /// How long a request may take once read, in seconds, before it answers 503 (a database away).
    package static let defaultRequestTimeoutSeconds = 5
    /// How long a graceful shutdown may take, in seconds, before the server stops all the same.
    package static let shutdownSeconds = 10
    /// How long a connection may stay silent (between requests, or while its request is read), in seconds.
    package static let defaultIdleTimeoutSeconds = 30
}
#endif
