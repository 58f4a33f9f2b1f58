#if Network
/// What the instances tell each other through PostgreSQL's `NOTIFY keychain_sync`, sent inside the committing
/// transaction so that it is heard only if the change commits.
package enum PushNotification: Sendable, Equatable {
    /// A write committed: the zone's feed reaches at least `seq`. Payload `account:zone:seq`.
    case changed(account: String, zone: String, seq: Int64)
    /// A device-list update removed a device: its sockets close. Payload `account::device` (zones are never empty).
    case removed(account: String, device: String)

    /// The account concerned.
    var account: String {
        switch self {
        case .changed(let account, _, _), .removed(let account, _): account
        }
    }

    /// The notification's payload.
    package var payload: String {
        switch self {
        case .changed(let account, let zone, let seq): "\(account):\(zone):\(seq)"
        case .removed(let account, let device): "\(account)::\(device)"
        }
    }

    /// Parses a payload; `nil` when it has neither form.
    package init?(payload: String) {
        let parts = payload.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[2].isEmpty else { return nil }
        if parts[1].isEmpty {
            self = .removed(account: parts[0], device: parts[2])
        } else if let seq = Int64(parts[2]) {
            self = .changed(account: parts[0], zone: parts[1], seq: seq)
        } else {
            return nil
        }
    }

    /// The text frame a socket receives for a change: `{"zone":"…","seq":N}`.
    static func frame(zone: String, seq: Int64) -> String {
        // Zones are limited to A-Z a-z 0-9 . _ - (RequestValidation.name): nothing to escape.
        #"{"zone":"\#(zone)","seq":\#(seq)}"#
    }
}
#endif
