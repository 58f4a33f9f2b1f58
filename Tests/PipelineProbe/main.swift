// Drives keychaind's connection handling (handshake, per-message credentials, frame assembly, dispatcher, engine)
// over a real socket pair in this process, so callgrind can count what a request costs the daemon: valgrind cannot
// run keychaind itself. Usage: keychaind-pipeline-probe [finds]
//   valgrind --tool=callgrind --toggle-collect='*PipelineProbe*serve*' .build/release/keychaind-pipeline-probe 2000
// (see the README's "Performance"). The keychain is a new one in a temporary folder, removed at the end.
import Foundation
import KeychainCore
import KeychainDaemon
import KeychainProtocol
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// One connection to keychaind's connection handler, served on a thread of this process, on a keychain of `items`
/// generic passwords in this process's own access group.
final class PipelineProbe {
    let home: String
    let engine: KeychainEngine
    let client: Int32
    let frames: [[UInt8]]
    let tracker = ConnectionTracker()

    init(items: Int) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-probe-\(getpid())").path
        engine = try KeychainEngine(location: KeychainLocation(home: home))
        let logger = Logger(label: "pipeline-probe")
        let authority = Authority(engine: engine, adminToolPath: "/nonexistent/security", logger: logger)
        let group = try authority.session(pid: getpid(), uid: getuid()).identity.privateGroup
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw KeychainError(code: .io, message: "socketpair failed")
        }
        client = pair[0]
        let context = ServerContext(
            dispatcher: RequestDispatcher(authority: authority, logger: logger),
            budget: ResourceBudget(limits: .standard), tracker: tracker, logger: logger)
        let served = pair[1]
        Thread.detachNewThread { PeerConnection.serve(served, context: context) }
        let caller = AccessPolicy(groups: [group])
        var requests: [[UInt8]] = []
        for index in 0..<items {
            var item = ItemQuery(itemClass: .genericPassword)
            item.attributes = ["acct": .string("account-\(index)"), "svce": .string("pipeline-probe")]
            item.valueData = Data("secret-\(index)-padded-to-24-bytes".utf8.prefix(24))
            _ = try engine.add(item, caller: caller)
            var find = ItemQuery(itemClass: .genericPassword)
            find.attributes = item.attributes
            find.returns.data = true
            requests.append(Frame(id: UInt32(index + 1), body: .request(.find(find, claim: nil))).encoded)
        }
        frames = requests
        _ = try readFrame()  // the greeting
    }

    /// One whole frame from the connection; its byte count.
    func readFrame() throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var filled = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress! + filled, $0.count - filled, 0) }
            guard n > 0 else { throw KeychainError(code: .io, message: "the connection closed") }
            filled += n
            if filled >= 4 {
                let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
                if filled >= 4 + length { return filled }
            }
        }
    }

    /// Sends `count` finds in turn and reads each answer; returns the bytes answered.
    @inline(never)
    func serve(_ count: Int) throws -> Int {
        var answered = 0
        for index in 0..<count {
            let frame = frames[index % frames.count]
            _ = frame.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            answered += try readFrame()
        }
        return answered
    }

    /// Closes the connection and the engine, and removes the keychain; the first failure is thrown after every step
    /// has run.
    func close() throws {
        var failure: (any Error)?
        func step(_ body: () throws -> Void) {
            do { try body() } catch { failure = failure ?? error }
        }
        _ = Glibc.close(client)
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
    print("\(finds) finds through keychaind's connection handling: \(answered / max(finds, 1)) bytes answered each, \(String(format: "%.1f", microseconds / Double(max(finds, 1)))) µs each")
} catch {
    FileHandle.standardError.write(Data("keychaind-pipeline-probe: \(error)\n".utf8))
    exit(1)
}
