#if Network
import Synchronization

/// Token buckets by key (a source address, an account): each holds up to `capacity` tokens, refilled at `capacity`
/// per `period`; a request takes one, and when none is left it is told how long until one is.
///
/// Memory is bounded: at most `maximumKeys` buckets are kept. A full bucket says nothing a new one would not, so
/// when the table is full the full ones are dropped first; if every bucket is in use, the new key is refused as if
/// its bucket were empty, for one refill interval (a flood from more addresses than that can only slow itself).
package final class TokenBuckets: Sendable {
    /// The most tokens a bucket holds (the burst).
    package let capacity: Double
    /// How long a bucket takes to refill from empty.
    package let period: Duration
    /// The most buckets kept.
    package let maximumKeys: Int

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// Buckets of `capacity` tokens refilled over `period`; `capacity` 0 refuses everything.
    package init(capacity: Int, period: Duration, maximumKeys: Int = 100_000, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.capacity = Double(max(0, capacity))
        self.period = period
        self.maximumKeys = maximumKeys
        self.clock = clock
    }

    /// Tokens added per second.
    private var rate: Double { capacity / max(period / .seconds(1), 0.001) }

    /// Takes a token for `key`: nil when there was one, else how long until there is.
    package func take(_ key: String) -> Duration? {
        let now = clock()
        return buckets.withLock { buckets -> Duration? in
            guard capacity > 0 else { return period }
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updated: now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated) / .seconds(1) * rate)
            bucket.updated = now
            if buckets[key] == nil, buckets.count >= maximumKeys {
                buckets = buckets.filter { _, kept in kept.tokens + (now - kept.updated) / .seconds(1) * rate < capacity }
                if buckets.count >= maximumKeys { return .seconds(max(1, 1 / rate)) }
            }
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return .milliseconds(Int64(((1 - bucket.tokens) / rate * 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }
}
#endif
