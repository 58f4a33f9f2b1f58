import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A flood of hostile requests against a sync server, from addresses of its own on the loopback network
/// (127.0.0.2 and up: the honest devices stay on 127.0.0.1, as another person's machine would be elsewhere), each
/// kind at a steady rate on a thread of its own, with blocking sockets and a new connection per request:
/// - **account creations** from one address (10 per hour are allowed, then 429);
/// - **unsigned 8 MiB bodies**: a write batch's headers and its first 64 KiB, no signature (401 before the body is read);
/// - **uninvited joins** to the honest account (403 `invitation_required`, then 429);
/// - **forged writes** to the honest account: signature headers for a device that does not exist (401, then 429);
/// - **half-sent requests**: connections that send part of a request's headers and then nothing, held open until the
///   server closes them (its idle timeout), and replaced at once.
///
/// Each answer's status is counted per kind, so a benchmark can show the limits held: nothing the flood sends is
/// served.
public final class SyncFlood: @unchecked Sendable {
    /// The kinds of requests the flood sends.
    public enum Kind: String, CaseIterable, Sendable {
        case accountCreations = "account creations"
        case unsignedBodies = "unsigned 8 MiB bodies"
        case uninvitedJoins = "uninvited joins"
        case forgedWrites = "forged writes"
        case halfSentRequests = "half-sent requests"
    }

    /// What the flood saw for one kind: answers by status (0: the server closed the connection without one).
    public struct Tally: Sendable, CustomStringConvertible {
        /// Answers by status.
        public var byStatus: [Int: Int] = [:]
        /// Requests that could not even connect or send.
        public var failedToSend = 0

        /// Nothing seen yet.
        public init() {}

        /// How many were sent, answered or not.
        public var sent: Int { byStatus.values.reduce(0, +) + failedToSend }

        public var description: String {
            let statuses = byStatus.keys.sorted().map { "\($0 == 0 ? "closed" : String($0)): \(byStatus[$0] ?? 0)" }
            return "\(sent) sent (" + (statuses + (failedToSend > 0 ? ["not sent: \(failedToSend)"] : [])).joined(separator: ", ") + ")"
        }
    }

    private let port: UInt16
    private let account: String
    private let requestsPerSecond: Int
    private let heldConnections: Int
    private let running = Atomic<Bool>(false)
    private let heldCount = Atomic<Int>(0)
    private let tallies = Mutex<[Kind: Tally]>([:])
    private var threads: [Thread] = []
    private let finished = DispatchGroup()

    /// A flood against the server on 127.0.0.1:`port` aimed at `account`: `requestsPerSecond` of each request kind,
    /// and `heldConnections` half-sent requests open at all times.
    public init(port: Int, account: String, requestsPerSecond: Int = 200, heldConnections: Int = 256) {
        self.port = UInt16(clamping: port)
        self.account = account
        self.requestsPerSecond = requestsPerSecond
        self.heldConnections = heldConnections
    }

    /// Starts every kind on its thread.
    public func start() {
        running.store(true, ordering: .relaxed)
        for (index, kind) in Kind.allCases.enumerated() {
            // One source address per kind, so the per-address limits of one kind do not hide another's.
            let source = "127.0.0.\(index + 2)"
            finished.enter()
            let thread = Thread { [self] in
                defer { finished.leave() }
                if kind == .halfSentRequests { holdHalfSentRequests(from: source) } else { send(kind, from: source) }
            }
            thread.name = "flood: \(kind.rawValue)"
            thread.start()
            threads.append(thread)
        }
    }

    /// Stops the flood, waits for its threads, and gives what each kind saw.
    @discardableResult
    public func stop() -> [Kind: Tally] {
        running.store(false, ordering: .relaxed)
        finished.wait()
        threads = []
        return tallies.withLock { $0 }
    }

    /// How many half-sent requests are open now.
    public var held: Int { heldCount.load(ordering: .relaxed) }

    /// What each kind has seen so far.
    public var tally: [Kind: Tally] { tallies.withLock { $0 } }

    private func record(_ kind: Kind, status: Int?) {
        tallies.withLock { tallies in
            if let status { tallies[kind, default: Tally()].byStatus[status, default: 0] += 1 } else { tallies[kind, default: Tally()].failedToSend += 1 }
        }
    }

    // MARK: Requests, one at a time at a steady rate

