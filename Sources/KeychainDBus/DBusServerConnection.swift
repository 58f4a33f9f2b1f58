import CSystemdBus
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a message bus that serves objects: it receives method calls on any object path, answers them
/// when told, owns names, emits signals, and asks the bus about its peers.
///
/// sd-bus is not thread-safe, so the connection lives on one dedicated thread (the bus thread) that makes every
/// sd-bus call for it: it connects, reads and dispatches messages (`sd_bus_process`), then sleeps in `poll` on the
/// bus socket and on an eventfd that other threads signal when they queue work (replies, signals, calls to the bus,
/// closing). Everything else here may be used from any thread or task: it only queues work and wakes the thread.
///
/// Method calls arrive on ``calls``, read on the bus thread within ``limits``; the bus thread answers by itself,
/// without delivering the call, when a sender (or everyone) has too many calls waiting (`LimitsExceeded`) or the
/// arguments cannot be read within the limits (`InvalidArgs`). `org.freedesktop.DBus.Peer` (`Ping`,
/// `GetMachineId`) is answered by sd-bus. A handler set with ``answerOnBusThread(_:)`` may answer quick calls on
/// the bus thread itself before they are delivered. A call delivered is kept (its message referenced) until it is answered,
/// its consumer stops taking calls, ``DBusServerLimits/unansweredCallLifetime`` passes (then the server answers
/// `Failed`), or the connection closes.
///
/// Closing (``close()``, or releasing the last reference) stops the thread: what was queued before is sent (for at
/// most a second), the streams finish, and the connection to the bus closes, upon which the bus daemon answers
/// every call still waiting with `NoReply`.
package final class DBusServerConnection: Sendable {
    /// The address this connection was opened at.
    package let address: String
    /// The name the bus gave this connection (`:1.42`).
    package let uniqueName: String
    /// What this connection accepts from its peers.
    package let limits: DBusServerLimits
    /// The timeout of calls this connection makes to the bus or to other peers.
    package let callTimeout: Duration
    /// The method calls peers make, in the order they arrived. One consumer should take them all and answer each
    /// (calls arriving while ``DBusServerLimits/maximumPendingCalls`` are not taken yet are answered `Failed`).
    /// Once the consuming task is cancelled, later calls are answered `Failed`. Finishes when the connection closes.
    package let calls: AsyncStream<DBusMethodCall>
    /// What happens to this connection: names lost, the bus gone. Keeps the latest 256 when not taken.
    package let events: AsyncStream<DBusServerEvent>
    /// Connections that left the bus: the bus daemon's `NameOwnerChanged` for unique names whose new owner is
    /// empty, so that what belongs to a client (sessions) can be dropped. Keeps the oldest
    /// ``peerDepartureCapacity`` when not taken, so one consumer should take them as they come.
    package let peerDepartures: AsyncStream<DBusNameOwnerChange>
    /// How many ``peerDepartures`` wait to be taken before later ones are dropped.
    package static let peerDepartureCapacity = 65_536

    /// The state shared with the bus thread: its work queue and wake-up descriptor.
    private let shared: DBusServerShared

    /// Opens a connection to the bus at `address` (`unix:path=…`, as `dbus-daemon --print-address` writes it) on a
    /// new bus thread: authenticates, says `Hello` and subscribes to `NameOwnerChanged`, each within `timeout`.
    /// - Parameters:
    ///   - timeout: the bound on connecting and on each call this connection makes (``callTimeout``).
    ///   - limits: what the connection accepts from its peers.
    ///
    /// Blocks the calling thread until connected (as ``DBusConnection/init(address:timeout:)`` does).
    /// - Throws: what ``DBusConnection/init(address:timeout:)`` throws; ``DBusError/system(operation:errno:)`` when
    ///   the eventfd or the subscription cannot be made.
    package init(address: String, timeout: Duration = .seconds(5), limits: DBusServerLimits = DBusServerLimits()) throws(DBusError) {
        let wake = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wake >= 0 else { throw .system(operation: "eventfd", errno: errno) }
        let shared = DBusServerShared(wakeDescriptor: wake)
        let (calls, callSink) = AsyncStream.makeStream(
            of: DBusMethodCall.self,
            bufferingPolicy: .bufferingOldest(max(1, limits.maximumPendingCalls)))
        let (events, eventSink) = AsyncStream.makeStream(of: DBusServerEvent.self, bufferingPolicy: .bufferingNewest(256))
        let (departures, departureSink) = AsyncStream.makeStream(
            of: DBusNameOwnerChange.self,
            bufferingPolicy: .bufferingOldest(Self.peerDepartureCapacity))
        let sinks = DBusServerSinks(calls: callSink, events: eventSink, departures: departureSink)
        let startup = DBusServerStartup()
        let thread = Thread {
            // Named from inside: swift-corelibs-foundation does not pass a name set before start to the system, and
            // the thread would show (in perf, top -H) under the name of the thread that made it.
            Thread.current.name = "D-Bus server"
            DBusServerLoop.run(address: address, timeout: timeout, limits: limits, shared: shared, sinks: sinks, startup: startup)
        }
        thread.name = "D-Bus server"
        thread.start()
        // Bounded: connecting and subscribing each have `timeout`.
        startup.done.wait()
        guard let outcome = startup.outcome.withLock({ $0 }) else {
            throw .system(operation: "starting the D-Bus server thread", errno: EFAULT)
        }
        switch outcome {
        case .success(let name): self.uniqueName = name
        case .failure(let error): throw error
        }
        self.address = address
        self.limits = limits
        self.callTimeout = timeout
        self.calls = calls
        self.events = events
        self.peerDepartures = departures
        self.shared = shared
    }

    deinit {
        shared.requestStop()
    }

    /// Stops the bus thread: what was queued before is sent (within a second), calls still waiting are released
    /// (the bus daemon answers their callers `NoReply`), pending calls to the bus throw
    /// ``DBusError/disconnected``, the streams finish and the connection closes. Returns at once; later work
    /// (replies, signals, calls) is dropped or throws ``DBusError/disconnected``. Calling it again does nothing.
    package func close() {
        shared.requestStop()
    }

    // MARK: Answering calls

    /// Has `handler` look at each method call first, on the bus thread, before it is delivered on ``calls``: a call
    /// it answers (non-nil) is replied to right there, without waking another thread; one it returns nil for goes
    /// on to ``calls`` as usual. Replaces any handler set before; nil removes it.
    ///
    /// For quick answers only (reads from memory or a local database): while `handler` runs, the connection reads
    /// nothing else, so it must never wait on a peer, a prompt, a lock held for long, or on this connection (a
    /// ``call(destination:path:interface:member:_:timeout:)`` from it would wait forever). Calls over the limits
    /// or unreadable are refused before it sees them.
    package func answerOnBusThread(_ handler: DBusInlineHandler?) {
        shared.inlineHandler.withLock { $0 = handler.map(DBusInlineHandlerBox.init) }
    }

    /// Answers `call` with `values` (the method's out arguments). Queued to the bus thread; returns at once.
    ///
    /// Does nothing when the call was answered already, expected no reply, or was released (its lifetime passed,
    /// the connection closed). When the values cannot be sent (a string with a NUL byte, an array holding another
    /// type), the caller is answered `org.freedesktop.DBus.Error.Failed` instead.
    package func reply(to call: DBusMethodCall, _ values: [DBusValue] = []) {
        guard !call.noReplyExpected else { return }
        _ = shared.submit(.reply(token: call.token, values: values))
    }

    /// Answers `call` with the D-Bus error `name` (`org.freedesktop.Secret.Error.NoSuchObject`) and `message` (for
    /// people). Queued to the bus thread; returns at once. An invalid error name is sent as
    /// `org.freedesktop.DBus.Error.Failed` (the bus would disconnect a connection sending it).
    package func replyError(to call: DBusMethodCall, name: String, message: String) {
        guard !call.noReplyExpected else { return }
        _ = shared.submit(.replyError(token: call.token, name: name, message: message))
    }

    // MARK: Signals

    /// Emits the signal `interface.member` on `path` with `arguments`, to every connection whose match rules
    /// accept it (or only to `destination`). Queued to the bus thread; returns at once. A signal that cannot be
    /// built (an invalid path or name) is dropped; use ``sendSignal(path:interface:member:_:destination:)`` to
    /// know.
    package func emitSignal(
        path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
        destination: String? = nil
    ) {
        let signal = DBusOutgoingSignal(path: path, interface: interface, member: member, arguments: arguments, destination: destination)
        _ = shared.submit(.signal(signal, done: nil))
    }

    /// Emits a signal as ``emitSignal(path:interface:member:_:destination:)`` does, and returns once sd-bus has
    /// queued it for the socket.
    /// - Throws: ``DBusError/invalidArgument(_:)`` for an invalid path, name or value; ``DBusError/disconnected``.
    package func sendSignal(
        path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
        destination: String? = nil
    ) async throws(DBusError) {
        let signal = DBusOutgoingSignal(path: path, interface: interface, member: member, arguments: arguments, destination: destination)
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            let work = DBusServerWork.signal(signal, done: { continuation.resume(returning: $0) })
            if !shared.submit(work) { continuation.resume(returning: .failure(.disconnected)) }
        }
        try result.get()
    }

    // MARK: Calls made from this connection

    /// Calls `interface.member` on `path` at `destination` with `arguments` and returns the reply's values (read
    /// within ``limits``). The bus thread sends the call and goes on serving; the reply completes this.
    /// - Parameter timeout: how long to wait for the reply (``callTimeout`` when nil).
    /// - Throws: ``DBusError/remote(name:message:)`` with the error answered; ``DBusError/timedOut(operation:)``;
    ///   ``DBusError/disconnected``; ``DBusError/invalidArgument(_:)`` for a malformed name or value.
    @discardableResult
    package func call(
        destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
        timeout: Duration? = nil
    ) async throws(DBusError) -> [DBusValue] {
        let reading = limits.reading
        return try await call(
            destination: destination, path: path, interface: interface, member: member, arguments,
            timeout: timeout
        ) { reply throws(DBusError) in
            try DBusValue.readAll(from: reply, limits: reading)
        }
    }

    /// Makes a call whose reply `parse` reads on the bus thread, before the reply message is released.
    private func call<T: Sendable>(
        destination: String, path: String, interface: String, member: String,
        _ arguments: [DBusValue], timeout: Duration?,
        parse: @escaping @Sendable (OpaquePointer) throws(DBusError) -> T
    ) async throws(DBusError) -> T {
        let outgoing = DBusOutgoingCall(
            destination: destination, path: path, interface: interface, member: member,
            arguments: arguments, timeout: timeout ?? callTimeout)
        let result: Result<T, DBusError> = await withCheckedContinuation { continuation in
            let work = DBusServerWork.call(
                outgoing,
                onReply: { reply in
                    continuation.resume(
                        returning: reply.flatMap { message in
                            Result { () throws(DBusError) -> T in try parse(message) }
                        })
                })
            if !shared.submit(work) { continuation.resume(returning: .failure(.disconnected)) }
        }
        return try result.get()
    }

    // MARK: The message bus

    /// The bus daemon's name, object path and interface.
    private static let bus = (name: "org.freedesktop.DBus", path: "/org/freedesktop/DBus")

    /// Asks the bus for `name` (`RequestName` with `DBUS_NAME_FLAG_DO_NOT_QUEUE`: never waits in a queue).
    /// - Parameters:
    ///   - replaceExisting: take the name from its owner if that owner allowed replacement.
    ///   - allowReplacement: let a later connection asking with `replaceExisting` take it (this connection then
    ///     gets ``DBusServerEvent/nameLost(_:)``).
    /// - Throws: ``DBusError/remote(name:message:)`` when the bus refused (`AccessDenied` by its policy, an invalid
    ///   name); ``DBusError/disconnected``; ``DBusError/timedOut(operation:)``.
    package func requestName(
        _ name: String, replaceExisting: Bool = false,
        allowReplacement: Bool = false
    ) async throws(DBusError) -> DBusNameRequestResult {
        // DBUS_NAME_FLAG_ALLOW_REPLACEMENT 1, DBUS_NAME_FLAG_REPLACE_EXISTING 2, DBUS_NAME_FLAG_DO_NOT_QUEUE 4.
        let flags: UInt32 = 4 | (allowReplacement ? 1 : 0) | (replaceExisting ? 2 : 0)
        let reply = try await call(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name,
            member: "RequestName", [.string(name), .uint32(flags)])
        switch reply.first?.uint32 {
        case 1: return .primaryOwner
        case 3: return .exists
        case 4: return .alreadyOwner
        default: throw .system(operation: "RequestName \(name)", errno: EBADMSG)
        }
    }

    /// Gives `name` back to the bus (`ReleaseName`). Returns whether this connection owned it.
    @discardableResult
    package func releaseName(_ name: String) async throws(DBusError) -> Bool {
        let reply = try await call(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name,
            member: "ReleaseName", [.string(name)])
        // DBUS_RELEASE_NAME_REPLY_RELEASED 1, NON_EXISTENT 2, NOT_OWNER 3.
        return reply.first?.uint32 == 1
    }

    /// What the bus knows of the connection `uniqueName` (`GetConnectionCredentials`): its user and process id, and
    /// a pidfd for its process when the bus gives one (duplicated close-on-exec before the reply is released).
    /// - Throws: ``DBusError/remote(name:message:)`` named `org.freedesktop.DBus.Error.NameHasNoOwner` when that
    ///   connection has left; ``DBusError/disconnected``; ``DBusError/timedOut(operation:)``.
    package func credentials(of uniqueName: String) async throws(DBusError) -> DBusPeerCredentials {
        try await call(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name,
            member: "GetConnectionCredentials", [.string(uniqueName)], timeout: nil
        ) { reply throws(DBusError) in
            try Self.readCredentials(from: reply)
        }
    }

    /// Reads `GetConnectionCredentials`'s `a{sv}`: `UnixUserID` and `ProcessID` (`u`), `ProcessFD` (`h`, duplicated
    /// here); other entries are skipped. At most 64 entries are read.
    private static func readCredentials(from reply: OpaquePointer) throws(DBusError) -> DBusPeerCredentials {
        let operation = "reading GetConnectionCredentials"
        func check(_ result: Int32) throws(DBusError) {
            guard result >= 0 else { throw .system(operation: operation, errno: -result) }
        }
        func enter(_ type: UInt8, _ contents: String) throws(DBusError) -> Bool {
            let entered = sd_bus_message_enter_container(reply, CChar(bitPattern: type), contents)
            try check(entered)
            return entered > 0
        }
        func readUInt32() throws(DBusError) -> UInt32 {
            var value: UInt32 = 0
            let read = sd_bus_message_read_basic(reply, CChar(bitPattern: UInt8(ascii: "u")), &value)
            guard read > 0 else { throw .system(operation: operation, errno: read < 0 ? -read : EBADMSG) }
            return value
        }
        var credentials = DBusPeerCredentials(userID: nil, processID: nil, processFD: nil)
        guard try enter(UInt8(ascii: "a"), "{sv}") else { throw .system(operation: operation, errno: EBADMSG) }
        var entries = 0
        while try enter(UInt8(ascii: "e"), "sv") {
            entries += 1
            guard entries <= 64 else { throw .system(operation: operation, errno: E2BIG) }
            var keyPointer: UnsafePointer<CChar>?
            let readKey = sd_bus_message_read_basic(reply, CChar(bitPattern: UInt8(ascii: "s")), &keyPointer)
            guard readKey > 0, let keyPointer else { throw .system(operation: operation, errno: readKey < 0 ? -readKey : EBADMSG) }
            let key = String(cString: keyPointer)
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            try check(sd_bus_message_peek_type(reply, &type, &contents))
            let signature = contents.map { String(cString: $0) } ?? ""
            switch (key, signature) {
            case ("UnixUserID", "u"), ("ProcessID", "u"):
                guard try enter(UInt8(ascii: "v"), signature) else { throw .system(operation: operation, errno: EBADMSG) }
                let value = try readUInt32()
                if key == "UnixUserID" { credentials.userID = value } else { credentials.processID = value }
                try check(sd_bus_message_exit_container(reply))
            case ("ProcessFD", "h"):
                guard try enter(UInt8(ascii: "v"), signature) else { throw .system(operation: operation, errno: EBADMSG) }
                var descriptor: Int32 = -1
                let read = sd_bus_message_read_basic(reply, CChar(bitPattern: UInt8(ascii: "h")), &descriptor)
                guard read > 0, descriptor >= 0 else { throw .system(operation: operation, errno: read < 0 ? -read : EBADMSG) }
                // The message owns `descriptor` and closes it when released: keep a close-on-exec copy.
                let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
                guard copy >= 0 else { throw .system(operation: "duplicating ProcessFD", errno: errno) }
                credentials.processFD = DBusFileDescriptor(owning: copy)
                try check(sd_bus_message_exit_container(reply))
            default:
                try check(sd_bus_message_skip(reply, "v"))
            }
            try check(sd_bus_message_exit_container(reply))
        }
        try check(sd_bus_message_exit_container(reply))
        return credentials
    }

    /// A process-wide counter for ``DBusMethodCall/token``: a call of one connection is never found by another.
    static let nextToken = Atomic<UInt64>(1)
}

