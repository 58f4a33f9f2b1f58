import Foundation

extension Duration {
    /// The span in seconds, fraction included, as the engine keeps spans (`TimeInterval`).
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