    private func send(_ kind: Kind, from source: String) {
        let interval = Duration.seconds(1) / max(requestsPerSecond, 1)
        var next = ContinuousClock.now
        while running.load(ordering: .relaxed) {
            record(kind, status: exchange(request(kind), from: source))
            next += interval
            let now = ContinuousClock.now
            if next > now { Thread.sleep(forTimeInterval: Self.seconds(next - now)) } else { next = now }
        }
    }

    /// The bytes of one request of `kind` (for the unsigned bodies: the headers and the first 64 KiB).
    private func request(_ kind: Kind) -> [UInt8] {
        let accountPath = "/v1/accounts/\(account)"
        switch kind {
        case .accountCreations:
            let body = #"{"device":{"id":"00000000000000000000000000000000","publicKey":"AAAA","name":"flood"}}"#
            return Self.http("POST", "/v1/accounts", headers: [:], body: Array(body.utf8))
        case .unsignedBodies:
            var bytes = Self.http("POST", accountPath + "/zones/default/records", headers: [:], body: [], contentLength: 8 * 1024 * 1024)
            bytes += [UInt8](repeating: 0x20, count: 64 * 1024)
            return bytes
        case .uninvitedJoins:
            let body = #"{"deviceID":"11111111111111111111111111111111","publicKey":"AAAA","codeHash":"AAAA"}"#
            return Self.http("POST", accountPath + "/joins", headers: [:], body: Array(body.utf8))
        case .forgedWrites:
            let body = Array(#"{"writes":[]}"#.utf8)
            let device = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0 ... .max)) }.joined()
            let nonce = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0 ... .max)) }.joined()
            let signature = Data((0..<64).map { _ in UInt8.random(in: 0 ... .max) }).base64EncodedString()
            let hash = String(repeating: "ab", count: 32)
            return Self.http(
                "POST", accountPath + "/zones/default/records",
                headers: [
                    "Keychain-Device": device, "Keychain-Timestamp": String(Int(Date().timeIntervalSince1970)),
                    "Keychain-Nonce": nonce, "Keychain-Signature": signature, "Keychain-Content-SHA256": hash,
                ], body: body)
        case .halfSentRequests:
            return Array("POST /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl".utf8)
        }
    }

    static func http(_ method: String, _ path: String, headers: [String: String], body: [UInt8], contentLength: Int? = nil) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(contentLength ?? body.count)\r\n\r\n"
        return Array(text.utf8) + body
    }

    /// Sends `bytes` on a new connection from `source` and reads the answer's status: nil when it could not
    /// connect or send, 0 when the server closed the connection without answering.
    private func exchange(_ bytes: [UInt8], from source: String) -> Int? {
        guard let fd = connectSocket(from: source) else { return nil }
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            // The server may answer (and close) before the whole body is sent: that is the point.
            guard count > 0 else { break }
            sent += count
        }
        return readStatus(fd)
    }

    /// The status of the answer on `fd`, read until the status line is complete (0 when the connection closed first).
    private func readStatus(_ fd: Int32) -> Int {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 64 * 1024 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
            if let line = received.firstIndex(of: 0x0d) {
                let parts = String(decoding: received[..<line], as: UTF8.self).split(separator: " ")
                return parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            }
        }
        return 0
    }

    /// A TCP connection from `source` to the server, with 10 s send and receive timeouts; nil when refused.
    private func connectSocket(from source: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &local) { local in
            withUnsafePointer(to: &remote) { remote in
                local.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
                    && remote.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    // MARK: Half-sent requests, held open

    /// Keeps `heldConnections` half-sent requests open: when the server closes one (tallied as its status, or 0),
    /// a new one takes its place.
    private func holdHalfSentRequests(from source: String) {
        let bytes = request(.halfSentRequests)
        var open: [Int32] = []
        defer { for fd in open { close(fd) } }
        while running.load(ordering: .relaxed) {
            while open.count < heldConnections, running.load(ordering: .relaxed) {
                guard let fd = connectSocket(from: source) else {
                    record(.halfSentRequests, status: nil)
                    break
                }
                _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                open.append(fd)
            }
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 100) >= 0 else { continue }
            var still: [Int32] = []
            for entry in polls {
                if entry.revents != 0 {
                    record(.halfSentRequests, status: readStatus(entry.fd))
                    close(entry.fd)
                } else {
                    still.append(entry.fd)
                }
            }
            open = still
            heldCount.store(open.count, ordering: .relaxed)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The resident memory of process `pid`, in KiB (from /proc/PID/status), or 0 when it cannot be read.
public func residentKilobytes(of pid: pid_t) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}
