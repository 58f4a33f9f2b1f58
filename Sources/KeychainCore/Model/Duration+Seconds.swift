import Foundation

extension Duration {
    /// The span in seconds, fraction included, as the engine keeps spans (`TimeInterval`).
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The span in whole nanoseconds (what keychaind's status carries of its writer's time).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
