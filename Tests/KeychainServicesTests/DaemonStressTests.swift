import Foundation
import GRDB
import KeychainTestSupport
import Testing
import KeychainServices
import KeychainClient
import KeychainProtocol
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// Calls `connect` or `bind` on `fd` with the Unix-socket address of `path` (shorter than `sun_path`).
func withUnixAddress(_ path: String, _ fd: Int32, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A raw blocking connection to the daemon, for sending bytes no well-behaved client would.
struct RawConnection {
    let fd: Int32

    init?(path: String) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard withUnixAddress(path, fd, connect) == 0 else { close(fd); return nil }
        self.fd = fd
    }

    /// Sends everything it can; false once the daemon has closed the connection.
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    func finishWriting() { shutdown(fd, Int32(SHUT_WR)) }

    enum Reply { case frame(Frame), closed, timedOut }

    /// The next response frame, or how the connection ended.
    func receive() -> Reply {
        func exactly(_ count: Int) -> [UInt8]?? {
            var buffer = [UInt8](repeating: 0, count: count)
            var offset = 0
            while offset < count {
                // Never wait forever: a daemon that neither answers nor closes within 20 s is a failure.
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, 5_000) == 0 { return nil }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
                if n == 0 { return .some(nil) }
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno == ECONNRESET ? .some(nil) : nil
                }
                offset += n
            }
            return buffer
        }
        guard let prefixResult = exactly(4) else { return .timedOut }
        guard let prefix = prefixResult else { return .closed }
        let length = prefix.reduce(0) { $0 << 8 | Int($1) }
        guard let bodyResult = exactly(length) else { return .timedOut }
        guard let body = bodyResult, let frame = try? Frame.decode(body: body) else { return .closed }
        return .frame(frame)
    }

    func closeNow() { close(fd) }
}

@Suite struct DaemonFuzzTests {
    /// Well-formed requests of every kind, the seeds of the mutations.
    static func corpus() -> [[UInt8]] {
        func query(_ attributes: [String: AttributeValue], all: Bool = false, data: Bool = false) -> ItemQuery {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = attributes
            q.limit = all ? .all : .one
            q.returns.data = data
            return q
        }
        let q = query(["acct": .string("fuzz"), "svce": .string("svc")])
        var add = query(["acct": .string("fuzz")])
        add.valueData = Data("x".utf8)
        let requests: [KeychainRequest] = [
            .status,
            .find(query([:], all: true, data: true), claim: nil),
            .find(q, claim: ["TEAM.seed"]),
            .add(add, claim: nil),
            .update(q, ItemChanges(attributes: ["labl": .string("l")]), claim: nil),
            .delete(q, claim: nil),
            .delete(query(["agrp": .string("TEAM.seed")]), claim: nil),
            .lock,
            .unlock(passcode: "guess"),
            .changePasscode(old: nil, new: "owned"),
            .backup(password: "p"),
            .restore(Data(repeating: 7, count: 64), password: "p"),
            .registerProgram(AppRegistration(program: .executable(path: "/bin/sh", sha256: "00"), applicationIdentifier: nil, accessGroups: ["TEAM.seed"])),
            .listPrograms,
            .unregisterProgram("/bin/sh"),
            .setSettings(KeychainSettings(idleTimeout: 1, lockOnSleep: true)),
            .tokenKey(.sign(reference: PersistentReference(itemClass: .key, uuid: Data(repeating: 1, count: 16)), algorithm: "x", input: Data()), claim: nil),
        ]
        return requests.enumerated().map { Frame(id: UInt32($0.offset), body: .request($0.element)).encoded }
    }

