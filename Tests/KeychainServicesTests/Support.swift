import Foundation
import KeychainTestSupport
import Testing
@testable import KeychainServices
import KeychainClient
import KeychainCore

/// Where a test's SecItem calls go: the store opened in the test process, or a real keychaind process.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case embedded, daemon
    var testDescription: String { rawValue }
}

/// A real keychain in a fresh temporary folder, with SecItem calls directed to it for the current task:
/// opened in this process, or served by a keychaind started for the test (which registers the test
/// process for every group, and then sees only the groups each call claims).
final class TestKeychain: @unchecked Sendable {
    let home: String
    let engine: KeychainEngine
    var caller: AccessPolicy
    let daemon: DaemonProcess?

    init(_ backend: Backend = .embedded, groups: [String] = ["com.example.app"]) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("keychain-test-\(UUID().uuidString)").path
        engine = try KeychainEngine(location: KeychainLocation(home: home))
        caller = AccessPolicy(groups: groups)
        switch backend {
        case .embedded:
            daemon = nil
        case .daemon:
            try registerTestProcess(engine, groups: ["*"])
            daemon = try DaemonProcess(home: home)
        }
    }

    deinit {
        daemon?.stop()
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Runs `body` with SecItem calls going to this keychain as a caller with `groups` (default: the keychain's).
    func run<T>(groups: [String]? = nil, _ body: () throws -> T) rethrows -> T {
        let policy = groups.map(AccessPolicy.init(groups:)) ?? caller
        let context: any KeychainConnection
        if let daemon {
            context = DaemonKeychain(client: daemon.client, claim: policy.unrestricted ? policy.groups + ["*"] : policy.groups)
        } else {
            context = InProcessKeychain(engine: engine, caller: policy)
        }
        return try KeychainConnector.$override.withValue(context, operation: body)
    }
}

/// Registers this test process's executable with keychaind's program registry in `engine`'s folder.
func registerTestProcess(_ engine: KeychainEngine, groups: [String], applicationIdentifier: String? = nil) throws {
    let (path, sha256) = try testExecutable.get()
    let entry = AppRegistration(program: .executable(path: path, sha256: sha256), applicationIdentifier: applicationIdentifier, accessGroups: groups)
    try engine.updateAppRegistry { $0.register(entry) }
}

/// The test runner's executable and its SHA-256, read once: the debug runner is some 240 MB, and hashing it for
/// every test's keychain took minutes of a run.
let testExecutable = Result<(path: String, sha256: String), any Error> {
    let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    return (path, try FileDigest.sha256Hex(ofFileAt: path))
}

/// Registers the executable at `path` (as it is now) for `groups`.
func registerProgram(_ engine: KeychainEngine, path: String, groups: [String], applicationIdentifier: String? = nil) throws {
    let entry = AppRegistration(
        program: .executable(path: path, sha256: try FileDigest.sha256Hex(ofFileAt: path)),
        applicationIdentifier: applicationIdentifier, accessGroups: groups)
    try engine.updateAppRegistry { $0.register(entry) }
}

/// A real keychaind serving `home`, listening on a socket in its own temporary folder (the shared launcher of
/// KeychainTestSupport), with a client of it for this test.
final class DaemonProcess: @unchecked Sendable {
    let home: String
    let daemon: KeychaindProcess
    /// This test's client of the daemon.
    let client: DaemonClient

    /// - Parameter commandPrefix: a program that runs keychaind (`setpriv …` to run it as another user).
    init(
        home: String, socketPath: String? = nil, arguments: [String] = [], environment extra: [String: String] = [:],
        commandPrefix: [String] = []
    ) throws {
        self.home = home
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kd-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var env = baseEnvironment(home: home)
        for (k, v) in extra { env[k] = v }
        daemon = try KeychaindProcess(socketPath: socketPath ?? folder + "/d.sock", environment: env, arguments: arguments, commandPrefix: commandPrefix)
        client = DaemonClient(socketPath: daemon.socketPath)
    }

    var socketPath: String { daemon.socketPath }
    var process: Process { daemon.process }
    var output: String { daemon.output }
    /// Whether keychaind logs `text` within `timeout`: its log is read as it comes, so a line about what a request
    /// just did may arrive a moment after the answer.
    func logs(_ text: String, timeout: Duration = .seconds(30)) -> Bool { daemon.waitForOutput(containing: text, timeout: timeout) }
    @discardableResult func stop() -> Int32 { daemon.stop() }
    func kill() { daemon.kill() }
}

func genp(_ account: String? = nil, _ service: String? = nil, _ extra: [String: Any] = [:]) -> [String: Any] {
    var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
    if let account { q[kSecAttrAccount as String] = account }
    if let service { q[kSecAttrService as String] = service }
    for (k, v) in extra { q[k] = v }
    return q
}

@discardableResult
func add(_ q: [String: Any]) -> OSStatus { SecItemAdd(q as CFDictionary, nil) }

func copy(_ q: [String: Any]) -> (OSStatus, CFTypeRef?) {
    var item: CFTypeRef?
    let status = SecItemCopyMatching(q as CFDictionary, &item)
    return (status, item)
}

/// The directory holding the built products (the test bundle's own folder).
func productsDirectory() -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
}

/// What one run of a program produced (the shared runner's result).
typealias ProcessResult = ProgramRun

/// Runs the test helper to completion.
func runHelper(_ args: [String], environment: [String: String]) throws -> ProcessResult {
    try runProgram(BuiltProducts.path(of: "keychain-test-helper"), args, environment: environment)
}

/// Runs `path` to completion (killed after five minutes).
func runProgram(_ path: String, _ args: [String], environment: [String: String]) throws -> ProcessResult {
    try ProgramRun.run(path, args, environment: environment, timeout: 300)
}

/// The test helper's private access group: its executable's full path, in its own process as through keychaind.
func helperGroup() throws -> String {
    URL(fileURLWithPath: try BuiltProducts.path(of: "keychain-test-helper")).resolvingSymlinksInPath().path
}

func baseEnvironment(home: String) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["KEYCHAIN_HOME"] = home
    env.removeValue(forKey: "KEYCHAIN_ENTITLEMENTS")
    // In the helper's own process, unless a test names a keychaind.
    env["KEYCHAIN_DAEMON_SOCKET"] = "off"
    return env
}
