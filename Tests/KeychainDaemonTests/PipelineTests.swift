import Foundation
import KeychainCore
import KeychainProtocol
import KeychainTestSupport
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing
@testable import KeychainDaemon

/// keychaind's connection pipeline (the frame decoder and the request handler), driven byte by byte through NIO's
/// embedded channels, on a real keychain in a temporary folder, with this test process as the peer.
@Suite struct PipelineTests {
    final class Fixture: @unchecked Sendable {
        let home: String
        let engine: KeychainEngine
        let dispatcher: RequestDispatcher
        let session: Session
        let threads = NIOThreadPool(numberOfThreads: 2)
        let tracker = ConnectionTracker()

        init() throws {
            home = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString.prefix(8))").path
            engine = try KeychainEngine(location: KeychainLocation(home: home))
            let logger = Logger(label: "pipeline-test")
            let authority = Authority(engine: engine, adminToolPath: "/nonexistent/security", logger: logger)
            dispatcher = RequestDispatcher(authority: authority, logger: logger)
            session = try authority.session(pid: getpid(), uid: getuid())
            threads.start()
        }

        deinit {
            try? threads.syncShutdownGracefully()
            try? engine.close()
            try? FileManager.default.removeItem(atPath: home)
        }

        func handler() -> RequestChannelHandler {
            RequestChannelHandler(session: session, dispatcher: dispatcher, threads: threads, tracker: tracker,
                                  logger: Logger(label: "pipeline-test"))
        }

