import CSystemdBus
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a D-Bus message bus through sd-bus (libsystemd).
///
/// Everything is bounded: connecting, each method call (``call(destination:path:interface:member:_:timeout:)``)
/// and each wait for a signal (``nextSignal(from:until:)``) has a deadline, and closing does not wait for the
/// peer. Nothing is dispatched behind the caller's back: signals are collected only while
/// ``nextSignal(from:until:)`` runs (and queued by sd-bus meanwhile), so no thread is started.
///
/// A connection is used from one thread at a time: sd-bus objects are not thread-safe, so this class is not
/// `Sendable`. Open one where it is needed (connections are cheap) rather than sharing one.
package final class DBusConnection {
    /// The system bus's address when `DBUS_SYSTEM_BUS_ADDRESS` is not set.
    package static let defaultSystemBusAddress = "unix:path=/run/dbus/system_bus_socket"

    /// The address this connection was opened at.
    package let address: String
    /// The timeout of method calls that do not give their own (also of sd-bus's own calls, such as `AddMatch`).
    package let defaultTimeout: Duration
    /// The name the bus gave this connection (`:1.42`).
    package let uniqueName: String
    /// The `sd_bus`, owned: closed and released at deinit.
    private let bus: OpaquePointer

    /// Opens the system bus: `DBUS_SYSTEM_BUS_ADDRESS` from `environment` when set, else
    /// ``defaultSystemBusAddress``.
    /// - Parameters:
    ///   - timeout: the bound on connecting (authentication and `Hello`) and the default method-call timeout.
    ///   - environment: where `DBUS_SYSTEM_BUS_ADDRESS` is read (the process's environment by default).
    package static func systemBus(
        timeout: Duration = .seconds(5),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DBusError) -> DBusConnection {
        let address = environment["DBUS_SYSTEM_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultSystemBusAddress
        return try DBusConnection(address: address, timeout: timeout)
    }

    /// Connects to the message bus at `address` (`unix:path=…`, as `dbus-daemon --print-address` writes it),
    /// authenticates and says `Hello`, all within `timeout`.
    /// - Parameter timeout: the bound on connecting, and the default method-call timeout afterwards.
    package init(address: String, timeout: Duration = .seconds(5)) throws(DBusError) {
        let opened = try Self.openBus(address: address, timeout: timeout)
        self.bus = opened.bus
        self.uniqueName = opened.uniqueName
        self.address = address
        self.defaultTimeout = timeout
    }

    /// Creates an sd-bus connection to `address`, authenticates and says `Hello` within `timeout`, and returns it
    /// with the unique name the bus gave it. The caller owns the returned `sd_bus` (released with
    /// `sd_bus_close_unref`) and must use it from one thread at a time: the thread that called this, or one it
    /// hands the connection to.
    ///
    /// Shared by ``DBusConnection`` and ``DBusServerConnection`` (which calls it on its bus thread).
    static func openBus(address: String, timeout: Duration) throws(DBusError) -> (bus: OpaquePointer, uniqueName: String) {
        guard !address.utf8.contains(0) else { throw .invalidArgument("the bus address contains a NUL byte") }
        var created: OpaquePointer?
        let made = sd_bus_new(&created)
        guard made >= 0, let bus = created else { throw .system(operation: "sd_bus_new", errno: -made) }
        do throws(DBusError) {
            try Self.start(bus, address: address, timeout: timeout)
            var unique: UnsafePointer<CChar>?
            let named = sd_bus_get_unique_name(bus, &unique)
            guard named >= 0, let unique else { throw DBusError.fromReturn(named, operation: "reading the unique name") }
            return (bus, String(cString: unique))
        } catch {
            sd_bus_close_unref(bus)
            throw error
        }
    }

    /// Sets `bus`'s address and timeouts, starts it, and drives it until it is ready (authenticated, `Hello`
    /// answered) or `timeout` passes.
    private static func start(_ bus: OpaquePointer, address: String, timeout: Duration) throws(DBusError) {
        var result = sd_bus_set_address(bus, address)
        guard result >= 0 else { throw .connectionFailed(address: address, errno: -result) }
        result = sd_bus_set_bus_client(bus, 1)
        guard result >= 0 else { throw .system(operation: "sd_bus_set_bus_client", errno: -result) }
        result = sd_bus_set_method_call_timeout(bus, microseconds(timeout))
        guard result >= 0 else { throw .system(operation: "sd_bus_set_method_call_timeout", errno: -result) }
        result = sd_bus_start(bus)
        guard result >= 0 else { throw .connectionFailed(address: address, errno: -result) }
        // sd_bus_start only begins: the socket may still be connecting and authenticating, and Hello's answer is
        // pending. Drive it to ready here, under our own deadline rather than sd-bus's 25 s default.
        let deadline = ContinuousClock.now + timeout
        while true {
            result = sd_bus_is_ready(bus)
            if result > 0 { return }
            if result < 0 { throw .connectionFailed(address: address, errno: -result) }
            result = sd_bus_process(bus, nil)
            if result < 0 { throw .connectionFailed(address: address, errno: -result) }
            if result > 0 { continue }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw .timedOut(operation: "connecting to \(address)") }
            result = sd_bus_wait(bus, microseconds(remaining))
            if result < 0 && result != -EINTR { throw .connectionFailed(address: address, errno: -result) }
        }
    }

    deinit {
        // Not sd_bus_flush_close_unref: flushing waits, unbounded, for the peer to read what is queued.
        sd_bus_close_unref(bus)
    }

    // MARK: Method calls

    /// Calls `interface.member` on `path` at `destination` with `arguments`, and returns the reply's values.
    ///
    /// - Parameter timeout: how long to wait for the reply (``defaultTimeout`` when nil).
    /// - Throws: ``DBusError/remote(name:message:)`` with the error the peer (or the bus, such as
    ///   `org.freedesktop.DBus.Error.ServiceUnknown`) answered; ``DBusError/timedOut(operation:)`` when no reply
    ///   came in time; ``DBusError/disconnected``; ``DBusError/invalidArgument(_:)`` for a malformed name or value.
    @discardableResult
    package func call(
        destination: String, path: String, interface: String, member: String,
        _ arguments: [DBusValue] = [], timeout: Duration? = nil
    ) throws(DBusError) -> [DBusValue] {
        let operation = "\(interface).\(member)"
        for name in [destination, path, interface, member] where name.utf8.contains(0) {
            throw .invalidArgument("a name contains a NUL byte")
        }
        var built: OpaquePointer?
        let made = sd_bus_message_new_method_call(bus, &built, destination, path, interface, member)
        guard made >= 0, let message = built else {
            if made == -EINVAL { throw .invalidArgument("\(destination) \(path) \(operation) is not a valid method call") }
            throw DBusError.fromReturn(made, operation: operation)
        }
        defer { sd_bus_message_unref(message) }
        for argument in arguments { try argument.append(to: message) }

        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var received: OpaquePointer?
        let result = sd_bus_call(bus, message, Self.microseconds(timeout ?? defaultTimeout), &error, &received)
        if result < 0 {
            if result == -ETIMEDOUT { throw .timedOut(operation: operation) }
            if result == -ECONNRESET || result == -ENOTCONN { throw .disconnected }
            if sd_bus_error_is_set(&error) > 0, let name = error.name {
                throw .remote(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? "")
            }
            throw DBusError.fromReturn(result, operation: operation)
        }
        guard let reply = received else { return [] }
        defer { sd_bus_message_unref(reply) }
        return try DBusValue.readAll(from: reply)
    }

    // MARK: Signals

    /// Starts collecting the signals that match: from `sender`, on `path`, of `interface`, named `member` (nil
    /// matches any). The bus is told (`AddMatch`, within ``defaultTimeout``) and sd-bus checks each signal
    /// again locally.
    ///
    /// Give `sender` as a unique name (`:1.42`, from ``nameOwner(of:)``) when the signal decides something: with a
    /// unique name only that connection's signals match, whereas sd-bus lets a signal from any unique name through
    /// a rule naming a well-known name (it cannot know who owns it), and a signal sent directly to this connection
    /// bypasses the bus's match rules.
    ///
    /// Signals are collected only while ``nextSignal(from:until:)`` runs; the match ends when the returned object
    /// is released.
    package func subscribe(sender: String?, path: String?, interface: String?, member: String?) throws(DBusError) -> DBusSignalMatch {
        for name in [sender, path, interface, member].compactMap({ $0 }) where name.utf8.contains(0) {
            throw .invalidArgument("a match field contains a NUL byte")
        }
        let inbox = DBusSignalMatch.Inbox()
        let userdata = Unmanaged.passUnretained(inbox).toOpaque()
        var slot: OpaquePointer?
        let result = sd_bus_match_signal(
            bus, &slot, sender, path, interface, member,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                Unmanaged<DBusSignalMatch.Inbox>.fromOpaque(userdata).takeUnretainedValue().receive(message)
                return 0
            }, userdata)
        guard result >= 0, let slot else {
            if result == -EINVAL { throw .invalidArgument("the signal match is not valid") }
            throw DBusError.fromReturn(result, operation: "AddMatch")
        }
        return DBusSignalMatch(slot: slot, inbox: inbox, connection: self)
    }

    /// The next signal `match` collected, waiting for one until `deadline`; nil when the deadline passes first.
    ///
    /// Reads and dispatches what arrives on the connection meanwhile (other messages are dropped). The deadline is
    /// checked after every message, so a peer flooding the connection cannot hold this past it.
    package func nextSignal(from match: DBusSignalMatch, until deadline: ContinuousClock.Instant) throws(DBusError) -> DBusSignal? {
        guard match.connection === self else {
            throw .invalidArgument("the signal match belongs to another connection")
        }
        while true {
            if let signal = match.inbox.take() { return signal }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return nil }
            let processed = sd_bus_process(bus, nil)
            if processed < 0 { throw DBusError.fromReturn(processed, operation: "reading from the bus") }
            if processed > 0 { continue }
            let waited = sd_bus_wait(bus, Self.microseconds(remaining))
            if waited < 0 && waited != -EINTR { throw DBusError.fromReturn(waited, operation: "waiting on the bus") }
        }
    }

    /// Sends a signal from this connection: `interface.member` on `path`, with `arguments`, to every connection
    /// whose match rules accept it (or only to `destination`). Returns once it is written to the socket, or throws
    /// ``DBusError/timedOut(operation:)`` at `timeout` (``defaultTimeout`` when nil).
    package func emitSignal(
        path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
        destination: String? = nil, timeout: Duration? = nil
    ) throws(DBusError) {
        let operation = "sending \(interface).\(member)"
        for name in [path, interface, member, destination ?? ""] where name.utf8.contains(0) {
            throw .invalidArgument("a name contains a NUL byte")
        }
        var built: OpaquePointer?
        let made = sd_bus_message_new_signal(bus, &built, path, interface, member)
        guard made >= 0, let message = built else {
            if made == -EINVAL { throw .invalidArgument("\(path) \(interface).\(member) is not a valid signal") }
            throw DBusError.fromReturn(made, operation: operation)
        }
        defer { sd_bus_message_unref(message) }
        if let destination {
            let set = sd_bus_message_set_destination(message, destination)
            guard set >= 0 else { throw .invalidArgument("\(destination) is not a valid destination") }
        }
        for argument in arguments { try argument.append(to: message) }
        let sent = sd_bus_send(bus, message, nil)
        guard sent >= 0 else { throw DBusError.fromReturn(sent, operation: operation) }
        try drainWrites(until: ContinuousClock.now + (timeout ?? defaultTimeout), operation: operation)
    }

    /// Writes what sd-bus has queued, until `deadline` (sd_bus_flush would wait without bound).
    private func drainWrites(until deadline: ContinuousClock.Instant, operation: String) throws(DBusError) {
        while true {
            var queued: UInt64 = 0
            let counted = sd_bus_get_n_queued_write(bus, &queued)
            guard counted >= 0 else { throw DBusError.fromReturn(counted, operation: operation) }
            if queued == 0 { return }
            let processed = sd_bus_process(bus, nil)
            if processed < 0 { throw DBusError.fromReturn(processed, operation: operation) }
            if processed > 0 { continue }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw .timedOut(operation: operation) }
            let waited = sd_bus_wait(bus, Self.microseconds(remaining))
            if waited < 0 && waited != -EINTR { throw DBusError.fromReturn(waited, operation: operation) }
        }
    }

    /// A duration in whole microseconds for sd-bus, at least 1 (0 would mean "sd-bus's default" to sd_bus_call).
    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 1 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return UInt64.max - 1 }
        return max(1, scaled &+ UInt64(attoseconds / 1_000_000_000_000))
    }
}