    static func mutate(_ frame: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = frame
        func anyIndex() -> Int { Int.random(in: 0..<max(bytes.count, 1), using: &rng) }
        func length(_ n: Int) -> [UInt8] { [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] }
        switch Int.random(in: 0..<11, using: &rng) {
        case 0: break  // unchanged
        case 1:  // flip a few bits anywhere, the length prefix included
            for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                bytes[anyIndex()] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
            }
        case 2:  // truncated
            bytes = Array(bytes.prefix(anyIndex()))
        case 3:  // noise
            bytes = (0..<Int.random(in: 0..<96, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        case 4:  // a lying length prefix (tiny, a little off, or huge)
            let choices = [0, 1, 5, bytes.count - 5, bytes.count + 3, Frame.maximumLength + 1, Int(UInt32.max)]
            bytes.replaceSubrange(0..<4, with: length(choices[Int.random(in: 0..<choices.count, using: &rng)] & 0xFFFF_FFFF))
        case 5:  // random byte values in the body
            for _ in 0..<Int.random(in: 1...8, using: &rng) where bytes.count > 4 {
                bytes[Int.random(in: 4..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
        case 6:  // bytes inserted, length fixed up so the frame parses as far as the body
            let at = Int.random(in: 4...bytes.count, using: &rng)
            bytes.insert(contentsOf: (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            bytes.replaceSubrange(0..<4, with: length(bytes.count - 4))
        case 7:  // a find whose attributes claim four billion entries
            var body: [UInt8] = [Frame.version, 1, 0, 0, 0, 9, 2, 4] + Array("genp".utf8)
            body += [0xFF, 0xFF, 0xFF, 0xFF, 0x04, 0x61, 0x63, 0x63, 0x74, 1, 0, 0, 0, 1, 0x41]
            bytes = length(body.count) + body
        case 8:  // a frame of another protocol version (1, the dictionary protocol, or one from the future)
            let version: UInt8 = Bool.random(using: &rng) ? 1 : 9
            let body: [UInt8] = [version, 1, 0, 0, 0, 1, 15, 0x08, 0, 0, 0, 0]
            bytes = length(body.count) + body
        case 9:  // a response frame sent by a client
            bytes = Frame(id: 1, body: .response(.done)).encoded
        default:  // invalid UTF-8 in a string, length kept consistent
            var body: [UInt8] = [Frame.version, 1, 0, 0, 0, 7, 12, 0, 0, 0, 2, 0xC3, 0x28]
            if Bool.random(using: &rng) { body[11] = 0xFF }
            bytes = length(body.count) + body
        }
        return bytes
    }

    @Test func aHundredThousandHostileFramesNeverCrashTheDaemonNorTouchData() throws {
        let f = try DaemonFixture()
        // Items the fuzzer (an unregistered program) has no right to, which must come through untouched.
        let seeded = Dictionary(uniqueKeysWithValues: (0..<20).map { ("seed-\($0)", "value-\($0)") })
        for (account, value) in seeded {
            _ = try InProcessKeychain(engine: f.engine, caller: AccessPolicy(groups: ["TEAM.seed"])).secItemAdd(
                ["class": .string("genp"), "acct": .string(account), "svce": .string("fuzz"), "v_Data": .data(Data(value.utf8))])
        }
        let daemon = try DaemonProcess(home: f.home)
        let corpus = Self.corpus()
        var rng = SeededGenerator(seed: 0x6B65_7963_6861_696E)
        var sent = 0, answered = 0, closedByDaemon = 0, hangs = 0
        var history: [[UInt8]] = []
        var connection: RawConnection?
        while sent < 100_000, hangs < 3 {
            if connection == nil { connection = RawConnection(path: daemon.socketPath); history = [] }
            guard let current = connection else {
                Issue.record("keychaind stopped accepting connections after \(sent) frames:\n\(daemon.output)")
                break
            }
            let frame = Self.mutate(corpus[Int.random(in: 0..<corpus.count, using: &rng)], &rng)
            sent += 1
            let declared = frame.count >= 4 ? frame[0..<4].reduce(0) { $0 << 8 | Int($1) } : -1
            let complete = frame.count >= 4 && declared == frame.count - 4
            guard current.send(frame) else {
                current.closeNow(); connection = nil; closedByDaemon += 1
                continue
            }
            // A frame that is not exactly one whole frame leaves the daemon waiting for more: end the stream.
            if !complete { current.finishWriting() }
            var open = complete
            readLoop: while true {
                switch current.receive() {
                case .frame(let reply):
                    if case .versionRefused = reply.body {
                        // A client of another protocol version is told why, then the daemon closes the connection.
                        open = false; closedByDaemon += 1; break readLoop
                    }
                    answered += 1
                    if complete { break readLoop }
                case .closed: open = false; closedByDaemon += 1; break readLoop
                case .timedOut:
                    Issue.record(
                        "keychaind did not answer or close within 5 s (frame \(sent): \(frame.map { String($0, radix: 16) }.joined(separator: " "))) after \(history.map { $0.map { String($0, radix: 16) }.joined(separator: " ") })"
                    )
                    open = false; hangs += 1; break readLoop
                }
            }
            if !open { current.closeNow(); connection = nil }
            history.append(frame)
        }
        connection?.closeNow()
        #expect(sent == 100_000)
        #expect(answered > 1_000, "well-formed frames are answered")
        #expect(closedByDaemon > 10_000, "malformed frames close their connection")
        #expect(daemon.process.isRunning, "keychaind survived")
        // It still serves a well-behaved client.
        let status = try DaemonKeychain(client: daemon.client, claim: nil).status()
        #expect(status.home == f.home)
        #expect(daemon.stop() == 0)
        // Nothing the fuzzer had no right to changed, and the database is sound.
        #expect(try f.items(in: "TEAM.seed").filter { $0.key.hasPrefix("seed-") } == seeded)
        #expect(try f.items(in: "TEAM.seed").count == seeded.count)
        let db = try DatabaseQueue(path: f.home + "/keychain-2.db")
        #expect(try db.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        #expect(!FileManager.default.fileExists(atPath: f.home + "/apps.registry"), "no registration slipped through")
    }
}

/// A running program whose stdout lines are collected as they arrive.
final class StreamingProgram: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var text = ""
    private let done = DispatchSemaphore(value: 0)

    init(_ path: String, _ args: [String], environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reader = out.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                lock.withLock { text += String(decoding: chunk, as: UTF8.self) }
            }
            done.signal()
        }
    }

    /// How many lines starting with `prefix` it has printed so far.
    func lineCount(prefix: String) -> Int {
        lock.withLock { text.split(separator: "\n").count { $0.hasPrefix(prefix) } }
    }

    /// Waits for the program to exit and its output to be read.
    func finish() -> (status: Int32, output: String) {
        process.waitUntilExit()
        done.wait()
        return (process.terminationStatus, lock.withLock { text })
    }

    /// SIGKILL; what it printed before dying.
    func kill() -> String {
        Foundation.kill(process.processIdentifier, SIGKILL)
        return finish().output
    }
}

func integrityCheck(_ home: String) throws -> String? {
    let db = try DatabaseQueue(path: home + "/keychain-2.db")
    return try db.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
}

@Suite struct DaemonConcurrencyTests {
    @Test func thirtyTwoClientProcessesAtOnce() throws {
        let f = try DaemonFixture()
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        let helper = productsDirectory().appendingPathComponent("keychain-test-helper").path
        let clients = try (0..<32).map { try StreamingProgram(helper, ["mixed", "c\($0)", "40"], environment: env) }
        for (i, client) in clients.enumerated() {
            let (status, output) = client.finish()
            #expect(status == 0, "client \(i)")
            #expect(output.hasSuffix("calls=40 unexpected=0\n"), "client \(i): \(output)")
        }
        #expect(daemon.stop() == 0)
        // Sixteen keys were fought over; at most one item each, and the index agrees.
        let items = try f.items(in: helper)
        #expect(items.count <= 16)
        #expect(items.keys.allSatisfy { $0.hasPrefix("k") })
        let db = try DatabaseQueue(path: f.home + "/keychain-2.db")
        let (rows, keys) = try db.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM genp") ?? -1, try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT pk) FROM genp") ?? -2)
        }
        #expect(rows == keys)
        #expect(rows == items.count)
        #expect(try integrityCheck(f.home) == "ok")
    }

