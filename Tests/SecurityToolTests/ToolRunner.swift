import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of the `security` binary produced.
typealias ToolResult = ProgramRun

/// A fresh, private keychain for one test: its own `KEYCHAIN_HOME` in a new temporary folder, removed by
/// ``withKeychain(_:)`` when the test ends.
struct Sandbox {
    /// The temporary folder holding the keychain and the captured output.
    let root: String
    /// `KEYCHAIN_HOME` for every run.
    let home: String
    /// The built `security` executable.
    let tool: String
    /// Variables every run gets (the keychaind socket, when the sandbox is served by one).
    var shared: [String: String] = [:]

    init() throws {
        tool = try BuiltProducts.path(of: "security")
        root = FileManager.default.temporaryDirectory.path + "/security-tool-tests-" + UUID().uuidString
        home = root + "/keychain"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    /// The environment of every run: only what the tool needs, so the developer's own keychain and
    /// entitlements are never touched. The keychain is opened in the tool's own process
    /// (`KEYCHAIN_DAEMON_SOCKET=off`) unless the sandbox is served by a keychaind or a run says otherwise (an empty
    /// `KEYCHAIN_DAEMON_SOCKET` lets the tool start its keychaind on demand).
    func environment(_ extra: [String: String]) -> [String: String] {
        var env = ["KEYCHAIN_HOME": home, "HOME": root, "LANG": "C", "KEYCHAIN_DAEMON_SOCKET": "off"]
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        env.merge(shared) { _, new in new }
        env.merge(extra) { _, new in new }
        return env
    }

    /// Runs `security <arguments>` with no standard input (so a password prompt fails at once) and returns
    /// its exit status and output. A run that takes longer than `timeout` is killed and reported.
    @discardableResult
    /// With `detached`, the tool runs in a session of its own (through `setsid -w`), so it has no controlling
    /// terminal even when the tests are run from one.
    func run(
        _ arguments: [String], environment extra: [String: String] = [:], detached: Bool = false,
        timeout: TimeInterval = 30
    ) throws -> ToolResult {
        let setsid = "/usr/bin/setsid"
        if detached, FileManager.default.isExecutableFile(atPath: setsid) {
            return try launch(setsid, ["-w", tool] + arguments, environment: extra, timeout: timeout)
        }
        return try launch(tool, arguments, environment: extra, timeout: timeout)
    }

    /// Runs any executable the way ``run(_:environment:detached:timeout:)`` runs the tool.
    /// `input`, when given, is the standard input (else `/dev/null`).
    func launch(
        _ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
        input data: Data? = nil, timeout: TimeInterval = 30
    ) throws -> ToolResult {
        try ProgramRun.run(executable, arguments, environment: environment(extra), input: data, scratch: root, timeout: timeout)
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

/// Where the tool's calls go: the keychain opened in the tool's own process, or a keychaind serving it (started
/// from the build products beside the tool, so the tool is its admin tool).
enum ToolMode: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inProcess, keychaind
    var testDescription: String { rawValue }
}

/// Runs `body` with a fresh keychain and removes it afterwards; with `.keychaind`, every run of the tool goes
/// through a keychaind serving that keychain.
func withKeychain(_ mode: ToolMode = .inProcess, _ body: (Sandbox) throws -> Void) throws {
    var sandbox = try Sandbox()
    defer { sandbox.remove() }
    guard mode == .keychaind else { return try body(sandbox) }
    let daemon = try KeychaindProcess(socketPath: sandbox.root + "/d.sock", environment: sandbox.daemonEnvironment())
    defer { daemon.stop() }
    sandbox.shared = daemon.environment
    try body(sandbox)
}
