#if Network
import HTTPTypes

/// How many requests of each costly kind the server takes, per source address and per account: each a number per
/// hour (account creation, joins) or per minute (writes), also the burst allowed at once. 0 refuses the kind.
package struct SyncRateLimits: Sendable {
    /// Accounts one source address may create per hour.
    package var accountCreationsPerAddressPerHour = 10
    /// Join requests one source address may send per hour. (Not per account: the joining devices are not the
    /// account's, so counting them against it would let anyone lock its joins; an invitation admits one device, and
    /// at most 16 wait.)
    package var joinsPerAddressPerHour = 20
    /// Writes (record batches, device lists, zone keys) one source address may send per minute.
    package var writesPerAddressPerMinute = 600
    /// Writes one account may take per minute.
    package var writesPerAccountPerMinute = 300

    /// The defaults.
    package init() {}
}

/// The kinds of requests the rate limits count, found from the method and path.
package enum LimitedRequest: Sendable, Equatable {
    /// `POST /v1/accounts`.
    case accountCreation
    /// `POST /v1/accounts/{account}/joins`.
    case join
    /// `POST …/records`, `PUT …/device-list`, `PUT …/zone-keys`, `POST …/invitations`, `DELETE …/joins/{device}`.
    case write(account: String)

    /// The kind of the request `method` `path`, or nil for one no limit counts.
    package init?(method: HTTPRequest.Method, path: String) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count >= 3, segments[1] == "v1", segments[2] == "accounts" else { return nil }
        let account = segments.count > 3 ? String(segments[3]) : ""
        switch (method, segments.count, segments.count > 4 ? segments[4] : "") {
        case (.post, 3, _): self = .accountCreation
        case (.post, 5, "joins"): self = .join
        case (.put, 5, "device-list"), (.put, 5, "zone-keys"), (.post, 5, "invitations"), (.delete, 6, "joins"): self = .write(account: account)
        case (.post, 7, "zones") where segments[6] == "records": self = .write(account: account)
        default: return nil
        }
    }
}

/// The rate limits at work: one set of token buckets per kind and key.
package struct RequestLimits: Sendable {
    let creationsByAddress: TokenBuckets
    let joinsByAddress: TokenBuckets
    let writesByAddress: TokenBuckets
    let writesByAccount: TokenBuckets

    /// The buckets of `limits`.
    package init(_ limits: SyncRateLimits) {
        creationsByAddress = TokenBuckets(capacity: limits.accountCreationsPerAddressPerHour, period: .seconds(3600))
        joinsByAddress = TokenBuckets(capacity: limits.joinsPerAddressPerHour, period: .seconds(3600))
        writesByAddress = TokenBuckets(capacity: limits.writesPerAddressPerMinute, period: .seconds(60))
        writesByAccount = TokenBuckets(capacity: limits.writesPerAccountPerMinute, period: .seconds(60))
    }

    /// Counts a request of `kind` from `address` before anything else is done with it: 429 when over.
    func checkAddress(_ kind: LimitedRequest, address: String) throws(SyncFailure) {
        let wait: Duration? =
            switch kind {
            case .accountCreation: creationsByAddress.take(address)
            case .join: joinsByAddress.take(address)
            case .write: writesByAddress.take(address)
            }
        if let wait { throw SyncFailure.rateLimited(retryAfter: wait, what: "from your address") }
    }

    /// Counts a request of `kind` against its account, once its signature verified: 429 when over.
    func checkAccount(_ kind: LimitedRequest) throws(SyncFailure) {
        let wait: Duration? =
            switch kind {
            case .accountCreation, .join: nil
            case .write(let account): writesByAccount.take(account)
            }
        if let wait { throw SyncFailure.rateLimited(retryAfter: wait, what: "for this account") }
    }
}
#endif