        /// An embedded channel with keychaind's pipeline, registered as an open connection.
        func embeddedChannel() throws -> EmbeddedChannel {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandlers([ByteToMessageHandler(RequestFrameDecoder()), handler()])
            _ = tracker.opened(channel)
            try channel.connect(to: SocketAddress(unixDomainSocketPath: "/keychaind-test")).wait()
            return channel
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

    static func find(_ account: String) -> KeychainRequest {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["acct": .string(account), "svce": .string("pipeline")]
        q.returns.data = true
        return .find(q, claim: nil)
    }

    /// The responses written so far, decoded by the client's rule.
    static func responses(_ channel: EmbeddedChannel) throws -> [Frame] {
        var out: [Frame] = []
        var pending: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            pending += Array(buffer.readableBytesView)
        }
        while pending.count >= 4 {
            let length = try Frame.checkedLength(pending[0 ..< 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard pending.count >= 4 + length else { break }
            out.append(try Frame.decode(body: Array(pending[4 ..< 4 + length])))
            pending.removeFirst(4 + length)
        }
        return out
    }

    static func secret(_ frame: Frame) -> String? {
        guard case .response(.items(let items)) = frame.body, let data = items.first?.data else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aRequestSplitAtEveryByteIsAnsweredOnce() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let bytes = Frame(id: 41, body: .request(Self.find("alice"))).encoded
        for split in 1 ..< bytes.count {
            let channel = try f.embeddedChannel()
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes[..<split]))
            #expect(try Self.responses(channel).isEmpty, "nothing is answered before the frame is whole (split at \(split))")
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes[split...]))
            let answers = try Self.responses(channel)
            #expect(answers.count == 1)
            #expect(answers.first?.id == 41)
            #expect(answers.first.flatMap(Self.secret) == "s3cret")
            #expect(channel.isActive)
            _ = try channel.finish()
        }
    }

    @Test func oneBytePerReadAndManyFramesPerRead() throws {
        let f = try Fixture()
        try f.seed(account: "a", secret: "one")
        try f.seed(account: "b", secret: "two")
        let stream = Frame(id: 1, body: .request(Self.find("a"))).encoded + Frame(id: 2, body: .request(Self.find("b"))).encoded
            + Frame(id: 3, body: .request(Self.find("missing"))).encoded
        let trickle = try f.embeddedChannel()
        for byte in stream { try trickle.writeInbound(trickle.allocator.buffer(bytes: [byte])) }
        let bulk = try f.embeddedChannel()
        try bulk.writeInbound(bulk.allocator.buffer(bytes: stream))
        for channel in [trickle, bulk] {
            let answers = try Self.responses(channel)
            #expect(answers.map(\.id) == [1, 2, 3])
            #expect(answers.prefix(2).compactMap(Self.secret) == ["one", "two"])
            guard case .response(.failure(let error))? = answers.last?.body else { Issue.record("no failure"); continue }
            #expect(error.status == .itemNotFound)
            _ = try channel.finish()
        }
    }

    @Test(arguments: [UInt32(0), 5, UInt32(Frame.maximumLength) + 1, .max])
    func anOversizedOrUndersizedLengthClosesTheConnection(_ length: UInt32) throws {
        let f = try Fixture()
        let channel = try f.embeddedChannel()
        let prefix: [UInt8] = [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        try channel.writeInbound(channel.allocator.buffer(bytes: prefix + [Frame.version, 1]))
        #expect(!channel.isActive, "closed as soon as the length is read, before any body arrives")
        #expect(try Self.responses(channel).isEmpty)
    }

    @Test func aMalformedBodyClosesOnlyThatConnection() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let bad = try f.embeddedChannel()
        var bytes = Frame(id: 1, body: .request(Self.find("alice"))).encoded
        bytes[10] = 0xEE // an unknown request tag
        try bad.writeInbound(bad.allocator.buffer(bytes: bytes))
        #expect(!bad.isActive)
        let good = try f.embeddedChannel()
        try good.writeInbound(good.allocator.buffer(bytes: Frame(id: 2, body: .request(Self.find("alice"))).encoded))
        #expect(try Self.responses(good).first.flatMap(Self.secret) == "s3cret")
        _ = try good.finish()
    }

    @Test func aFrameCutOffByTheEndOfInputClosesTheConnection() throws {
        let f = try Fixture()
        let channel = try f.embeddedChannel()
        let bytes = Frame(id: 1, body: .request(Self.find("alice"))).encoded
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes.dropLast(3)))
        #expect(channel.isActive, "a partial frame waits for the rest")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(!channel.isActive)
        #expect(try Self.responses(channel).isEmpty)
    }

    @Test func aShuttingDownDaemonAnswersNoNewRequest() throws {
        let f = try Fixture()
        try f.seed(account: "alice", secret: "s3cret")
        let answered = try f.embeddedChannel()
        try answered.writeInbound(answered.allocator.buffer(bytes: Frame(id: 1, body: .request(Self.find("alice"))).encoded))
        #expect(try Self.responses(answered).first.flatMap(Self.secret) == "s3cret", "answered before the shutdown")
        f.tracker.drain()
        // A quick read (answered on the event loop) and a request for the thread pool, each on a connection that
        // was open when the shutdown began: neither is served, and the connection closes.
        var add = ItemQuery(itemClass: .genericPassword)
        add.attributes = ["acct": .string("bob"), "svce": .string("pipeline")]
        add.valueData = Data("late".utf8)
        for request in [Self.find("alice"), KeychainRequest.add(add, claim: nil)] {
            let channel = try f.embeddedChannel()
            try channel.writeInbound(channel.allocator.buffer(bytes: Frame(id: 2, body: .request(request)).encoded))
            #expect(try Self.responses(channel).isEmpty, "\(request.name) is not answered")
            #expect(!channel.isActive, "\(request.name): the connection is closed")
        }
        var bob = ItemQuery(itemClass: .genericPassword)
        bob.attributes = ["acct": .string("bob"), "svce": .string("pipeline")]
        expectKeychainError(.itemNotFound) { _ = try f.engine.find(bob, caller: AccessPolicy(groups: [f.group])) }
    }

    @Test func aClientThatSendsAResponseIsClosed() throws {
        let f = try Fixture()
        let channel = try f.embeddedChannel()
        try channel.writeInbound(channel.allocator.buffer(bytes: Frame(id: 1, body: .response(.done)).encoded))
        #expect(!channel.isActive)
    }

    @Test(arguments: [UInt8(1), 3, 200])
    func aClientOfAnotherVersionIsToldWhyAndClosed(_ version: UInt8) throws {
        let f = try Fixture()
        let channel = try f.embeddedChannel()
        var bytes = Frame(id: 77, body: .request(.status)).encoded
        bytes[4] = version
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        var written: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written += Array(buffer.readableBytesView) }
        #expect(written == VersionMismatch.refusal(peerVersion: version, id: 77))
        #expect(!channel.isActive)
    }

    /// A write runs on the thread pool; a read sent right after it waits its turn, so answers keep the requests'
    /// order.
    @Test func answersKeepTheOrderOfRequests() async throws {
        let f = try Fixture()
        let channel = NIOAsyncTestingChannel()
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandlers([ByteToMessageHandler(RequestFrameDecoder()), f.handler()])
        }
        _ = f.tracker.opened(channel)
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/keychaind-test"))
        var add = ItemQuery(itemClass: .genericPassword)
        add.attributes = ["acct": .string("late"), "svce": .string("pipeline")]
        add.valueData = Data("written".utf8)
        add.returns.attributes = true
        let stream = Frame(id: 1, body: .request(.add(add, claim: nil))).encoded + Frame(id: 2, body: .request(Self.find("late"))).encoded
        try await channel.writeInbound(channel.allocator.buffer(bytes: stream))
        var bytes: [UInt8] = []
        var frames: [Frame] = []
        for _ in 0 ..< 500 where frames.count < 2 {
            while let buffer = try await channel.readOutbound(as: ByteBuffer.self) { bytes += Array(buffer.readableBytesView) }
            frames = []
            var rest = bytes[...]
            while rest.count >= 4, let length = try? Frame.checkedLength(rest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }), rest.count >= 4 + length {
                frames.append(try Frame.decode(body: Array(rest.dropFirst(4).prefix(length))))
                rest = rest.dropFirst(4 + length)
            }
            if frames.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(frames.map(\.id) == [1, 2])
        guard case .response(.item(let stored))? = frames.first?.body else { Issue.record("the add was not answered with its item"); return }
        #expect(stored.attributes["agrp"] == .string(f.group), "an unregistered program writes to its private group")
        #expect(frames.last.flatMap(Self.secret) == "written", "the read saw the write before it")
        _ = try await channel.finish()
    }

    /// A client that skips the parser and sends a query by hand gets the answers a malformed dictionary gets: the
    /// daemon checks what the client's parser would have.
    @Test func handMadeQueriesAreCheckedAsTheParserWould() throws {
        let f = try Fixture()
        var foreign = ItemQuery(itemClass: .genericPassword)
        foreign.attributes = ["srvr": .string("example.com")] // an internet password's attribute
        var wrongKind = ItemQuery(itemClass: .genericPassword)
        wrongKind.attributes = ["cdat": .string("yesterday")] // a date attribute as text
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
        for (index, (request, status)) in cases.enumerated() {
            // Decoded from the wire as keychaind would, then handed to its dispatcher.
            let bytes = Frame(id: UInt32(index), body: .request(request)).encoded
            guard case .request(let decoded) = try Frame.decode(body: Array(bytes.dropFirst(4))).body else {
                Issue.record("case \(index) did not decode")
                continue
            }
            guard case .failure(let error) = f.dispatcher.respond(to: decoded, session: f.session) else {
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
