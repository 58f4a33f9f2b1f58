import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of the `security` binary produced.
struct ToolResult {
    var status: Int32
    var stdoutData: Data
    var stderrData: Data

    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }
}

/// Why the tool could not be run at all.
struct ToolRunnerError: Error, CustomStringConvertible {
    var description: String
}

/// A fresh, private keychain for one test: its own `KEYCHAIN_HOME` in a new temporary folder, removed by
/// ``withKeychain(_:)`` when the test ends.
struct Sandbox {
    /// The temporary folder holding the keychain and the captured output.
    let root: String
    /// `KEYCHAIN_HOME` for every run.
    let home: String
    /// The built `security` executable.
    let tool: String

    /// Where the executable lives: beside the test bundle, in the build products folder.
    static func locateTool() throws -> String {
        var folders: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append(URL(fileURLWithPath: exe).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        for folder in folders {
            let candidate = folder + "/security"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ToolRunnerError(description: "The built `security` executable was not found in \(folders). Build it first: swift build --build-tests.")
    }

    init() throws {
        tool = try Sandbox.locateTool()
        root = FileManager.default.temporaryDirectory.path + "/security-tool-tests-" + UUID().uuidString
        home = root + "/keychain"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    /// The environment of every run: only what the tool needs, so the developer's own keychain and
    /// entitlements are never touched.
    func environment(_ extra: [String: String]) -> [String: String] {
        var env = ["KEYCHAIN_HOME": home, "HOME": root, "LANG": "C"]
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        env.merge(extra) { _, new in new }
        return env
    }

    /// Runs `security <arguments>` with no standard input (so a password prompt fails at once) and returns
    /// its exit status and output. A run that takes longer than `timeout` is killed and reported.
    @discardableResult
    /// With `detached`, the tool runs in a session of its own (through `setsid -w`), so it has no controlling
    /// terminal even when the tests are run from one.
    func run(_ arguments: [String], environment extra: [String: String] = [:], detached: Bool = false,
             timeout: TimeInterval = 30) throws -> ToolResult {
        let setsid = "/usr/bin/setsid"
        if detached, FileManager.default.isExecutableFile(atPath: setsid) {
            return try launch(setsid, ["-w", tool] + arguments, environment: extra, timeout: timeout)
        }
        return try launch(tool, arguments, environment: extra, timeout: timeout)
    }

    /// Runs any executable the way ``run(_:environment:detached:timeout:)`` runs the tool.
    /// `input`, when given, is the standard input (else `/dev/null`).
    func launch(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                input data: Data? = nil, timeout: TimeInterval = 30) throws -> ToolResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment(extra)
        let id = UUID().uuidString
        let outPath = root + "/\(id).out"
        let errPath = root + "/\(id).err"
        guard FileManager.default.createFile(atPath: outPath, contents: nil),
              FileManager.default.createFile(atPath: errPath, contents: nil) else {
            throw ToolRunnerError(description: "Cannot create output files in \(root).")
        }
        var inputPath = "/dev/null"
        if let data {
            inputPath = root + "/\(id).in"
            guard FileManager.default.createFile(atPath: inputPath, contents: data) else {
                throw ToolRunnerError(description: "Cannot create the input file in \(root).")
            }
        }
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer {
            try? input.close()
            try? output.close()
            try? errors.close()
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL) // not SIGTERM: children of the test runner may inherit it blocked
                process.waitUntilExit()
                throw ToolRunnerError(description: "\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
            }
            usleep(1000)
        }
        process.waitUntilExit()
        return ToolResult(status: process.terminationStatus,
                          stdoutData: FileManager.default.contents(atPath: outPath) ?? Data(),
                          stderrData: FileManager.default.contents(atPath: errPath) ?? Data())
    }

    /// Runs `security` and expects it to succeed silently (the add verbs print nothing).
    func succeed(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try run(arguments)
        #expect(result.status == 0, "security \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout == "", sourceLocation: sourceLocation)
        #expect(result.stderr == "", sourceLocation: sourceLocation)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Runs `body` with a fresh keychain and removes it afterwards.
func withKeychain(_ body: (Sandbox) throws -> Void) throws {
    let sandbox = try Sandbox()
    defer { sandbox.remove() }
    try body(sandbox)
}