// MARK: Between the callers and the bus thread

/// A signal to send, as queued.
struct DBusOutgoingSignal: Sendable {
    /// The object path it is emitted on.
    var path: String
    /// Its interface.
    var interface: String
    /// Its name.
    var member: String
    /// Its arguments.
    var arguments: [DBusValue]
    /// The one connection it is sent to, nil for a broadcast.
    var destination: String?
}

/// A method call to make, as queued.
struct DBusOutgoingCall: Sendable {
    /// The peer called.
    var destination: String
    /// The object path called.
    var path: String
    /// The interface of the method.
    var interface: String
    /// The method's name.
    var member: String
    /// Its arguments.
    var arguments: [DBusValue]
    /// How long the reply may take.
    var timeout: Duration
}

/// Work other threads queue for the bus thread.
enum DBusServerWork: Sendable {
    /// Answer the call `token` with `values`.
    case reply(token: UInt64, values: [DBusValue])
    /// Answer the call `token` with an error.
    case replyError(token: UInt64, name: String, message: String)
    /// Send a signal; `done` (on the bus thread) says whether sd-bus took it.
    case signal(DBusOutgoingSignal, done: (@Sendable (Result<Void, DBusError>) -> Void)?)
    /// Make a call; `onReply` runs on the bus thread with the reply message (valid only during the call) or why
    /// there is none.
    case call(DBusOutgoingCall, onReply: @Sendable (Result<OpaquePointer, DBusError>) -> Void)

