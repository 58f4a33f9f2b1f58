import CKeychainLinux
import Foundation
import KeychainCore
import KeychainProtocol
import KeychainTestSupport
import Logging
import Testing
@testable import KeychainDaemon

#if canImport(Glibc)
import Glibc
#endif

/// keychaind's connection handling (handshake, per-message credentials, frame assembly, limits, dispatch) on real
/// sockets: each test connection is a socket pair whose one end is served on a thread of this process exactly as
/// keychaind serves an accepted socket, with this test process as the peer, on a real keychain in a temporary folder.
@Suite struct ConnectionTests {
    final class Fixture: @unchecked Sendable {
        let home: String
        let engine: KeychainEngine
        let dispatcher: RequestDispatcher
        let session: Session
        let tracker = ConnectionTracker()
        let context: ServerContext

        init(limits: ConnectionLimits = .standard) throws {
            home = FileManager.default.temporaryDirectory.appendingPathComponent("connection-\(UUID().uuidString.prefix(8))").path
            engine = try KeychainEngine(location: KeychainLocation(home: home))
            let logger = Logger(label: "connection-test")
            let authority = Authority(engine: engine, adminToolPath: "/nonexistent/security", logger: logger)
            dispatcher = RequestDispatcher(authority: authority, logger: logger)
            session = try authority.session(pid: getpid(), uid: getuid())
            context = ServerContext(dispatcher: dispatcher, budget: ResourceBudget(limits: limits), tracker: tracker, logger: logger)
        }

        deinit {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: home)
        }