    @Test func threadsOfOneProcessShareTheClientSafely() throws {
        let kc = try TestKeychain(.daemon, groups: ["g"])
        let failures = NSLock()
        nonisolated(unsafe) var failed: [String] = []
        let group = DispatchGroup()
        for t in 0..<16 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                kc.run {
                    for i in 0..<25 {
                        let secret = Data("\(t)-\(i)".utf8)
                        let added = add(genp("t\(t)-\(i)", "threads", [kSecValueData as String: secret]))
                        let (status, item) = copy(genp("t\(t)-\(i)", "threads", [kSecReturnData as String: true]))
                        if added != errSecSuccess || status != errSecSuccess || item as? Data != secret {
                            failures.withLock { failed.append("t\(t)-\(i): add \(added), find \(status)") }
                        }
                    }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { failed }.isEmpty)
        kc.run {
            let (status, items) = copy(genp(nil, "threads", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            #expect((items as? [Any])?.count == 400)
        }
    }

    @Test func sigkillDuringWritesLosesNoAcknowledgedWrite() throws {
        let f = try DaemonFixture()
        let socket = f.folder + "/d.sock"
        var daemon = try DaemonProcess(home: f.home, socketPath: socket)
        let env = try f.environment(daemon)
        let helper = productsDirectory().appendingPathComponent("keychain-test-helper").path
        // Four writers add items one after another, through every crash and restart, printing each ack.
        let writers = try (0..<4).map { try StreamingProgram(helper, ["writer", "w\($0)"], environment: env) }
        var rng = SeededGenerator(seed: 200)
        func acks() -> Int { writers.reduce(0) { $0 + $1.lineCount(prefix: "ack ") } }
        for round in 0..<200 {
            // Each kill lands while writes are flowing: wait for this daemon to acknowledge a write (however
            // slow a loaded machine is), then let a random few milliseconds of further writes start.
            let before = acks()
            let deadline = Date().addingTimeInterval(30)
            while acks() == before && Date() < deadline { usleep(1_000) }
            #expect(acks() > before, "round \(round): no write was acknowledged by the restarted daemon")
            usleep(UInt32.random(in: 0...20_000, using: &rng))
            daemon.kill()
            daemon = try DaemonProcess(home: f.home, socketPath: socket)
        }
        usleep(50_000)
        let outputs = writers.map { $0.kill() }
        daemon.kill()
        #expect(try integrityCheck(f.home) == "ok")
        let items = try f.items(in: helper)
        var acknowledged = 0
        for (w, output) in outputs.enumerated() {
            for line in output.split(separator: "\n") where line.hasPrefix("ack ") {
                let i = line.dropFirst(4)
                acknowledged += 1
                #expect(items["w\(w)-\(i)"] == "v-\(i)", "acknowledged add w\(w)-\(i) was lost")
            }
        }
        #expect(acknowledged >= 200, "writes were acknowledged between the kills")
    }

    @Test func sigtermFinishesRequestsInProgressAndClosesTheDatabase() throws {
        let f = try DaemonFixture()
        let daemon = try DaemonProcess(home: f.home)
        let env = try f.environment(daemon)
        let helper = productsDirectory().appendingPathComponent("keychain-test-helper").path
        let writers = try (0..<4).map { try StreamingProgram(helper, ["writer", "t\($0)"], environment: env) }
        usleep(500_000)
        // A client killed in the middle of its requests takes nothing down with it.
        _ = writers[3].kill()
        #expect(try DaemonKeychain(client: daemon.client, claim: nil).status().daemon != nil)
        #expect(daemon.stop() == 0, "SIGTERM is a clean exit")
        #expect(daemon.output.contains("stopped"))
        let outputs = writers.prefix(3).map { $0.kill() }
        // Closed cleanly: the write-ahead log was checkpointed into the database and removed.
        #expect(!FileManager.default.fileExists(atPath: f.home + "/keychain-2.db-wal"))
        let items = try f.items(in: helper)
        var acknowledged = 0
        for (w, output) in outputs.enumerated() {
            for line in output.split(separator: "\n") where line.hasPrefix("ack ") {
                acknowledged += 1
                let i = line.dropFirst(4)
                #expect(items["t\(w)-\(i)"] == "v-\(i)")
            }
        }
        #expect(acknowledged > 0)
        #expect(try integrityCheck(f.home) == "ok")
    }

    @Test func sigtermAmidABurstOfConnectionsExitsCleanly() throws {
        // Connections accepted as the listener closes must still be closed properly (NIO traps on an async
        // channel dropped unserved): SIGTERM while two threads connect as fast as they can, ten times.
        let f = try DaemonFixture()
        for round in 0..<10 {
            let daemon = try DaemonProcess(home: f.home)
            let path = daemon.socketPath
            let done = NSLock()
            nonisolated(unsafe) var finished = false
            let connectors = DispatchGroup()
            for _ in 0..<2 {
                connectors.enter()
                Thread.detachNewThread {
                    defer { connectors.leave() }
                    var held: [RawConnection] = []
                    while !done.withLock({ finished }) {
                        if let connection = RawConnection(path: path) { held.append(connection) }
                        if held.count >= 100 {
                            held.forEach { $0.closeNow() }
                            held = []
                        }
                    }
                    held.forEach { $0.closeNow() }
                }
            }
            usleep(UInt32(20_000 + round * 3_000))
            let status = daemon.stop()
            done.withLock { finished = true }
            connectors.wait()
            #expect(status == 0, "round \(round): \(daemon.output)")
            #expect(daemon.output.contains("stopped"), "round \(round)")
        }
        #expect(try integrityCheck(f.home) == "ok")
    }

    @Test func anIdleDaemonLocksItself() throws {
        let f = try DaemonFixture()
        try registerTestProcess(f.engine, groups: ["g"])
        try f.engine.changePasscode(from: nil, to: "1234")
        let daemon = try DaemonProcess(home: f.home, arguments: ["--idle-lock", "0.5"])
        let backend = DaemonKeychain(client: daemon.client, claim: ["g"])
        let item: [String: PlistValue] = ["class": .string("genp"), "acct": .string("a"), "v_Data": .data(Data("s".utf8))]
        // Before the first unlock, WhenUnlocked items are out of reach.
        expectKeychainError(.interactionNotAllowed) { try backend.secItemAdd(item) }
        try backend.unlock(passcode: "1234")
        _ = try backend.secItemAdd(item)
        let query: [String: PlistValue] = ["class": .string("genp"), "acct": .string("a"), "r_Data": .bool(true)]
        #expect(try backend.secItemCopyMatching(query) == .data(Data("s".utf8)))
        // Busy: each call resets the idle clock.
        for _ in 0..<6 {
            usleep(200_000)
            _ = try backend.secItemCopyMatching(query)
        }
        usleep(1_500_000)
        do {
            _ = try backend.secItemCopyMatching(query)
            Issue.record("the keychain should have locked after 0.5 s without requests")
        } catch {
            #expect(error.status == .interactionNotAllowed)
        }
        #expect(try backend.status().lockState == .locked)
    }
}