@available(*, unavailable, message: "sd-bus connections are used from one thread at a time; open one per thread or task")
extension DBusConnection: Sendable {}

// MARK: The message bus itself

extension DBusConnection {
    /// The bus's own name, path and interface (`org.freedesktop.DBus`).
    package static let busName = "org.freedesktop.DBus"

    /// The unique name of the connection that owns `name` now (`GetNameOwner`).
    /// - Throws: ``DBusError/remote(name:message:)`` named `org.freedesktop.DBus.Error.NameHasNoOwner` when nobody
    ///   owns it.
    package func nameOwner(of name: String, timeout: Duration? = nil) throws(DBusError) -> String {
        let reply = try call(
            destination: Self.busName, path: "/org/freedesktop/DBus", interface: Self.busName,
            member: "GetNameOwner", [.string(name)], timeout: timeout)
        guard let owner = reply.first?.string else { throw .system(operation: "GetNameOwner", errno: EBADMSG) }
        return owner
    }

    /// The names on the bus now, unique and well-known (`ListNames`).
    package func listNames(timeout: Duration? = nil) throws(DBusError) -> [String] {
        let reply = try call(
            destination: Self.busName, path: "/org/freedesktop/DBus", interface: Self.busName,
            member: "ListNames", timeout: timeout)
        guard let names = reply.first?.strings else { throw .system(operation: "ListNames", errno: EBADMSG) }
        return names
    }

