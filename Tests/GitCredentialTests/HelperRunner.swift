import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of a program produced.
struct RunResult {
    /// The exit status.
    var status: Int32
    /// Standard output as text.
    var stdout: String
    /// Standard error as text.
    var stderr: String
}

/// Why a program could not be run.
struct RunnerError: Error, CustomStringConvertible {
    /// What went wrong.
    var description: String
}

/// A fresh temporary folder with a private keychain (`KEYCHAIN_HOME`, in-process: `KEYCHAIN_DAEMON_SOCKET=off`)
/// and the built `git-credential-keychain`; ``remove()`` deletes the folder.
struct HelperSandbox {
    /// The temporary folder.
    let root: String
    /// `KEYCHAIN_HOME` of every run.
    let keychainHome: String
    /// The absolute path of the built helper.
    let helper: String

    /// The built helper: beside the test executable, in the build products folder.
    static func locateHelper() throws -> String {
        var folders: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append(URL(fileURLWithPath: exe).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        for folder in folders {
            let candidate = folder + "/git-credential-keychain"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw RunnerError(description: "git-credential-keychain was not found in \(folders); run swift build --build-tests first.")
    }

    init() throws {
        helper = try HelperSandbox.locateHelper()
        root = FileManager.default.temporaryDirectory.path + "/git-credential-tests-" + UUID().uuidString
        keychainHome = root + "/keychain"
        try FileManager.default.createDirectory(atPath: root + "/home", withIntermediateDirectories: true)
    }

    /// The environment of every run: a private HOME and keychain, nothing of the developer's.
    func environment(_ extra: [String: String?] = [:]) -> [String: String] {
        var env = [
            "KEYCHAIN_HOME": keychainHome, "KEYCHAIN_DAEMON_SOCKET": "off", "HOME": root + "/home", "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// Runs the helper with `operation` as argv[1] and `input` on standard input.
    func helper(_ operation: String?, _ input: String) throws -> RunResult {
        try run(helper, operation.map { [$0] } ?? [], input: Data(input.utf8))
    }

    /// Runs the helper with raw bytes on standard input.
    func helper(_ operation: String, bytes: Data) throws -> RunResult {
        try run(helper, [operation], input: bytes)
    }

    /// Runs `executable` with `input` as its standard input, killing it after `timeout` seconds.
    func run(_ executable: String, _ arguments: [String], input: Data = Data(), environment extra: [String: String?] = [:],
             directory: String? = nil, timeout: TimeInterval = 20) throws -> RunResult {
        let id = UUID().uuidString
        let inPath = root + "/\(id).in", outPath = root + "/\(id).out", errPath = root + "/\(id).err"
        guard FileManager.default.createFile(atPath: inPath, contents: input),
              FileManager.default.createFile(atPath: outPath, contents: nil),
              FileManager.default.createFile(atPath: errPath, contents: nil) else {
            throw RunnerError(description: "cannot create files in \(root)")
        }
        let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
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
        process.environment = environment(extra)
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
                throw RunnerError(description: "\(executable) \(arguments) did not finish within \(timeout) s")
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        return RunResult(status: process.terminationStatus,
                         stdout: String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self),
                         stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }

    /// Deletes the folder.
    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}