    /// Completes this work as failed because the connection is closed (replies are dropped: the bus daemon answers
    /// their callers when the connection closes).
    func failDisconnected() {
        switch self {
        case .reply, .replyError: break
        case .signal(_, let done): done?(.failure(.disconnected))
        case .call(_, let onReply): onReply(.failure(.disconnected))
        }
    }
}

/// What callers and the bus thread share: the queue of work, whether to stop, and the eventfd that wakes the thread.
final class DBusServerShared: Sendable {
    /// The queue, under ``state``'s lock.
    struct State {
        /// Work not taken by the bus thread yet.
        var work: [DBusServerWork] = []
        /// Set by ``requestStop()``: the bus thread stops after the work queued before.
        var stopRequested = false
        /// Set by the bus thread when it no longer takes work: ``submit(_:)`` then refuses.
        var closed = false
    }

    /// The queue and flags; every access holds this lock.
    let state = Mutex(State())
    /// The eventfd written to wake the bus thread; closed at deinit, after the thread and every handle let go.
    let wakeDescriptor: Int32
    /// ``DBusServerConnection/answerOnBusThread(_:)``'s handler. Boxed: an optional function type held in a
    /// generic `Mutex` is re-abstracted on every `inout` access, and each read through `withLock` would wrap the
    /// stored function in two more thunks (seen growing without bound under perf).
    let inlineHandler = Mutex<DBusInlineHandlerBox?>(nil)