    /// One property of an object (`org.freedesktop.DBus.Properties.Get`), unwrapped from its variant.
    package func property(
        destination: String, path: String, interface: String, name: String,
        timeout: Duration? = nil
    ) throws(DBusError) -> DBusValue {
        let reply = try call(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties",
            member: "Get", [.string(interface), .string(name)], timeout: timeout)
        guard case .variant(let value)? = reply.first else {
            throw .system(operation: "Properties.Get \(interface).\(name)", errno: EBADMSG)
        }
        return value
    }
}

// MARK: Signals

/// A signal as received: who sent it, from which object, and its arguments.
package struct DBusSignal: Sendable, Hashable {
    /// The sender's unique name (`:1.42`).
    package var sender: String?
    /// The object path it was emitted on.
    package var path: String?
    /// Its interface.
    package var interface: String?
    /// Its name.
    package var member: String?
    /// Its arguments.
    package var arguments: [DBusValue]

    /// A signal with these fields (as ``DBusConnection/nextSignal(from:until:)`` returns them).
    package init(sender: String?, path: String?, interface: String?, member: String?, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A match rule installed by ``DBusConnection/subscribe(sender:path:interface:member:)`` and the signals it
/// collected; the rule is removed when this is released. Used with the connection that made it.
package final class DBusSignalMatch {
    /// At most this many signals wait to be taken; later ones are dropped until some are taken.
    package static let capacity = 256

    /// The signals collected, appended by sd-bus's callback (during sd_bus_process on the owning thread).
    final class Inbox {
        private var queue: [DBusSignal] = []
        private var head = 0

        func receive(_ message: OpaquePointer) {
            guard queue.count - head < DBusSignalMatch.capacity else { return }
            // A signal whose arguments cannot be read is dropped rather than delivered half-read.
            guard let arguments = try? DBusValue.readAll(from: message) else { return }
            func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
            queue.append(
                DBusSignal(
                    sender: text(sd_bus_message_get_sender(message)),
                    path: text(sd_bus_message_get_path(message)),
                    interface: text(sd_bus_message_get_interface(message)),
                    member: text(sd_bus_message_get_member(message)),
                    arguments: arguments))
        }

        func take() -> DBusSignal? {
            guard head < queue.count else { return nil }
            let signal = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            return signal
        }
    }

    private let slot: OpaquePointer
    let inbox: Inbox
    /// Kept open while the match lives.
    let connection: DBusConnection

    init(slot: OpaquePointer, inbox: Inbox, connection: DBusConnection) {
        self.slot = slot
        self.inbox = inbox
        self.connection = connection
    }

    deinit {
        // Runs before `connection` is released; the callback's userdata (inbox) outlives the slot.
        sd_bus_slot_unref(slot)
    }
}

@available(*, unavailable, message: "a signal match belongs to one connection, used from one thread at a time")
extension DBusSignalMatch: Sendable {}
