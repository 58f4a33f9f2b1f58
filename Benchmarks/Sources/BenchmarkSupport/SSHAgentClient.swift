import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A client of an SSH agent's socket, speaking the agent protocol's frames itself (the benchmark package sees only
/// the keychain's products, not its agent's types): adds an ECDSA P-256 key, lists, and asks for signatures.
public final class SSHAgentClient: @unchecked Sendable {
    private let fd: Int32

    /// Connects to the agent at `path`.
    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw BenchmarkFailure("cannot connect to the SSH agent at \(path) (errno \(errno))")
        }
    }

    deinit { close(fd) }

    static func string(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let count = UInt32(bytes.count)
        return [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)] + bytes
    }

    static func mpint(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }
        return string(bytes)
    }

    /// The wire blob of a P-256 public key.
    public static func blob(_ key: P256.Signing.PublicKey) -> [UInt8] {
        string(Array("ecdsa-sha2-nistp256".utf8)) + string(Array("nistp256".utf8)) + string(Array(key.x963Representation))
    }

    /// Sends one message and reads the answer's contents.
    public func request(_ message: [UInt8]) throws -> [UInt8] {
        let frame = Self.string(message)
        var sent = 0
        while sent < frame.count {
            let count = frame.withUnsafeBytes { send(fd, $0.baseAddress! + sent, frame.count - sent, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw BenchmarkFailure("the SSH agent closed the connection") }
            sent += count
        }
        let header = try read(4)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length > 0, length <= 256 * 1024 else { throw BenchmarkFailure("the SSH agent sent a frame of \(length) bytes") }
        return try read(length)
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var have = 0
        while have < count {
            let got = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + have, count - have, 0) }
            guard got > 0 else { throw BenchmarkFailure("the SSH agent closed the connection") }
            have += got
        }
        return bytes
    }

    /// Adds `key` with `comment` (`SSH_AGENTC_ADD_IDENTITY`).
    public func add(_ key: P256.Signing.PrivateKey, comment: String) throws {
        let message =
            [17] + Self.string(Array("ecdsa-sha2-nistp256".utf8)) + Self.string(Array("nistp256".utf8))
            + Self.string(Array(key.publicKey.x963Representation)) + Self.mpint(Array(key.rawRepresentation)) + Self.string(Array(comment.utf8))
        guard try request(message) == [6] else { throw BenchmarkFailure("the SSH agent refused the key") }
    }

    /// The listed keys' blobs (`SSH_AGENTC_REQUEST_IDENTITIES`).
    public func identities() throws -> [[UInt8]] {
        let answer = try request([11])
        guard answer.first == 12, answer.count >= 5 else { throw BenchmarkFailure("the SSH agent did not list its keys") }
        var offset = 5
        var blobs: [[UInt8]] = []
        func field() throws -> [UInt8] {
            guard offset + 4 <= answer.count else { throw BenchmarkFailure("a truncated identity list") }
            let length = Int(answer[offset]) << 24 | Int(answer[offset + 1]) << 16 | Int(answer[offset + 2]) << 8 | Int(answer[offset + 3])
            guard offset + 4 + length <= answer.count else { throw BenchmarkFailure("a truncated identity list") }
            defer { offset += 4 + length }
            return Array(answer[offset + 4..<offset + 4 + length])
        }
        while offset < answer.count {
            blobs.append(try field())
            _ = try field()
        }
        return blobs
    }

    /// Asks for a signature of `data` by the key `blob`; fails unless the agent signs.
    public func sign(blob: [UInt8], data: [UInt8]) throws {
        let answer = try request([13] + Self.string(blob) + Self.string(data) + [0, 0, 0, 0])
        guard answer.first == 14 else { throw BenchmarkFailure("the SSH agent did not sign") }
    }
}

/// A software TPM 2.0 (`swtpm`) on a free pair of loopback ports, for the TPM-resident keys' benchmark.
public final class SoftwareTPMProcess: @unchecked Sendable {
    private let process: Process
    private let state: String
    /// The TCTI configuration keychaind takes in `KEYCHAIN_TPM_TCTI`.
    public let tcti: String

    /// Starts swtpm; nil when it is not installed.
    public init?() throws {
        guard let executable = ["/usr/bin/swtpm", "/usr/local/bin/swtpm"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        state = NSTemporaryDirectory() + "bench-swtpm-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        for _ in 0..<20 {
            let port = Int.random(in: 20000...60000) & ~1
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "socket", "--tpm2", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1", "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                "--tpmstate", "dir=\(state)", "--flags", "startup-clear",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline, !Self.accepts(port: port) { usleep(20_000) }
            if process.isRunning, Self.accepts(port: port) {
                self.process = process
                tcti = "swtpm:host=127.0.0.1,port=\(port)"
                return
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        throw BenchmarkFailure("swtpm did not start on any of 20 ports")
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Stops swtpm and removes its state.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: state)
    }
}