    /// Shares `wakeDescriptor` (an eventfd, owned from now on).
    init(wakeDescriptor: Int32) {
        self.wakeDescriptor = wakeDescriptor
    }

    deinit {
        _ = Glibc.close(wakeDescriptor)
    }

    /// Queues `work` and wakes the bus thread; false (nothing queued) once the thread no longer takes work.
    func submit(_ work: DBusServerWork) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.work.append(work)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    /// Asks the bus thread to stop.
    func requestStop() {
        state.withLock { $0.stopRequested = true }
        wake()
    }

    /// Wakes the bus thread (adds 1 to the eventfd's counter; it cannot overflow in practice).
    func wake() {
        _ = eventfd_write(wakeDescriptor, 1)
    }

    /// The work queued so far, and whether to stop after it (bus thread).
    func take() -> (work: [DBusServerWork], stop: Bool) {
        state.withLock { state in
            let work = state.work
            state.work = []
            return (work, state.stopRequested)
        }
    }

    /// Refuses work from now on, and returns what was queued but not taken (bus thread, when it stops).
    func markClosed() -> [DBusServerWork] {
        state.withLock { state in
            state.closed = true
            let work = state.work
            state.work = []
            return work
        }
    }
}

/// An inline handler, boxed so that it keeps one representation in the `Mutex` that holds it.
struct DBusInlineHandlerBox: Sendable {
    /// The handler.
    let answer: DBusInlineHandler
}