        /// A socket pair whose server end is served as keychaind serves an accepted connection; the client end.
        /// With `greeted`, the greeting has been read.
        func connect(greeted: Bool = true, before: [UInt8] = []) throws -> TestClient {
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                throw TestProcessError("socketpair failed")
            }
            let client = TestClient(fd: pair[0])
            if !before.isEmpty { try client.send(before) }
            let (served, context) = (pair[1], self.context)
            Thread.detachNewThread { PeerConnection.serve(served, context: context) }
            if greeted {
                let greeting = try client.frames(1)
                guard greeting.count == 1, greeting[0].id == 0, case .response(.done) = greeting[0].body else {
                    throw TestProcessError("no greeting: \(greeting)")
                }
            }
            return client
        }

        /// The caller's own group: this test process is not registered, so it gets its executable's path.
        var group: String { session.identity.privateGroup }

        /// Stores one item in the caller's group (through the engine, as keychaind would).
        func seed(account: String, secret: String) throws {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = ["acct": .string(account), "svce": .string("pipeline")]
            q.valueData = Data(secret.utf8)
            _ = try engine.add(q, caller: AccessPolicy(groups: [group]))
        }
    }

    /// The client end of a test connection.
    final class TestClient: @unchecked Sendable {
        let fd: Int32
        private var pending: [UInt8] = []
        private(set) var closedByServer = false

        init(fd: Int32) { self.fd = fd }
        deinit { _ = close(fd) }

        func send(_ bytes: some Collection<UInt8>) throws {
            let array = Array(bytes)
            var offset = 0
            while offset < array.count {
                let n = array.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { throw TestProcessError("send failed: \(String(cString: strerror(errno)))") }
                offset += n
            }
        }

        /// Reads until `count` frames arrived, the server closed the connection, or `wait` passed with nothing new.
        func frames(_ count: Int, wait: Duration = .seconds(10)) throws -> [Frame] {
            var out: [Frame] = []
            while out.count < count {
                while pending.count >= 4 {
                    let length = try Frame.checkedLength(pending[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                    guard pending.count >= 4 + length else { break }
                    out.append(try Frame.decode(body: Array(pending[4..<4 + length])))
                    pending.removeFirst(4 + length)
                    if out.count == count { return out }
                }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, Int32(PeerConnection.milliseconds(wait))) == 1 else { return out }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 {
                    closedByServer = true
                    return out
                }
                pending += buffer[0..<n]
            }
            return out
        }

        /// Whether the server closed the connection (end of stream within `wait`), reading any frames before it.
        func isClosed(wait: Duration = .seconds(10)) throws -> Bool {
            _ = try frames(Int.max, wait: wait)
            return closedByServer
        }
    }

    static func find(_ account: String) -> KeychainRequest {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["acct": .string(account), "svce": .string("pipeline")]
        q.returns.data = true
        return .find(q, claim: nil)
    }

    static func secret(_ frame: Frame) -> String? {
        guard case .response(.items(let items)) = frame.body, let data = items.first?.data else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func refusal(_ frame: Frame?) -> KeychainError? {
        guard let frame, frame.id == 0, case .response(.failure(let error)) = frame.body else { return nil }
        return error
    }

    @Test func aRequestSplitAtEveryByteIsAnsweredOnce() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let bytes = Frame(id: 41, body: .request(Self.find("alice"))).encoded
        for split in stride(from: 1, to: bytes.count, by: 1) {
            let client = try f.connect()
            try client.send(bytes[..<split])
            #expect(try client.frames(1, wait: .milliseconds(20)).isEmpty, "nothing is answered before the frame is whole (split at \(split))")
            try client.send(bytes[split...])
            let answers = try client.frames(1)
            #expect(answers.count == 1)
            #expect(answers.first?.id == 41)
            #expect(answers.first.flatMap(Self.secret) == "s3cret")
        }
    }

    @Test func oneBytePerSendAndManyFramesPerSend() throws {
        let f = try Fixture()
        try f.seed(account: "a", secret: "one")
        try f.seed(account: "b", secret: "two")
        let stream =
            Frame(id: 1, body: .request(Self.find("a"))).encoded + Frame(id: 2, body: .request(Self.find("b"))).encoded
            + Frame(id: 3, body: .request(Self.find("missing"))).encoded
        let trickle = try f.connect()
        for byte in stream { try trickle.send([byte]) }
        let bulk = try f.connect()
        try bulk.send(stream)
        for client in [trickle, bulk] {
            let answers = try client.frames(3)
            #expect(answers.map(\.id) == [1, 2, 3])
            #expect(answers.prefix(2).compactMap(Self.secret) == ["one", "two"])
            guard case .response(.failure(let error))? = answers.last?.body else { Issue.record("no failure"); continue }
            #expect(error.status == .itemNotFound)
        }
    }

    @Test(arguments: [UInt32(0), 5, UInt32(Frame.maximumLength) + 1, .max])
    func anOversizedOrUndersizedLengthClosesTheConnection(_ length: UInt32) throws {
        let f = try Fixture()
        let client = try f.connect()
        try client.send([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), Frame.version, 1])
        #expect(try client.isClosed(), "closed as soon as the length is read, before any body arrives")
    }

    @Test func aMalformedBodyClosesOnlyThatConnection() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let bad = try f.connect()
        var bytes = Frame(id: 1, body: .request(Self.find("alice"))).encoded
        bytes[10] = 0xEE  // an unknown request tag
        try bad.send(bytes)
        #expect(try bad.isClosed())
        let good = try f.connect()
        try good.send(Frame(id: 2, body: .request(Self.find("alice"))).encoded)
        #expect(try good.frames(1).first.flatMap(Self.secret) == "s3cret")
    }

    @Test func aFrameCutOffByTheEndOfInputClosesTheConnection() throws {
        let f = try Fixture()
        let client = try f.connect()
        try client.send(Frame(id: 1, body: .request(Self.find("alice"))).encoded.dropLast(3))
        #expect(try client.frames(1, wait: .milliseconds(20)).isEmpty, "a partial frame waits for the rest")
        _ = shutdown(client.fd, Int32(SHUT_WR))
        #expect(try client.isClosed())
    }

    @Test func aShuttingDownDaemonAnswersNoNewRequest() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let open = try f.connect()
        try open.send(Frame(id: 1, body: .request(Self.find("alice"))).encoded)
        #expect(try open.frames(1).first.flatMap(Self.secret) == "s3cret", "answered before the shutdown")
        f.tracker.drain()
        #expect(try open.isClosed(), "an idle connection closes when the shutdown begins")
        // A connection made after it is closed before its greeting.
        let late = try f.connect(greeted: false)
        #expect(try late.isClosed())
    }

    @Test func aClientThatSendsAResponseIsClosed() throws {
        let f = try Fixture()
        let client = try f.connect()
        try client.send(Frame(id: 1, body: .response(.done)).encoded)
        #expect(try client.isClosed())
    }

    @Test(arguments: [UInt8(1), 2, 200])
    func aClientOfAnotherVersionIsToldWhyAndClosed(_ version: UInt8) throws {
        let f = try Fixture()
        let client = try f.connect()
        var bytes = Frame(id: 77, body: .request(.status)).encoded
        bytes[4] = version
        try client.send(bytes)
        var written: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            written += buffer[0..<n]
        }
        #expect(written == VersionMismatch.refusal(peerVersion: version, id: 77))
    }

    /// Requests sent together are answered in their order, a write before the read that follows it.
    @Test func answersKeepTheOrderOfRequests() throws {
        let f = try Fixture()
        let client = try f.connect()
        var add = ItemQuery(itemClass: .genericPassword)
        add.attributes = ["acct": .string("late"), "svce": .string("pipeline")]
        add.valueData = Data("written".utf8)
        add.returns.attributes = true
        try client.send(Frame(id: 1, body: .request(.add(add, claim: nil))).encoded + Frame(id: 2, body: .request(Self.find("late"))).encoded)
        let frames = try client.frames(2)
        #expect(frames.map(\.id) == [1, 2])
        guard case .response(.item(let stored))? = frames.first?.body else { Issue.record("the add was not answered with its item"); return }
        #expect(stored.attributes["agrp"] == .string(f.group), "an unregistered program writes to its private group")
        #expect(frames.last.flatMap(Self.secret) == "written", "the read saw the write before it")
    }

    /// keychaind works a connection's access policy out once, not per request: a registration made or removed while
    /// the connection stays open applies from its next request on, and a claim the registry refuses stays refused.
    @Test func registryChangesApplyToAnOpenConnectionsNextRequest() throws {
        let f = try Fixture()
        let client = try f.connect()
        let identity = f.session.identity
        guard case .executable(let path) = identity.program else { Issue.record("the test process is not an executable"); return }
        var id: UInt32 = 0
        func add(_ account: String, claim: [String]? = nil) throws -> KeychainResponse? {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = ["acct": .string(account), "svce": .string("registry")]
            q.valueData = Data("v".utf8)
            q.returns.attributes = true
            id += 1
            try client.send(Frame(id: id, body: .request(.add(q, claim: claim))).encoded)
            guard case .response(let response)? = try client.frames(1).first?.body else { return nil }
            return response
        }
        func group(_ response: KeychainResponse?) -> String? {
            guard case .item(let stored)? = response else { return nil }
            return stored.attributes["agrp"]?.stringValue
        }
        func refusal(_ response: KeychainResponse?) -> KeychainError.Code? {
            guard case .failure(let error)? = response else { return nil }
            return error.code
        }

        #expect(group(try add("before")) == f.group, "unregistered: the private group")
        #expect(refusal(try add("claimed", claim: ["TEAM.cache"])) == .missingEntitlement)

        let entry = AppRegistration(
            program: .executable(path: path, sha256: identity.executableSHA256), applicationIdentifier: nil,
            accessGroups: ["TEAM.cache"])
        try f.engine.updateAppRegistry { $0.register(entry) }
        #expect(group(try add("registered")) == "TEAM.cache", "the registration applies on the same connection")
        #expect(group(try add("claimed", claim: ["TEAM.cache"])) == "TEAM.cache")

        try f.engine.updateAppRegistry { $0.remove(named: path) }
        #expect(refusal(try add("claimed-again", claim: ["TEAM.cache"])) == .missingEntitlement, "removed: the claim is refused again")
        #expect(group(try add("after")) == f.group, "removed: the private group again")
    }

    // MARK: Attacks on the connection itself

    /// Python that takes descriptor argv[2] of process argv[1] (`pidfd_getfd`, syscall 438) as `fd`.
    static let takeConnection =
        "import ctypes,os,sys; libc=ctypes.CDLL(None,use_errno=True); fd=libc.syscall(438,os.pidfd_open(int(sys.argv[1])),int(sys.argv[2]),0); assert fd>=0, os.strerror(ctypes.get_errno()); "

    /// A request queued before keychaind greeted the connection may have been sent by another program than the one
    /// keychaind identifies (the client may `exec` in between), so it is never served: the connection is refused.
    @Test func aRequestSentBeforeTheGreetingIsRefusedUnserved() throws {
        let f = try Fixture()
        var add = ItemQuery(itemClass: .genericPassword)
        add.attributes = ["acct": .string("early"), "svce": .string("pipeline")]
        add.valueData = Data("x".utf8)
        let client = try f.connect(greeted: false, before: Frame(id: 1, body: .request(.add(add, claim: nil))).encoded)
        let frames = try client.frames(2)
        #expect(frames.count == 1)
        #expect(Self.refusal(frames.first)?.status == .missingEntitlement)
        #expect(try client.isClosed())
        var early = ItemQuery(itemClass: .genericPassword)
        early.attributes = ["acct": .string("early")]
        expectKeychainError(.itemNotFound, "the early add was not carried out") {
            try f.engine.find(early, caller: .unrestricted(defaultGroup: f.group))
        }
    }

    /// The connection belongs to the process that connected: another process that holds the socket (inherited,
    /// passed with SCM_RIGHTS, taken with pidfd_getfd) and sends on it gets the connection closed, unanswered.
    @Test func anotherProcessSendingOnTheConnectionClosesIt() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let client = try f.connect()
        let request = Frame(id: 5, body: .request(Self.find("alice"))).encoded
        // python3 takes this process's end of the connection with pidfd_getfd and sends the request itself.
        let run = try ProgramRun.run(
            "/usr/bin/python3",
            [
                "-c", Self.takeConnection + "os.write(fd, bytes.fromhex(sys.argv[3]))",
                "\(getpid())", "\(client.fd)", request.map { String(format: "%02x", $0) }.joined(),
            ],
            environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stderr)")
        let frames = try client.frames(2)
        #expect(frames.count == 1, "only the refusal, never the answer")
        #expect(Self.refusal(frames.first)?.message.contains("cannot be handed on") == true)
        #expect(try client.isClosed())
    }

    /// Descriptors passed to keychaind are closed, and the connection with them.
    @Test func passingDescriptorsClosesTheConnection() throws {
        let f = try Fixture()
        let client = try f.connect()
        let script = Self.takeConnection + "import socket,array; s=socket.socket(fileno=fd); s.sendmsg([bytes.fromhex(sys.argv[3])],[(socket.SOL_SOCKET,socket.SCM_RIGHTS,array.array('i',[0,1,2]))])"
        // Sent by another process too, so the refusal may name either reason; what matters is that nothing is served.
        let request = Frame(id: 6, body: .request(.status)).encoded
        let run = try ProgramRun.run(
            "/usr/bin/python3", ["-c", script, "\(getpid())", "\(client.fd)", request.map { String(format: "%02x", $0) }.joined()],
            environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stderr)")
        let frames = try client.frames(2)
        #expect(frames.count == 1)
        #expect(Self.refusal(frames.first) != nil)
    }

    // MARK: Limits

    /// A frame that announces more than the bytes left in the budget is refused before its body is read; the other
    /// connections are served.
    @Test func framesInFlightAreBoundedAndTheOthersAreServed() throws {
        var limits = ConnectionLimits.standard
        limits.bufferedBytes = 1 << 20
        let f = try Fixture(limits: limits)
        try f.seed(account: "alice", secret: "s3cret")
        var holders: [TestClient] = []
        for _ in 0..<4 {
            let holder = try f.connect()
            let announced = UInt32(600 << 10)
            try holder.send([UInt8(announced >> 24), UInt8(announced >> 16 & 0xFF), UInt8(announced >> 8 & 0xFF), UInt8(announced & 0xFF), Frame.version, 1, 0, 0, 0, 1])
            holders.append(holder)
        }
        var closed = 0
        for holder in holders where try holder.isClosed(wait: .milliseconds(500)) { closed += 1 }
        #expect(closed == 3, "one 600 KiB frame fits in 1 MiB, the other three connections are closed")
        let normal = try f.connect()
        try normal.send(Frame(id: 9, body: .request(Self.find("alice"))).encoded)
        #expect(try normal.frames(1).first.flatMap(Self.secret) == "s3cret")
    }

    /// A frame that does not complete in time closes its connection.
    @Test func aFrameThatTakesTooLongClosesTheConnection() throws {
        var limits = ConnectionLimits.standard
        limits.frameTimeout = .milliseconds(200)
        let f = try Fixture(limits: limits)
        let client = try f.connect()
        try client.send(Frame(id: 1, body: .request(Self.find("alice"))).encoded.prefix(8))
        let frames = try client.frames(1, wait: .seconds(10))
        #expect(Self.refusal(frames.first)?.message.contains("longer than") == true)
        #expect(try client.isClosed())
    }

    /// Connections over the per-user limit are refused with a reason; the ones already open stay served.
    @Test func connectionsPerUserAreBounded() throws {
        var limits = ConnectionLimits.standard
        limits.connectionsPerUser = 2
        let f = try Fixture(limits: limits)
        try f.seed(account: "alice", secret: "s3cret")
        let first = try f.connect(), second = try f.connect()
        let third = try f.connect(greeted: false)
        let refused = try third.frames(1)
        #expect(Self.refusal(refused.first)?.status == .notAvailable)
        #expect(try third.isClosed())
        for client in [first, second] {
            try client.send(Frame(id: 3, body: .request(Self.find("alice"))).encoded)
            #expect(try client.frames(1).first.flatMap(Self.secret) == "s3cret")
        }
    }

    /// A client that skips the parser and sends a query by hand gets the answers a malformed dictionary gets: the
    /// daemon checks what the client's parser would have.
    @Test func handMadeQueriesAreCheckedAsTheParserWould() throws {
        let f = try Fixture()
        var foreign = ItemQuery(itemClass: .genericPassword)
        foreign.attributes = ["srvr": .string("example.com")]  // an internet password's attribute
        var wrongKind = ItemQuery(itemClass: .genericPassword)
        wrongKind.attributes = ["cdat": .string("yesterday")]  // a date attribute as text
        var badAccessibility = ItemQuery(itemClass: .genericPassword)
        badAccessibility.attributes = ["pdmn": .string("everyone")]
        var stamped = ItemQuery(itemClass: .genericPassword)
        stamped.attributes = ["acct": .string("a")]
        var mismatched = ItemQuery(itemClass: .genericPassword)
        mismatched.persistentRef = PersistentReference(itemClass: .key, uuid: Data(repeating: 1, count: 16))
        let cases: [(KeychainRequest, KeychainStatus)] = [
            (.add(foreign, claim: nil), .noSuchAttribute),
            (.find(foreign, claim: nil), .noSuchAttribute),
            (.delete(wrongKind, claim: nil), .param),
            (.add(badAccessibility, claim: nil), .param),
            (.update(stamped, ItemChanges(attributes: ["mdat": .date(Date())]), claim: nil), .param),
            (.update(stamped, ItemChanges(attributes: ["srvr": .string("x")]), claim: nil), .noSuchAttribute),
            (.find(mismatched, claim: nil), .param),
        ]
        let client = try f.connect()
        for (index, (request, status)) in cases.enumerated() {
            try client.send(Frame(id: UInt32(index + 1), body: .request(request)).encoded)
            guard let answer = try client.frames(1).first, case .response(.failure(let error)) = answer.body else {
                Issue.record("case \(index) was not refused")
                continue
            }
            #expect(error.status == status, "case \(index): \(error.message)")
        }
        expectKeychainError(.itemNotFound, "nothing was stored") {
            try f.engine.find(ItemQuery(itemClass: .genericPassword), caller: .unrestricted(defaultGroup: f.group))
        }
    }
}
