import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What one run of a program produced.
public struct ProgramRun: Sendable {
    /// The exit status.
    public var status: Int32
    /// Standard output, as bytes.
    public var stdoutData: Data
    /// Standard error, as bytes.
    public var stderrData: Data

    /// Standard output as text.
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    /// Standard error as text.
    public var stderr: String { String(decoding: stderrData, as: UTF8.self) }

    /// Runs `executable` to completion with exactly `environment`, `input` on standard input (else `/dev/null`, so
    /// a prompt fails at once), and its output captured in files under `scratch` (so a chatty program never blocks
    /// on a pipe). A run longer than `timeout` is killed with SIGKILL (children of the test runner may have SIGTERM
    /// blocked) and reported as an error.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Data? = nil,
        directory: String? = nil, scratch: String = NSTemporaryDirectory(), timeout: TimeInterval = 30
    ) throws -> ProgramRun {
        let id = UUID().uuidString
        let outPath = scratch + "/\(id).out", errPath = scratch + "/\(id).err"
        var inputPath = "/dev/null"
        if input != nil { inputPath = scratch + "/\(id).in" }
        guard FileManager.default.createFile(atPath: outPath, contents: nil),
            FileManager.default.createFile(atPath: errPath, contents: nil),
            input.map({ FileManager.default.createFile(atPath: inputPath, contents: $0) }) ?? true
        else {
            throw TestProcessError("Cannot create the run's files in \(scratch).")
        }
        defer {
            for path in [outPath, errPath] + (input == nil ? [] : [inputPath]) { try? FileManager.default.removeItem(atPath: path) }
        }
        let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer {
            try? stdin.close()
            try? stdout.close()
            try? stderr.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw TestProcessError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
            }
            usleep(1_000)
        }
        process.waitUntilExit()
        return ProgramRun(
            status: process.terminationStatus,
            stdoutData: FileManager.default.contents(atPath: outPath) ?? Data(),
            stderrData: FileManager.default.contents(atPath: errPath) ?? Data())
    }
}

/// Writes a program the tests will run (mode 0755), through a descriptor opened close-on-exec. Foundation's own
/// writes and copies leave theirs inheritable for a moment: a process another test starts in that moment keeps
/// the file open for writing for its whole life, and running the program then fails with `ETXTBSY`.
public func writeExecutable(_ bytes: Data, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
        var offset = 0
        while offset < buffer.count {
            let written = write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            offset += written
        }
    }
    guard fchmod(fd, 0o755) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}

/// Copies a program the tests will run, as ``writeExecutable(_:to:)`` writes one.
public func copyExecutable(from source: String, to path: String) throws {
    try writeExecutable(Data(contentsOf: URL(fileURLWithPath: source)), to: path)
}

/// Runs blocking `body` (a program run, sd-bus client calls, waits) on a thread of its own, off Swift's small
/// cooperative pool: a test that blocks a pool thread for seconds starves the async tests running beside it.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
