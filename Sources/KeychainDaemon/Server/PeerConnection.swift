import CKeychainLinux
import Foundation
import KeychainCore
import KeychainProtocol
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What every connection of one server shares.
package struct ServerContext: Sendable {
    package let dispatcher: RequestDispatcher
    package let budget: ResourceBudget
    package let tracker: ConnectionTracker
    package let logger: Logger

    package init(dispatcher: RequestDispatcher, budget: ResourceBudget, tracker: ConnectionTracker, logger: Logger) {
        self.dispatcher = dispatcher
        self.budget = budget
        self.tracker = tracker
        self.logger = logger
    }

    var limits: ConnectionLimits { budget.limits }
}

/// One client connection, served on a thread of its own from accept to close: the handshake that pins who the
/// connection belongs to, then requests in order, each answered before the next is read.
///
/// **Who is asking, per request.** The connection belongs to the process that connected (`SO_PEERCRED`), held by a
/// pidfd the kernel took at connect (`SO_PEERPIDFD`), so a recycled pid can never stand in for it. keychaind reads
/// that process's identity from `/proc` *before* it greets the client, and only if nothing was sent before the
/// greeting; the kernel attaches the sender's pid and uid to every message (`SO_PASSCRED`, `SCM_CREDENTIALS`), and
/// every receive must come from that same, still running, untraced process. So:
/// - a socket inherited across `fork`, passed with `SCM_RIGHTS` or taken with `pidfd_getfd` sends as another process
///   and the connection is closed;
/// - a process that connects and then `exec`s a trusted program is identified either before the `exec` (and keeps
///   that identity) or after it, and then anything it sent before the `exec` is still queued when keychaind checks
///   (the connection is refused), while after it only the trusted program's own code runs in that process;
/// - the identity read from `/proc` is taken between two looks at the executable, which must agree;
/// - a process that may run code not its program's (loader variables, a tracer, an executable deleted or writable by
///   others) is identified as untrusted: no registered or admin identity, a private group apart; a tracer that
///   attaches after the handshake closes the connection.
/// This is what Apple's audit token with its pid version gives securityd, built from the pieces Linux has.
package enum PeerConnection {
    /// Admits the accepted socket `fd` within the limits, on the accepting thread, before any thread is started for
    /// it: the peer's uid from the kernel, then ``ResourceBudget/admit(uid:)``. A connection over a limit is told why
    /// (without waiting on a client that does not read) and closed. Returns the peer of an admitted connection,
    /// which ``serve(_:peer:context:)`` then owns; nil when `fd` is closed.
    package static func admit(_ fd: Int32, context: ServerContext) -> ckeychain_peer_credentials? {
        var peer = ckeychain_peer_credentials()
        guard ckeychain_peer_credentials_of(fd, &peer) == 0 else {
            _ = close(fd)
            return nil
        }
        if let reason = context.budget.admit(uid: peer.uid) {
            context.logger.notice("refused connection", metadata: ["pid": "\(peer.pid)", "uid": "\(peer.uid)", "reason": "\(reason)"])
            let error = KeychainError(code: .notAvailable, message: "\(reason); close some of them and try again.")
            let frame = Frame(id: 0, body: .response(.failure(error))).encoded
            _ = frame.withUnsafeBytes { raw in Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            _ = close(fd)
            return nil
        }
        return peer
    }

    /// Admits and serves `fd` on the calling thread: what the accepting thread and the connection's thread do, in
    /// one call.
    package static func serve(_ fd: Int32, context: ServerContext) {
        guard let peer = admit(fd, context: context) else { return }
        serve(fd, peer: peer, context: context)
    }

    /// Serves the admitted socket `fd` of `peer` until the client leaves, breaks the protocol, or the server shuts
    /// down; then closes it and gives back its place in the budget. Blocking: runs on the connection's own thread.
    package static func serve(_ fd: Int32, peer: ckeychain_peer_credentials, context: ServerContext) {
        let (budget, tracker) = (context.budget, context.tracker)
        defer { budget.release(uid: peer.uid) }
        guard tracker.opened(fd) else {
            _ = close(fd)
            return
        }
        defer { tracker.close(fd) }
        _ = ckeychain_set_send_timeout(fd, milliseconds(context.limits.sendTimeout))
        var pidfd = ckeychain_peer_pidfd(fd)
        if pidfd < 0 { pidfd = ckeychain_pidfd_open(peer.pid) }
        guard pidfd >= 0 else {
            refuse(fd, KeychainError(code: .missingEntitlement, message: "keychaind cannot hold on to process \(peer.pid) (no pidfd: \(String(cString: strerror(errno)))), so it refuses it."))
            return
        }
        defer { _ = close(pidfd) }
        // Opened before the handshake, whose check that the pidfd's process still runs comes after: so this is that
        // process's file, and reading it fails once the process is gone, whoever gets its pid.
        let status = context.dispatcher.authority.inspector.openStatus(of: peer.pid)
        guard status >= 0 else {
            refuse(fd, KeychainError(code: .missingEntitlement, message: "keychaind cannot read /proc/\(peer.pid)/status (\(String(cString: strerror(errno)))), so it refuses process \(peer.pid)."))
            return
        }
        defer { _ = close(status) }
        let session: Session
        do {
            session = try handshake(fd, peer: peer, pidfd: pidfd, context: context)
        } catch {
            context.logger.notice("refused connection", metadata: ["pid": "\(peer.pid)", "uid": "\(peer.uid)", "reason": "\(error.message)"])
            refuse(fd, error)
            return
        }
        var served = Served(fd: fd, peer: peer, pidfd: pidfd, status: status, session: session, context: context)
        served.run()
    }

    /// Identifies the process that connected, checks that it sent nothing yet, and greets it. The order matters:
    /// the identity is read first, then the socket is found empty, so every byte that follows was sent after the
    /// identity was read.
    static func handshake(
        _ fd: Int32, peer: ckeychain_peer_credentials, pidfd: Int32,
        context: ServerContext
    ) throws(KeychainError) -> Session {
        guard ckeychain_enable_passcred(fd) == 0 else {
            throw KeychainError(code: .internal, message: "keychaind cannot ask for its clients' credentials (\(String(cString: strerror(errno)))).")
        }
        let session = try context.dispatcher.authority.session(pid: peer.pid, uid: peer.uid)
        guard ckeychain_pidfd_is_running(pidfd) == 1 else {
            throw KeychainError(code: .missingEntitlement, message: "Process \(peer.pid) exited while keychaind identified it.")
        }
        let early = ckeychain_pending_bytes(fd)
        guard early == 0 else {
            throw KeychainError(
                code: .missingEntitlement,
                message:
                    "The client sent \(early < 0 ? "data" : "\(early) bytes") before keychaind greeted it; keychaind answers only requests sent after its greeting (a client of an older swift-keychain does this: install keychaind and its clients from the same release)."
            )
        }
        try send(fd, Frame.greeting.encoded)
        return session
    }

    /// Tells a client why its connection is refused (a failure frame with id 0, in place of the greeting).
    static func refuse(_ fd: Int32, _ error: KeychainError) {
        try? send(fd, Frame(id: 0, body: .response(.failure(error))).encoded)
    }

    /// Writes all of `bytes`, waiting at most the send timeout for a client that does not read.
    static func send(_ fd: Int32, _ bytes: [UInt8]) throws(KeychainError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw KeychainError(code: .io, message: "Writing to a client failed (\(String(cString: strerror(errno)))).")
            }
            offset += n
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(0, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

/// A connection after its handshake: reads, checks who sent each read, and answers each request in order.
private struct Served {
    let fd: Int32
    let peer: ckeychain_peer_credentials
    let pidfd: Int32
    /// The process's `/proc/PID/status`, open since before the handshake.
    let status: Int32
    let session: Session
    let context: ServerContext
    var frames = FrameAssembler()
    /// Bytes the frame in progress has reserved from the budget.
    var reserved = 0
    /// When the first byte of the frame in progress arrived.
    var frameStarted: ContinuousClock.Instant?
    /// The receive timeout set on the socket now (milliseconds, 0: none).
    var timeoutSet = 0

    init(fd: Int32, peer: ckeychain_peer_credentials, pidfd: Int32, status: Int32, session: Session, context: ServerContext) {
        self.fd = fd
        self.peer = peer
        self.pidfd = pidfd
        self.status = status
        self.session = session
        self.context = context
    }

    mutating func run() {
        defer { context.budget.unreserve(reserved) }
        var chunk = [UInt8](repeating: 0, count: context.limits.unreservedFrameBytes)
        while true {
            guard setReceiveTimeout() else {
                refuseFurther("A request took longer than \(context.limits.frameTimeout) to arrive; the connection is closed.")
                return
            }
            var sender = ckeychain_sender()
            var passed: Int32 = 0
            let n = chunk.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return ckeychain_receive(fd, base, UInt(raw.count), &sender, &passed)
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    refuseFurther("A request took longer than \(context.limits.frameTimeout) to arrive; the connection is closed.")
                }
                return
            }
            if n == 0 { return }  // the client is gone, or the server is shutting down
            if let problem = checkSender(sender, passed: passed) {
                context.logger.notice("closed a connection", metadata: ["pid": "\(peer.pid)", "reason": "\(problem)"])
                refuseFurther("keychaind closed this connection: \(problem).")
                return
            }
            if frames.isEmpty { frameStarted = .now }
            chunk.withUnsafeBytes { frames.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            do {
                guard try serveWholeFrames() else { return }
            } catch {
                context.logger.debug("connection closed", metadata: ["pid": "\(peer.pid)", "reason": "\(error.message)"])
                return
            }
        }
    }

    /// Answers every whole frame received; false when the connection should close.
    mutating func serveWholeFrames() throws(KeychainError) -> Bool {
        while let message = try frames.next() {
            context.budget.unreserve(reserved)
            reserved = 0
            frameStarted = frames.isEmpty ? nil : .now
            switch message {
            case .unsupportedVersion(let version, let id):
                context.logger.notice("closing a connection of another protocol version", metadata: ["pid": "\(peer.pid)", "version": "\(version)"])
                try? PeerConnection.send(fd, VersionMismatch.refusal(peerVersion: version, id: id))
                return false
            case .request(let id, let request):
                guard context.tracker.begin(fd) else { return false }
                let response = context.dispatcher.respond(to: request, session: session)
                try PeerConnection.send(fd, Frame(id: id, body: .response(response)).encoded)
                guard context.tracker.end(fd) else { return false }
            }
        }
        // A large frame in progress reserves its length before its body is read.
        if reserved == 0, let length = try frames.announcedLength(), length > context.limits.unreservedFrameBytes {
            guard context.budget.reserve(length) else {
                context.logger.notice("closed a connection", metadata: ["pid": "\(peer.pid)", "reason": "frames in flight over the limit"])
                refuseFurther("keychaind is already receiving \(context.limits.bufferedBytes >> 20) MiB of requests; send this one again later.")
                return false
            }
            reserved = length
            frames.reserveCapacity(length)
        }
        return true
    }

    /// Why this receive is not from the process the connection belongs to, or nil when it is.
    func checkSender(_ sender: ckeychain_sender, passed: Int32) -> String? {
        if passed > 0 { return "the client passed file descriptors, which keychaind never takes" }
        guard sender.present != 0 else { return "a message came without its sender's credentials" }
        guard sender.pid == peer.pid, sender.uid == peer.uid else {
            return "process \(sender.pid) (uid \(sender.uid)) sent on a connection that belongs to process \(peer.pid); a connection cannot be handed on"
        }
        guard ckeychain_pidfd_is_running(pidfd) == 1 else { return "the process that connected has exited" }
        // A process identified as untrusted already has nothing a tracer could take from it.
        guard session.identity.untrusted == nil else { return nil }
        switch context.dispatcher.authority.inspector.tracer(status: status) {
        case .some(0): return nil
        case .some(let tracer): return "process \(peer.pid) is being traced by process \(tracer) since keychaind identified it"
        case .none: return "keychaind cannot read the state of process \(peer.pid)"
        }
    }

    /// Sets the receive timeout for what comes next: none between frames, the rest of the frame's time inside one.
    /// False when the frame in progress is already out of time.
    mutating func setReceiveTimeout() -> Bool {
        var wanted = 0
        if let frameStarted {
            let left = context.limits.frameTimeout - (ContinuousClock.now - frameStarted)
            guard left > .zero else { return false }
            wanted = max(1, PeerConnection.milliseconds(left))
        }
        if wanted != timeoutSet {
            _ = ckeychain_set_receive_timeout(fd, wanted)
            timeoutSet = wanted
        }
        return true
    }

    /// Tells the client why nothing more will be answered (a failure frame with id 0).
    func refuseFurther(_ message: String) {
        PeerConnection.refuse(fd, KeychainError(code: .notAvailable, message: message))
    }
}
