#if canImport(Glibc)
import Glibc
#endif

/// A method call a peer made on any object of a ``DBusServerConnection``, read on the bus thread.
///
/// Answer it once, from any thread or task, with ``DBusServerConnection/reply(to:_:)`` or
/// ``DBusServerConnection/replyError(to:name:message:)`` (unless ``noReplyExpected``). Everything here came from the
/// peer except ``sender``, which the bus daemon sets.
/// How a handler on the bus thread answers a call it can answer at once (see
/// ``DBusServerConnection/answerOnBusThread(_:)``).
package enum DBusInlineAnswer: Sendable, Hashable {
    /// The method's out arguments.
    case reply([DBusValue])
    /// The D-Bus error `name` with `message` (an invalid name is sent as `org.freedesktop.DBus.Error.Failed`).
    case error(name: String, message: String)
}

/// Answers a call on the bus thread, or returns nil to have it delivered on ``DBusServerConnection/calls``.
package typealias DBusInlineHandler = @Sendable (DBusMethodCall) -> DBusInlineAnswer?

package struct DBusMethodCall: Sendable, Hashable {
    /// The caller's unique name (`:1.42`), set by the bus: the peer cannot choose it.
    package var sender: String
    /// The object path called (`/org/freedesktop/secrets/collection/login`).
    package var path: String
    /// The interface named in the call; nil when the caller gave none (D-Bus allows it).
    package var interface: String?
    /// The method's name.
    package var member: String
    /// The arguments' type signature as the message declared it (`sa{sv}`).
    package var signature: String
    /// The arguments, read within ``DBusServerLimits/reading``.
    package var arguments: [DBusValue]
    /// Whether the caller asked for no reply (`NO_REPLY_EXPECTED`): replying to such a call does nothing.
    package var noReplyExpected: Bool
    /// Which call this is, for the reply (unique in this process).
    package var token: UInt64

    /// A call with these fields (as the server builds them; tests build their own).
    package init(
        sender: String, path: String, interface: String?, member: String, signature: String,
        arguments: [DBusValue], noReplyExpected: Bool, token: UInt64
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.signature = signature
        self.arguments = arguments
        self.noReplyExpected = noReplyExpected
        self.token = token
    }
}

/// What `RequestName` gave (asked with `DBUS_NAME_FLAG_DO_NOT_QUEUE`, so never a place in a queue).
package enum DBusNameRequestResult: Sendable, Hashable {
    /// This connection now owns the name.
    case primaryOwner
    /// This connection owned the name already.
    case alreadyOwner
    /// Another connection owns it, and did not allow replacement (or replacement was not asked).
    case exists
}

/// Something that happened to a ``DBusServerConnection`` itself.
package enum DBusServerEvent: Sendable, Hashable {
    /// The bus took `name` from this connection (`NameLost`): another connection replaced it, or it was released.
    case nameLost(String)
    /// The connection to the bus was lost (the bus daemon exited or closed it); no more calls come.
    case disconnected
}

/// A `NameOwnerChanged` signal from the bus daemon: `name` passed from `oldOwner` to `newOwner` (empty when nobody).
package struct DBusNameOwnerChange: Sendable, Hashable {
    /// The name whose owner changed (for a connection that left the bus, its unique name).
    package var name: String
    /// The owner before, empty when there was none.
    package var oldOwner: String
    /// The owner now, empty when there is none (the connection left the bus).
    package var newOwner: String

    /// A change with these fields.
    package init(name: String, oldOwner: String, newOwner: String) {
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }
}

/// A file descriptor this process owns, closed when the last reference goes. Equal only to itself.
package final class DBusFileDescriptor: Sendable, Hashable {
    /// The descriptor (close-on-exec). Valid while this object lives; do not close it yourself.
    package let rawValue: Int32

    /// Takes ownership of `rawValue`.
    package init(owning rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        _ = Glibc.close(rawValue)
    }

    package static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }

    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// What the bus daemon knows of a connection (`GetConnectionCredentials`), taken when that connection connected.
///
/// A process id alone may name another process by the time it is used (the peer exited, the id was reused);
/// ``processFD`` (a pidfd) does not, but only newer bus daemons give one (dbus-daemon 1.15.8 and later, not the
/// 1.14 of Debian 12).
package struct DBusPeerCredentials: Sendable {
    /// The peer's user id (`UnixUserID`), when the bus gave it.
    package var userID: UInt32?
    /// The peer's process id (`ProcessID`), when the bus gave it.
    package var processID: UInt32?
    /// A pidfd for the peer's process (`ProcessFD`), duplicated close-on-exec and owned here; nil when the bus
    /// gave none.
    package var processFD: DBusFileDescriptor?

    /// Credentials with these fields.
    package init(userID: UInt32?, processID: UInt32?, processFD: DBusFileDescriptor?) {
        self.userID = userID
        self.processID = processID
        self.processFD = processFD
    }
}

/// What one ``DBusServerConnection`` accepts from its peers before refusing.
package struct DBusServerLimits: Sendable, Hashable {
    /// Calls one sender may have waiting for a reply; more are answered `org.freedesktop.DBus.Error.LimitsExceeded`.
    package var maximumPendingCallsPerSender: Int
    /// Calls all senders together may have waiting for a reply; more are answered `LimitsExceeded`.
    package var maximumPendingCalls: Int
    /// What reading one call's arguments may build; a call beyond it is answered
    /// `org.freedesktop.DBus.Error.InvalidArgs`.
    package var reading: DBusReadLimits
    /// How long a call may wait for its reply before the server answers `org.freedesktop.DBus.Error.Failed` itself
    /// and forgets it (callers' own timeouts are usually 25 s).
    package var unansweredCallLifetime: Duration

    /// Limits with these values: by default 64 calls per sender, 1,024 in all, a million values and 64 levels
    /// per message, two minutes for a reply.
    package init(
        maximumPendingCallsPerSender: Int = 64, maximumPendingCalls: Int = 1024,
        reading: DBusReadLimits = .default, unansweredCallLifetime: Duration = .seconds(120)
    ) {
        self.maximumPendingCallsPerSender = maximumPendingCallsPerSender
        self.maximumPendingCalls = maximumPendingCalls
        self.reading = reading
        self.unansweredCallLifetime = unansweredCallLifetime
    }
}

/// The D-Bus error names the server answers with itself.
package enum DBusErrorName {
    /// `org.freedesktop.DBus.Error.Failed`: the call could not be served.
    package static let failed = "org.freedesktop.DBus.Error.Failed"
    /// `org.freedesktop.DBus.Error.InvalidArgs`: the arguments could not be read, or were too many or too deep.
    package static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    /// `org.freedesktop.DBus.Error.LimitsExceeded`: the caller has too many calls waiting.
    package static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

    /// Whether `name` is a valid D-Bus error name: at most 255 bytes, two or more dot-separated elements of ASCII
    /// letters, digits and `_`, none empty or starting with a digit. The bus daemon disconnects a connection that
    /// sends a message with an invalid one.
    package static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        var elements = 0
        for element in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard let first = element.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            for byte in element {
                let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                guard letter || digit || byte == UInt8(ascii: "_") else { return false }
            }
            elements += 1
        }
        return elements >= 2
    }
}
