// Drives keychaind's connection pipeline (frame decoder, request handler, dispatcher, engine) through an embedded
// channel in this process, so callgrind can count what a request costs the daemon: valgrind cannot run keychaind
// itself. Usage: keychaind-pipeline-probe [finds]
//   valgrind --tool=callgrind --toggle-collect='*PipelineProbe*serve*' .build/release/keychaind-pipeline-probe 2000
// (see the README's "Performance"). The keychain is a new one in a temporary folder, removed at the end.
import Foundation
import KeychainCore
import KeychainDaemon
import KeychainProtocol
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix

/// One connection's pipeline on a keychain of `items` generic passwords in this process's own access group.
final class PipelineProbe {
    let home: String
    let engine: KeychainEngine
    let threads = NIOThreadPool(numberOfThreads: 1)
    let channel = EmbeddedChannel()
    let frames: [[UInt8]]

    init(items: Int) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-probe-\(getpid())").path
        engine = try KeychainEngine(location: KeychainLocation(home: home))
        let logger = Logger(label: "pipeline-probe")
        let authority = Authority(engine: engine, adminToolPath: "/nonexistent/security", logger: logger)
        let session = try authority.session(pid: getpid(), uid: getuid())
        threads.start()
        let tracker = ConnectionTracker()
        try channel.pipeline.syncOperations.addHandlers([
            ByteToMessageHandler(RequestFrameDecoder()),
            RequestChannelHandler(session: session, dispatcher: RequestDispatcher(authority: authority, logger: logger),
                                  threads: threads, tracker: tracker, logger: logger),
        ])
        _ = tracker.opened(channel)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/keychaind-pipeline-probe")).wait()
        let caller = AccessPolicy(groups: [session.identity.privateGroup])
        var requests: [[UInt8]] = []
        for index in 0 ..< items {
            var item = ItemQuery(itemClass: .genericPassword)
            item.attributes = ["acct": .string("account-\(index)"), "svce": .string("pipeline-probe")]
            item.valueData = Data("secret-\(index)-padded-to-24-bytes".utf8.prefix(24))
            _ = try engine.add(item, caller: caller)
            var find = ItemQuery(itemClass: .genericPassword)
            find.attributes = item.attributes
            find.returns.data = true
            requests.append(Frame(id: UInt32(index), body: .request(.find(find, claim: nil))).encoded)
        }
        frames = requests
    }

    /// Sends `count` finds in turn and reads each answer; returns the bytes answered.
    @inline(never)
    func serve(_ count: Int) throws -> Int {
        var answered = 0
        for index in 0 ..< count {
            try channel.writeInbound(channel.allocator.buffer(bytes: frames[index % frames.count]))
            while let response = try channel.readOutbound(as: ByteBuffer.self) { answered += response.readableBytes }
        }
        return answered
    }

    /// Closes the channel, the thread pool and the engine, and removes the keychain; the first failure is thrown
    /// after every step has run.
    func close() throws {
        var failure: (any Error)?
        func step(_ body: () throws -> Void) {
            do { try body() } catch { failure = failure ?? error }
        }
        step { _ = try channel.finish() }
        step { try threads.syncShutdownGracefully() }
        step { try engine.close() }
        step { try FileManager.default.removeItem(atPath: home) }
        if let failure { throw failure }
    }
}

let finds = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000
do {
    let probe = try PipelineProbe(items: 100)
    let measured = Result { () throws -> (answered: Int, elapsed: Duration) in
        _ = try probe.serve(10)
        let started = ContinuousClock.now
        let answered = try probe.serve(finds)
        return (answered, ContinuousClock.now - started)
    }
    let closed = Result { try probe.close() }
    let (answered, elapsed) = try measured.get()
    try closed.get()
    let microseconds = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    print("\(finds) finds through keychaind's pipeline: \(answered / max(finds, 1)) bytes answered each, \(String(format: "%.1f", microseconds / Double(max(finds, 1)))) µs each")
} catch {
    FileHandle.standardError.write(Data("keychaind-pipeline-probe: \(error)\n".utf8))
    exit(1)
}
