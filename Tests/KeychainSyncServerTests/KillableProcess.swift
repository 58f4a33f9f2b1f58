#if Network
import Foundation
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A program a test starts and kills with SIGKILL at a moment of its choosing: its standard output and error go to
/// files, which the test reads while it runs (whole lines only: a line cut by the kill is not one).
final class KillableProcess: @unchecked Sendable {
    let process = Process()
    /// Where standard output goes.
    let outputPath: String
    /// Where standard error goes.
    let errorPath: String

    /// The complete lines of standard output read so far, and the bytes after them.
    private var readLines: [Substring] = []
    private var readOffset: UInt64 = 0
    private var partial = Data()

    /// Starts `executable` with `arguments`: standard input `/dev/null`, standard output into `outputPath`,
    /// standard error into `outputPath` + `.err`.
    init(_ executable: String, _ arguments: [String], outputPath: String) throws {
        self.outputPath = outputPath
        errorPath = outputPath + ".err"
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
            FileManager.default.createFile(atPath: errorPath, contents: nil)
        else {
            throw TestProcessError("Cannot create \(outputPath) for a program's output.")
        }
        let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/null"))
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        defer {
            try? stdin.close()
            try? stdout.close()
            try? stderr.close()
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
    }

    /// The complete lines written to standard output so far (read from where the last call stopped).
    var lines: [Substring] {
        guard let handle = FileHandle(forReadingAtPath: outputPath) else { return readLines }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: readOffset)) != nil, let more = try? handle.readToEnd(), !more.isEmpty else { return readLines }
        readOffset += UInt64(more.count)
        partial.append(more)
        if let end = partial.lastIndex(of: UInt8(ascii: "\n")) {
            let text = String(decoding: partial[partial.startIndex..<end], as: UTF8.self)
            readLines += text.split(separator: "\n", omittingEmptySubsequences: false)
            partial = Data(partial[(end + 1)...])
        }
        return readLines
    }

    /// The complete lines written to standard error so far.
    var errorLines: [Substring] { Self.lines(errorPath) }

    static func lines(_ path: String) -> [Substring] {
        let text = String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// Whether it still runs.
    var isRunning: Bool { process.isRunning }

    /// Waits until a line of standard output (or of standard error, `inErrors`) contains `text`, and returns it.
    /// - Throws: when the program ends first, or after `timeout`.
    func waitForLine(containing text: String, inErrors: Bool = false, timeout: Duration = .seconds(30)) async throws -> Substring {
        let deadline = ContinuousClock.now + timeout
        while true {
            let running = isRunning
            if let line = (inErrors ? errorLines : lines).last(where: { $0.contains(text) }) { return line }
            guard running else {
                throw TestProcessError(
                    "\(process.executableURL?.lastPathComponent ?? "?") ended (status \(process.terminationStatus)) before saying \"\(text)\": \(lines.suffix(3)) \(errorLines.suffix(3))")
            }
            guard ContinuousClock.now < deadline else {
                throw TestProcessError("\(process.executableURL?.lastPathComponent ?? "?") did not say \"\(text)\" within \(timeout): \(lines.suffix(3))")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Kills it with SIGKILL and waits until it is gone.
    func kill() async throws {
        if isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
        try await waitForExit(timeout: .seconds(10))
    }

    /// Waits for it to end; returns its exit status.
    @discardableResult
    func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else {
                _ = Glibc.kill(process.processIdentifier, SIGKILL)
                throw TestProcessError("\(process.executableURL?.lastPathComponent ?? "?") did not end within \(timeout): \(lines.suffix(3))")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
#endif
