import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of a program produced.
typealias RunResult = ProgramRun

/// A fresh temporary folder with a private keychain (`KEYCHAIN_HOME`, in-process: `KEYCHAIN_DAEMON_SOCKET=off`)
/// and the built `git-credential-keychain`; ``remove()`` deletes the folder.
struct HelperSandbox {
    /// The temporary folder.
    let root: String
    /// `KEYCHAIN_HOME` of every run.
    let keychainHome: String
    /// The absolute path of the built helper.
    let helper: String

    init() throws {
        helper = try BuiltProducts.path(of: "git-credential-keychain")
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
    func run(
        _ executable: String, _ arguments: [String], input: Data = Data(), environment extra: [String: String?] = [:],
        directory: String? = nil, timeout: TimeInterval = 20
    ) throws -> RunResult {
        try ProgramRun.run(
            executable, arguments, environment: environment(extra), input: input, directory: directory,
            scratch: root, timeout: timeout)
    }

    /// Deletes the folder.
    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}
