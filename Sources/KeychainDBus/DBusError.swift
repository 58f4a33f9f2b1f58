#if canImport(Glibc)
import Glibc
#endif

/// Why a D-Bus operation failed.
///
/// Errors a peer sent back keep the D-Bus error name they carried (``remote(name:message:)``, read with
/// ``name``), so callers can tell `org.freedesktop.DBus.Error.ServiceUnknown` from
/// `net.reactivated.Fprint.Error.PermissionDenied`; failures on this side of the socket carry the `errno` sd-bus
/// returned.
package enum DBusError: Error, Sendable, Hashable {
    /// No connection could be made to `address`, or it was refused during authentication (`errno` from sd-bus).
    case connectionFailed(address: String, errno: Int32)
    /// The peer answered with a D-Bus error: its name (`org.freedesktop.DBus.Error.NameHasNoOwner`, …) and message.
    case remote(name: String, message: String)
    /// `operation` did not finish before its deadline (a method call's timeout, connecting, flushing).
    case timedOut(operation: String)
    /// The connection was closed (by the bus, the peer, or an earlier error).
    case disconnected
    /// An argument cannot be sent: a string with a NUL byte, an invalid object path or member name, a value
    /// whose type sd-bus refused.
    case invalidArgument(String)
    /// Any other failure sd-bus reported while running `operation` (`errno`, positive).
    case system(operation: String, errno: Int32)

    /// The D-Bus error name when the peer sent one, else nil.
    package var name: String? {
        if case .remote(let name, _) = self { return name }
        return nil
    }

    /// One line for people: what failed and why.
    package var message: String {
        switch self {
        case .connectionFailed(let address, let code):
            return "cannot connect to the D-Bus bus at \(address): \(Self.describe(errno: code))"
        case .remote(let name, let message):
            return message.isEmpty ? name : "\(name): \(message)"
        case .timedOut(let operation):
            return "\(operation) timed out"
        case .disconnected:
            return "the D-Bus connection was closed"
        case .invalidArgument(let reason):
            return "invalid D-Bus argument: \(reason)"
        case .system(let operation, let code):
            return "\(operation) failed: \(Self.describe(errno: code))"
        }
    }

    /// `strerror` for an errno value.
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text) + " (errno \(code))"
    }

    /// Maps a negative sd-bus return value from `operation`: timeouts and closed connections get their own cases.
    static func fromReturn(_ result: Int32, operation: String) -> DBusError {
        let code = -result
        switch code {
        case ETIMEDOUT: return .timedOut(operation: operation)
        case ECONNRESET, ENOTCONN, EPIPE, ESHUTDOWN: return .disconnected
        default: return .system(operation: operation, errno: code)
        }
    }
}
