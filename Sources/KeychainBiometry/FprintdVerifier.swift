import Crypto
import Foundation
import KeychainCore
import KeychainDBus

#if canImport(Glibc)
import Glibc
#endif

/// A fingerprint reader through fprintd, freedesktop's fingerprint daemon (`net.reactivated.Fprint` on the system
/// bus), for one user.
///
/// Every call opens its own connection to the bus (fingerprints are rare; sd-bus connections are not shared
/// between threads), so the verifier is `Sendable` and holds no state. Every D-Bus call has ``callTimeout``, and a
/// verification waits at most ``verifyTimeout`` for a finger; nothing waits without bound.
///
/// ## What fprintd is asked
/// - ``isAvailable()`` and ``status()``: `Manager.GetDefaultDevice`, the device's `name` property, and
///   `Device.ListEnrolledFingers(user)`.
/// - ``verify(reason:)``: `Device.Claim(user)`, `Device.VerifyStart("any")`, the `Device.VerifyStatus(result, done)`
///   signals from the daemon's unique name, then always `Device.VerifyStop` (once started) and `Device.Release`.
///
/// fprintd asks polkit whether the caller may do this (`net.reactivated.fprint.device.verify`, granted by default
/// only to a local active session), and claiming for another user than the caller's needs
/// `net.reactivated.fprint.device.setusername` (admin). A refusal reads as `PermissionDenied`: not available.
///
/// ## Enrolled set
/// fprintd does not expose template identities: a template re-enrolled for the same finger is indistinguishable
/// over D-Bus. So "the current set" of `.biometryCurrentSet` means *the same enrolled finger names on the same
/// reader*: ``enrolledSetDigest()`` changes when a finger is enrolled or deleted, or the reader's name changes, but
/// not when a finger is deleted and enrolled again under the same name between two checks.
///
/// ## The reason
/// fprintd shows nothing: the `reason` passed to ``verify(reason:)`` is for the caller's own prompt ("Touch the
/// fingerprint reader to …"), which should be on screen while this waits.
package struct FprintdVerifier: BiometricVerifier {
    /// fprintd's well-known name on the system bus.
    package static let service = "net.reactivated.Fprint"
    /// The manager's object path.
    package static let managerPath = "/net/reactivated/Fprint/Manager"
    /// The manager's interface.
    package static let managerInterface = "net.reactivated.Fprint.Manager"
    /// A device's interface.
    package static let deviceInterface = "net.reactivated.Fprint.Device"

    /// The bus fprintd is on: nil for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else
    /// `unix:path=/run/dbus/system_bus_socket`).
    package let busAddress: String?
    /// Whose fingers: the effective user's login name by default.
    package let username: String?
    /// How long ``verify(reason:)`` waits for a finger after `VerifyStart`.
    package let verifyTimeout: Duration
    /// The bound on connecting and on each D-Bus call.
    package let callTimeout: Duration

    /// A verifier for `username` (the effective user's by default) through fprintd on the bus at `busAddress`
    /// (the system bus by default).
    /// - Parameters:
    ///   - verifyTimeout: how long a verification waits for a finger (30 s by default).
    ///   - callTimeout: the bound on connecting and on each D-Bus call (5 s by default).
    package init(
        busAddress: String? = nil, username: String? = nil,
        verifyTimeout: Duration = .seconds(30), callTimeout: Duration = .seconds(5)
    ) {
        self.busAddress = busAddress
        self.username = username ?? Self.effectiveUserName()
        self.verifyTimeout = verifyTimeout
        self.callTimeout = callTimeout
    }

    /// The login name of the effective user (`getpwuid_r(geteuid())`), nil when the user database has none.
    package static func effectiveUserName() -> String? {
        var size = 4096
        while size <= 1 << 20 {
            var entry = passwd()
            var found: UnsafeMutablePointer<passwd>?
            var buffer = [CChar](repeating: 0, count: size)
            let result = getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &found)
            if result == ERANGE {
                size *= 4
                continue
            }
            guard result == 0, found != nil, let name = entry.pw_name else { return nil }
            return String(cString: name)
        }
        return nil
    }

    // MARK: BiometricVerifier

    /// Whether fprintd answers, has a default reader, and the user has at least one finger enrolled on it.
    package func isAvailable() -> Bool {
        if case .ready = status() { return true }
        return false
    }

    /// SHA-256 over the reader's name and the user's enrolled finger names (see ``FprintdReader/enrolledSetDigest``);
    /// nil when not available.
    package func enrolledSetDigest() -> Data? {
        guard case .ready(let reader) = status() else { return nil }
        return reader.enrolledSetDigest
    }

    /// Claims the default reader, asks for any enrolled finger and waits for fprintd's verdict, at most
    /// ``verifyTimeout``; then stops and releases the reader (also after an error or a timeout).
    ///
    /// - Returns: `.answered(true)` on `verify-match`; `.answered(false)` on `verify-no-match`; `.timedOut` when no
    ///   verdict came in time; `.unavailable` with a sentence for people when fprintd, the reader or an enrolled
    ///   finger is missing, polkit refuses, another program holds the reader, or the reader reports
    ///   `verify-disconnected` / `verify-unknown-error`. Retry statuses (`verify-retry-scan`,
    ///   `verify-swipe-too-short`, `verify-finger-not-centered`, `verify-remove-and-retry`) keep it waiting.
    ///   Never `.cancelled`: fprintd has no way for the person to cancel.
    ///
    /// It returns within ``verifyTimeout`` plus at most seven ``callTimeout``s (connecting, five calls before the
    /// wait, `VerifyStop` and `Release` after it).
    package func verify(reason: String) -> PromptOutcome<Bool> {
        guard let username else { return .unavailable(Self.noUserName) }
        let connection: DBusConnection
        do {
            connection = try connect()
        } catch {
            return .unavailable(explain(error, doing: "reaching fprintd"))
        }
        let device: String
        let daemon: String
        let statuses: DBusSignalMatch
        do {
            device = try defaultDevice(on: connection)
            // Only the daemon's own connection may decide: match its unique name, not the well-known one.
            daemon = try connection.nameOwner(of: Self.service, timeout: callTimeout)
            statuses = try connection.subscribe(
                sender: daemon, path: device, interface: Self.deviceInterface,
                member: "VerifyStatus")
            try callDevice(connection, device, "Claim", [.string(username)])
        } catch {
            return .unavailable(explain(error, doing: "claiming the fingerprint reader"))
        }
        defer {
            // Best effort: fprintd also releases a device when its claimer's connection closes, as this one does next.
            _ = try? callDevice(connection, device, "Release")
        }
        do {
            try callDevice(connection, device, "VerifyStart", [.string("any")])
        } catch {
            return .unavailable(explain(error, doing: "starting a verification"))
        }
        defer { _ = try? callDevice(connection, device, "VerifyStop") }

        let deadline = ContinuousClock.now + verifyTimeout
        while true {
            let signal: DBusSignal?
            do {
                signal = try connection.nextSignal(from: statuses, until: deadline)
            } catch {
                return .unavailable(explain(error, doing: "waiting for a finger"))
            }
            guard let signal else { return .timedOut }
            guard signal.sender == daemon, signal.arguments.count >= 2,
                let result = signal.arguments[0].string, let done = signal.arguments[1].bool
            else { continue }
            switch VerifyResult(status: result, done: done) {
            case .match: return .answered(true)
            case .noMatch: return .answered(false)
            case .retry: continue
            case .failed(let why): return .unavailable(why)
            }
        }
    }

    // MARK: Status

    /// What fprintd says now: the default reader with the user's enrolled fingers, or why not available.
    package func status() -> FprintdStatus {
        guard let username else { return .unavailable(Self.noUserName) }
        do {
            let connection = try connect()
            let device = try defaultDevice(on: connection)
            let name =
                try connection.property(
                    destination: Self.service, path: device, interface: Self.deviceInterface,
                    name: "name", timeout: callTimeout
                ).string ?? ""
            let fingers: [String]
            do {
                fingers = try callDevice(connection, device, "ListEnrolledFingers", [.string(username)]).first?.strings ?? []
            } catch let error where error.name == FprintdError.noEnrolledPrints {
                fingers = []
            }
            guard !fingers.isEmpty else {
                return .unavailable("No finger is enrolled for \(username) on the fingerprint reader \(name) (enrol one with fprintd-enroll).")
            }
            return .ready(FprintdReader(path: device, name: name, enrolledFingers: fingers))
        } catch {
            return .unavailable(explain(error, doing: "asking fprintd for the enrolled fingers"))
        }
    }

    // MARK: D-Bus

    private func connect() throws(DBusError) -> DBusConnection {
        if let busAddress { return try DBusConnection(address: busAddress, timeout: callTimeout) }
        return try DBusConnection.systemBus(timeout: callTimeout)
    }

    private func defaultDevice(on connection: DBusConnection) throws(DBusError) -> String {
        let reply = try connection.call(
            destination: Self.service, path: Self.managerPath, interface: Self.managerInterface,
            member: "GetDefaultDevice", timeout: callTimeout)
        guard case .objectPath(let path)? = reply.first else {
            throw .system(operation: "GetDefaultDevice", errno: EBADMSG)
        }
        return path
    }

    @discardableResult
    private func callDevice(
        _ connection: DBusConnection, _ device: String, _ member: String,
        _ arguments: [DBusValue] = []
    ) throws(DBusError) -> [DBusValue] {
        try connection.call(
            destination: Self.service, path: device, interface: Self.deviceInterface, member: member,
            arguments, timeout: callTimeout)
    }

    private static let noUserName = "The fingerprint reader cannot be used: this user has no name in the user database."

    /// A sentence for people about `error`, which happened while `doing`.
    func explain(_ error: DBusError, doing: String) -> String {
        let user = username ?? "this user"
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return "fprintd is not running on the system bus (install the fprintd package): \(error.message)"
        case "org.freedesktop.DBus.Error.AccessDenied":
            return "The system bus's policy does not allow talking to fprintd: \(error.message)"
        case FprintdError.noSuchDevice:
            return "No fingerprint reader is connected."
        case FprintdError.noEnrolledPrints:
            return "No finger is enrolled for \(user) (enrol one with fprintd-enroll)."
        case FprintdError.permissionDenied:
            return "fprintd refused \(user) the fingerprint reader: polkit denied net.reactivated.fprint.device.verify (\(error.message))."
        case FprintdError.alreadyInUse:
            return "The fingerprint reader is in use by another program."
        default:
            break
        }
        switch error {
        case .connectionFailed, .disconnected:
            return "The system bus cannot be reached, so fingerprints cannot be checked: \(error.message)."
        case .timedOut:
            return "fprintd did not answer in time (\(doing)): \(error.message)."
        default:
            return "fprintd failed while \(doing): \(error.message)."
        }
    }
}