/// The streams' ends the bus thread yields to.
struct DBusServerSinks: Sendable {
    /// ``DBusServerConnection/calls``.
    let calls: AsyncStream<DBusMethodCall>.Continuation
    /// ``DBusServerConnection/events``.
    let events: AsyncStream<DBusServerEvent>.Continuation
    /// ``DBusServerConnection/peerDepartures``.
    let departures: AsyncStream<DBusNameOwnerChange>.Continuation

    /// Finishes every stream.
    func finish() {
        calls.finish()
        events.finish()
        departures.finish()
    }
}

/// How the bus thread's start went: the unique name, or why it failed; `done` is signalled once it is set.
final class DBusServerStartup: Sendable {
    /// The outcome, set once by the bus thread before ``done`` is signalled.
    let outcome = Mutex<Result<String, DBusError>?>(nil)
    /// Signalled when ``outcome`` is set.
    let done = DispatchSemaphore(value: 0)

    /// Records `result` and wakes the waiting initializer.
    func finish(_ result: Result<String, DBusError>) {
        outcome.withLock { $0 = result }
        done.signal()
    }
}

// MARK: The bus thread

/// The bus thread's own state: the sd-bus connection and the calls waiting for replies. Used only on that thread
/// (sd-bus callbacks reach it through their userdata), hence not `Sendable`.
final class DBusServerLoop {
    /// A call delivered and not answered yet.
    struct Pending {
        /// The call's message, referenced until answered or released.
        let message: OpaquePointer
        /// Who called, for the per-sender count.
        let sender: String
        /// When the call arrived, for ``DBusServerLimits/unansweredCallLifetime``.
        let received: ContinuousClock.Instant
    }

    /// The connection, owned: closed and released by ``shutdown()``.
    let bus: OpaquePointer
    /// The queue shared with callers.
    let shared: DBusServerShared
    /// The limits on peers.
    let limits: DBusServerLimits
    /// Where calls and events go.
    let sinks: DBusServerSinks
    /// The filter and match slots, released at shutdown.
    var slots: [OpaquePointer] = []
    /// Calls delivered and not answered, by token.
    var pending: [UInt64: Pending] = [:]
    /// How many of ``pending`` each sender has.
    var pendingPerSender: [String: Int] = [:]
    /// Calls this connection made, by the cookie their reply will carry.
    var outgoing: [UInt64: @Sendable (Result<OpaquePointer, DBusError>) -> Void] = [:]
    /// When to look next for calls past their lifetime.
    var nextExpiryCheck = ContinuousClock.now

    /// A loop for `bus`, which it owns from now on.
    init(bus: OpaquePointer, shared: DBusServerShared, limits: DBusServerLimits, sinks: DBusServerSinks) {
        self.bus = bus
        self.shared = shared
        self.limits = limits
        self.sinks = sinks
    }

    /// The bus thread's body: connects, reports to the initializer, serves until told to stop or disconnected,
    /// then releases everything.
    static func run(
        address: String, timeout: Duration, limits: DBusServerLimits, shared: DBusServerShared,
        sinks: DBusServerSinks, startup: DBusServerStartup
    ) {
        let opened: (bus: OpaquePointer, uniqueName: String)
        do throws(DBusError) {
            opened = try DBusConnection.openBus(address: address, timeout: timeout)
        } catch {
            for work in shared.markClosed() { work.failDisconnected() }
            sinks.finish()
            startup.finish(.failure(error))
            return
        }
        let loop = DBusServerLoop(bus: opened.bus, shared: shared, limits: limits, sinks: sinks)
        do throws(DBusError) {
            try loop.install()
        } catch {
            loop.shutdown(flushing: false)
            startup.finish(.failure(error))
            return
        }
        startup.finish(.success(opened.uniqueName))
        loop.serve()
        loop.shutdown(flushing: true)
    }

    /// Installs the filter that receives every message, and the bus's match rule for `NameOwnerChanged` of
    /// connections leaving (`arg2=''`; AddMatch waits for the bus, within the method-call timeout).
    func install() throws(DBusError) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        var slot: OpaquePointer?
        let filtered = sd_bus_add_filter(
            bus, &slot,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                return Unmanaged<DBusServerLoop>.fromOpaque(userdata).takeUnretainedValue().filter(message)
            }, userdata)
        guard filtered >= 0, let filter = slot else { throw DBusError.fromReturn(filtered, operation: "sd_bus_add_filter") }
        slots.append(filter)
        slot = nil
        let rule =
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
            + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''"
        let matched = sd_bus_add_match(
            bus, &slot, rule,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                Unmanaged<DBusServerLoop>.fromOpaque(userdata).takeUnretainedValue().nameOwnerChanged(message)
                return 0
            }, userdata)
        guard matched >= 0, let match = slot else { throw DBusError.fromReturn(matched, operation: "AddMatch NameOwnerChanged") }
        slots.append(match)
    }

    /// Serves until ``DBusServerShared/requestStop()`` or the connection fails: queued work, then every message
    /// sd-bus has (at most 256 before looking at the queue again), then `poll` on the bus and the eventfd.
    func serve() {
        while true {
            let (work, stop) = shared.take()
            for item in work { perform(item) }
            if stop { return }
            expireUnansweredCalls()
            var processed = 0
            while processed < 256 {
                let result = sd_bus_process(bus, nil)
                if result < 0 {
                    sinks.events.yield(.disconnected)
                    return
                }
                if result == 0 { break }
                processed += 1
            }
            if processed == 256 { continue }
            guard sd_bus_is_open(bus) > 0 else {
                sinks.events.yield(.disconnected)
                return
            }
            let descriptor = sd_bus_get_fd(bus)
            let events = sd_bus_get_events(bus)
            guard descriptor >= 0, events >= 0 else {
                sinks.events.yield(.disconnected)
                return
            }
            var descriptors = [
                pollfd(fd: descriptor, events: Int16(truncatingIfNeeded: events), revents: 0),
                pollfd(fd: shared.wakeDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            let polled = poll(&descriptors, 2, pollTimeout())
            if polled < 0 && errno != EINTR && errno != EAGAIN {
                sinks.events.yield(.disconnected)
                return
            }
            if descriptors[1].revents != 0 {
                var counter: eventfd_t = 0
                _ = eventfd_read(shared.wakeDescriptor, &counter)
            }
        }
    }

    /// Milliseconds `poll` may sleep: until sd-bus's next timeout (a call's reply deadline, rounded up) or the next
    /// look for expired calls, whichever comes first; -1 for no limit.
    func pollTimeout() -> Int32 {
        var milliseconds: UInt64 = UInt64.max
        var deadline: UInt64 = 0
        if sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec / 1000)
            milliseconds = deadline <= nowMicroseconds ? 0 : (deadline - nowMicroseconds + 999) / 1000
        }
        if !pending.isEmpty {
            let untilCheck = ContinuousClock.now.duration(to: nextExpiryCheck)
            let checkMilliseconds = untilCheck <= .zero ? 0 : UInt64(untilCheck / .milliseconds(1)) + 1
            milliseconds = min(milliseconds, checkMilliseconds)
        }
        return milliseconds == UInt64.max ? -1 : Int32(min(milliseconds, UInt64(Int32.max)))
    }

    /// Stops: sends what was queued (at most a second when `flushing`), fails what cannot be done, releases every
    /// waiting call, finishes the streams and closes the connection.
    func shutdown(flushing: Bool) {
        let remaining = shared.markClosed()
        for item in remaining { item.failDisconnected() }
        if flushing { flush(until: ContinuousClock.now + .seconds(1)) }
        for (_, call) in pending { sd_bus_message_unref(call.message) }
        pending.removeAll()
        pendingPerSender.removeAll()
        let waiting = outgoing
        outgoing.removeAll()
        for (_, onReply) in waiting { onReply(.failure(.disconnected)) }
        for slot in slots { sd_bus_slot_unref(slot) }
        slots.removeAll()
        sinks.finish()
        // Not sd_bus_flush_close_unref: flushing waits, unbounded, for the peer to read.
        sd_bus_close_unref(bus)
    }

    /// Writes what sd-bus has queued, until `deadline`.
    func flush(until deadline: ContinuousClock.Instant) {
        while true {
            var queued: UInt64 = 0
            guard sd_bus_get_n_queued_write(bus, &queued) >= 0, queued > 0 else { return }
            let processed = sd_bus_process(bus, nil)
            if processed < 0 { return }
            if processed > 0 { continue }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return }
            let waited = sd_bus_wait(bus, DBusConnection.microseconds(remaining))
            if waited < 0 && waited != -EINTR { return }
        }
    }

    // MARK: Work from callers

    /// Does one piece of queued work.
    func perform(_ work: DBusServerWork) {
        switch work {
        case .reply(let token, let values):
            guard let call = takePending(token) else { return }
            defer { sd_bus_message_unref(call.message) }
            sendReply(to: call.message, values)
        case .replyError(let token, let name, let message):
            guard let call = takePending(token) else { return }
            defer { sd_bus_message_unref(call.message) }
            sendError(to: call.message, name: name, message: message)
        case .signal(let signal, let done):
            let result = send(signal)
            done?(result)
        case .call(let call, let onReply):
            start(call, onReply: onReply)
        }
    }

    /// Removes the pending call `token`, with its sender's count; its message reference passes to the caller.
    func takePending(_ token: UInt64) -> Pending? {
        guard let call = pending.removeValue(forKey: token) else { return nil }
        let left = (pendingPerSender[call.sender] ?? 1) - 1
        pendingPerSender[call.sender] = left > 0 ? left : nil
        return call
    }

    /// Answers `call` with `values`, or `Failed` when they cannot be sent.
    func sendReply(to call: OpaquePointer, _ values: [DBusValue]) {
        var built: OpaquePointer?
        let made = sd_bus_message_new_method_return(call, &built)
        guard made >= 0, let reply = built else {
            sendError(to: call, name: DBusErrorName.failed, message: "the reply could not be built")
            return
        }
        defer { sd_bus_message_unref(reply) }
        do throws(DBusError) {
            for value in values { try value.append(to: reply) }
        } catch {
            sendError(to: call, name: DBusErrorName.failed, message: "the reply could not be sent: \(error.message)")
            return
        }
        _ = sd_bus_send(bus, reply, nil)
    }

    /// Answers `call` with the error `name` (`Failed` when `name` is not a valid error name) and `message`.
    func sendError(to call: OpaquePointer, name: String, message: String) {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        let valid = DBusErrorName.isValid(name) ? name : DBusErrorName.failed
        _ = sd_bus_error_set(&error, valid, message)
        guard sd_bus_error_is_set(&error) > 0 else { return }
        // Does nothing for a call that expects no reply.
        _ = sd_bus_reply_method_error(call, &error)
    }

    /// Builds and queues `signal`.
    func send(_ signal: DBusOutgoingSignal) -> Result<Void, DBusError> {
        let operation = "sending \(signal.interface).\(signal.member)"
        for name in [signal.path, signal.interface, signal.member, signal.destination ?? ""] where name.utf8.contains(0) {
            return .failure(.invalidArgument("a name contains a NUL byte"))
        }
        var built: OpaquePointer?
        let made = sd_bus_message_new_signal(bus, &built, signal.path, signal.interface, signal.member)
        guard made >= 0, let message = built else {
            if made == -EINVAL { return .failure(.invalidArgument("\(signal.path) \(signal.interface).\(signal.member) is not a valid signal")) }
            return .failure(DBusError.fromReturn(made, operation: operation))
        }
        defer { sd_bus_message_unref(message) }
        if let destination = signal.destination, sd_bus_message_set_destination(message, destination) < 0 {
            return .failure(.invalidArgument("\(destination) is not a valid destination"))
        }
        do throws(DBusError) {
            for argument in signal.arguments { try argument.append(to: message) }
        } catch {
            return .failure(error)
        }
        let sent = sd_bus_send(bus, message, nil)
        return sent >= 0 ? .success(()) : .failure(DBusError.fromReturn(sent, operation: operation))
    }

    /// Sends `call` without waiting (`sd_bus_call_async`); `onReply` runs when its reply, an error or the timeout
    /// comes, matched by cookie in ``reply(_:)``.
    func start(_ call: DBusOutgoingCall, onReply: @escaping @Sendable (Result<OpaquePointer, DBusError>) -> Void) {
        let operation = "\(call.interface).\(call.member)"
        for name in [call.destination, call.path, call.interface, call.member] where name.utf8.contains(0) {
            onReply(.failure(.invalidArgument("a name contains a NUL byte")))
            return
        }
        var built: OpaquePointer?
        let made = sd_bus_message_new_method_call(bus, &built, call.destination, call.path, call.interface, call.member)
        guard made >= 0, let message = built else {
            onReply(
                .failure(
                    made == -EINVAL
                        ? .invalidArgument("\(call.destination) \(call.path) \(operation) is not a valid method call")
                        : DBusError.fromReturn(made, operation: operation)))
            return
        }
        defer { sd_bus_message_unref(message) }
        do throws(DBusError) {
            for argument in call.arguments { try argument.append(to: message) }
        } catch {
            onReply(.failure(error))
            return
        }
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        // A floating slot (nil): sd-bus frees it after the reply, or with the connection.
        let sent = sd_bus_call_async(
            bus, nil, message,
            { reply, userdata, _ in
                guard let reply, let userdata else { return 0 }
                Unmanaged<DBusServerLoop>.fromOpaque(userdata).takeUnretainedValue().reply(reply)
                return 1
            }, userdata, DBusConnection.microseconds(call.timeout))
        guard sent >= 0 else {
            onReply(.failure(DBusError.fromReturn(sent, operation: operation)))
            return
        }
        var cookie: UInt64 = 0
        guard sd_bus_message_get_cookie(message, &cookie) >= 0 else {
            onReply(.failure(.system(operation: operation, errno: EBADMSG)))
            return
        }
        outgoing[cookie] = onReply
    }

    /// A reply to a call this connection made (sd-bus's own timeouts and disconnections come as synthetic errors).
    func reply(_ reply: OpaquePointer) {
        var cookie: UInt64 = 0
        guard sd_bus_message_get_reply_cookie(reply, &cookie) >= 0, let onReply = outgoing.removeValue(forKey: cookie) else { return }
        if sd_bus_message_is_method_error(reply, nil) > 0 {
            let error = sd_bus_message_get_error(reply)
            let name = error?.pointee.name.map { String(cString: $0) } ?? DBusErrorName.failed
            let message = error?.pointee.message.map { String(cString: $0) } ?? ""
            // sd-bus answers a call whose reply did not come in time with a NoReply error of its own (no sender).
            if name == "org.freedesktop.DBus.Error.NoReply", sd_bus_message_get_sender(reply) == nil {
                onReply(.failure(.timedOut(operation: "a D-Bus call")))
            } else {
                onReply(.failure(.remote(name: name, message: message)))
            }
            return
        }
        onReply(.success(reply))
    }

    // MARK: Messages from peers

    /// Every message sd-bus reads passes here first. Method calls (but `org.freedesktop.DBus.Peer`'s, which sd-bus
    /// answers) are taken: 1 tells sd-bus not to answer them itself. Everything else goes on to sd-bus's matches
    /// and replies (0).
    func filter(_ message: OpaquePointer) -> Int32 {
        if sd_bus_message_is_method_call(message, nil, nil) > 0 {
            if let interface = sd_bus_message_get_interface(message), strcmp(interface, "org.freedesktop.DBus.Peer") == 0 {
                return 0
            }
            receive(message)
            return 1
        }
        if sd_bus_message_is_signal(message, "org.freedesktop.DBus", "NameLost") > 0, isFromTheBus(message) {
            if let name = try? DBusValue.readAll(from: message, limits: DBusReadLimits(maximumValues: 4, maximumDepth: 1)).first?.string {
                sinks.events.yield(.nameLost(name))
            }
        }
        return 0
    }

    /// Whether the bus daemon itself sent `message`. Peers cannot: the daemon sets every message's sender to the
    /// sending connection's unique name. (sd-bus's match on `sender='org.freedesktop.DBus'` cannot tell, since it
    /// cannot know who owns a well-known name, so it is checked here.)
    func isFromTheBus(_ message: OpaquePointer) -> Bool {
        guard let sender = sd_bus_message_get_sender(message) else { return false }
        return strcmp(sender, "org.freedesktop.DBus") == 0
    }

    /// A method call from a peer: refused when over the limits or unreadable, else kept and delivered.
    func receive(_ message: OpaquePointer) {
        let expectsReply = sd_bus_message_get_expect_reply(message) > 0
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        if expectsReply {
            let senderCount = pendingPerSender[sender] ?? 0
            guard senderCount < limits.maximumPendingCallsPerSender, pending.count < limits.maximumPendingCalls else {
                sendError(to: message, name: DBusErrorName.limitsExceeded, message: "too many calls are waiting for a reply")
                return
            }
        }
        let arguments: [DBusValue]
        do throws(DBusError) {
            arguments = try DBusValue.readAll(from: message, limits: limits.reading)
        } catch {
            if expectsReply { sendError(to: message, name: DBusErrorName.invalidArgs, message: "the arguments cannot be read: \(error.message)") }
            return
        }
        func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
        let token = DBusServerConnection.nextToken.add(1, ordering: .relaxed).oldValue
        let call = DBusMethodCall(
            sender: sender, path: text(sd_bus_message_get_path(message)) ?? "/",
            interface: text(sd_bus_message_get_interface(message)),
            member: text(sd_bus_message_get_member(message)) ?? "",
            signature: text(sd_bus_message_get_signature(message, 1)) ?? "",
            arguments: arguments, noReplyExpected: !expectsReply, token: token)
        if let handler = shared.inlineHandler.withLock({ $0 }), let answer = handler.answer(call) {
            guard expectsReply else { return }
            switch answer {
            case .reply(let values): sendReply(to: message, values)
            case .error(let name, let text): sendError(to: message, name: name, message: text)
            }
            return
        }
        if expectsReply {
            pending[token] = Pending(message: sd_bus_message_ref(message), sender: sender, received: .now)
            pendingPerSender[sender, default: 0] += 1
        }
        switch sinks.calls.yield(call) {
        case .enqueued: break
        case .dropped, .terminated:
            // Nobody will answer it: say so now rather than at the caller's timeout.
            if let kept = takePending(token) {
                sendError(to: kept.message, name: DBusErrorName.failed, message: "the server is not taking calls")
                sd_bus_message_unref(kept.message)
            }
        @unknown default: break
        }
    }

    /// `NameOwnerChanged` from the bus daemon: a connection that left is reported on ``DBusServerSinks/departures``.
    func nameOwnerChanged(_ message: OpaquePointer) {
        guard isFromTheBus(message),
            let values = try? DBusValue.readAll(from: message, limits: DBusReadLimits(maximumValues: 8, maximumDepth: 1)),
            values.count == 3, let name = values[0].string, let oldOwner = values[1].string, let newOwner = values[2].string,
            name.hasPrefix(":"), newOwner.isEmpty
        else { return }
        sinks.departures.yield(DBusNameOwnerChange(name: name, oldOwner: oldOwner, newOwner: newOwner))
    }

    /// Answers `Failed` for the calls waiting longer than their lifetime, and forgets them (looked at once a second).
    func expireUnansweredCalls() {
        let now = ContinuousClock.now
        guard now >= nextExpiryCheck else { return }
        nextExpiryCheck = now + .seconds(1)
        let expired = pending.filter { now - $0.value.received >= limits.unansweredCallLifetime }.map(\.key)
        for token in expired {
            guard let call = takePending(token) else { continue }
            sendError(to: call.message, name: DBusErrorName.failed, message: "the call was not answered in time")
            sd_bus_message_unref(call.message)
        }
    }
}