/// What fprintd offers this user now.
package enum FprintdStatus: Sendable, Hashable {
    /// The default reader, with at least one finger enrolled.
    case ready(FprintdReader)
    /// Not usable; the sentence says why and what to do.
    case unavailable(String)
}

/// fprintd's default reader and the user's fingers enrolled on it.
package struct FprintdReader: Sendable, Hashable {
    /// Its object path (`/net/reactivated/Fprint/Device/0`).
    package var path: String
    /// Its name (`name` property, such as "Synaptics Sensors").
    package var name: String
    /// The enrolled fingers, as fprintd names them (`right-index-finger`).
    package var enrolledFingers: [String]

    /// A reader with these fields.
    package init(path: String, name: String, enrolledFingers: [String]) {
        self.path = path
        self.name = name
        self.enrolledFingers = enrolledFingers
    }

    /// SHA-256 of the ASCII text `fprintd-enrolled-set-v1`, then the reader's name, then each enrolled finger name
    /// in sorted order, each field as a 4-byte big-endian length and its UTF-8 bytes. The device path is left out:
    /// it is an enumeration index that can change between boots.
    package var enrolledSetDigest: Data {
        var hasher = SHA256()
        func field(_ text: String) {
            let bytes = Array(text.utf8)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        field("fprintd-enrolled-set-v1")
        field(name)
        for finger in enrolledFingers.sorted() { field(finger) }
        return Data(hasher.finalize())
    }
}

/// fprintd's D-Bus error names (`net.reactivated.Fprint.Error.…`).
package enum FprintdError {
    /// The caller is not allowed (polkit said no).
    package static let permissionDenied = "net.reactivated.Fprint.Error.PermissionDenied"
    /// Another client has claimed the device.
    package static let alreadyInUse = "net.reactivated.Fprint.Error.AlreadyInUse"
    /// The user has no enrolled finger (from `ListEnrolledFingers`, `VerifyStart`).
    package static let noEnrolledPrints = "net.reactivated.Fprint.Error.NoEnrolledPrints"
    /// There is no such (or no default) device.
    package static let noSuchDevice = "net.reactivated.Fprint.Error.NoSuchDevice"
    /// The device could not be claimed (opening it failed).
    package static let claimDevice = "net.reactivated.Fprint.Error.ClaimDevice"
    /// fprintd failed inside.
    package static let `internal` = "net.reactivated.Fprint.Error.Internal"
}

/// One `VerifyStatus(result, done)` signal, classified.
enum VerifyResult: Equatable {
    case match
    case noMatch
    /// Scan again: the verification goes on.
    case retry
    /// The verification ended without a verdict.
    case failed(String)

    init(status: String, done: Bool) {
        switch status {
        case "verify-match": self = .match
        case "verify-no-match": self = .noMatch
        case "verify-disconnected": self = .failed("The fingerprint reader was disconnected.")
        case "verify-unknown-error": self = .failed("The fingerprint reader failed (verify-unknown-error).")
        default:
            // verify-retry-scan, verify-swipe-too-short, verify-finger-not-centered, verify-remove-and-retry, and
            // statuses this code does not know: fprintd goes on unless it says it is done.
            self = done ? .failed("fprintd ended the verification with \(status).") : .retry
        }
    }
}
