import Foundation
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
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    try registerProgram(engine, path: exe, groups: groups, applicationIdentifier: applicationIdentifier)
}

/// Registers the executable at `path` (as it is now) for `groups`.
func registerProgram(_ engine: KeychainEngine, path: String, groups: [String], applicationIdentifier: String? = nil) throws {
    let entry = AppRegistration(program: .executable(path: path, sha256: try FileDigest.sha256Hex(ofFileAt: path)),
                                applicationIdentifier: applicationIdentifier, accessGroups: groups)
    try engine.updateAppRegistry { $0.register(entry) }
}

/// A real keychaind serving `home`, listening on a socket in its own temporary folder. Started at init
/// (returning once it says it is ready), stopped with SIGTERM by ``stop()`` or at deinit.
final class DaemonProcess: @unchecked Sendable {
    let home: String
    let socketPath: String
    let process = Process()
    private let errors = Pipe()
    /// Shared with the thread that reads stderr, which must not keep the daemon object alive (its deinit
    /// is what stops the daemon).
    private final class Log: @unchecked Sendable {
        let lock = NSLock()
        var text = ""
        let ready = DispatchSemaphore(value: 0)
    }
    private let log = Log()
    private let lock = NSLock()
    private var stopped = false
    /// This test's client of the daemon.
    let client: DaemonClient

    /// - Parameter commandPrefix: a program that runs keychaind (`setpriv …` to run it as another user).
    init(home: String, socketPath: String? = nil, arguments: [String] = [], environment extra: [String: String] = [:],
         commandPrefix: [String] = []) throws {
        self.home = home
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kd-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        self.socketPath = socketPath ?? folder + "/d.sock"
        client = DaemonClient(socketPath: self.socketPath)
        let daemon = productsDirectory().appendingPathComponent("keychaind")
        let command = commandPrefix + [daemon.path, "--foreground", "--socket", self.socketPath] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var env = baseEnvironment(home: home)
        for (k, v) in extra { env[k] = v }
        process.environment = env
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reader = errors.fileHandleForReading
        let log = self.log
        Thread.detachNewThread {
            var signalled = false
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                log.lock.withLock { log.text += String(decoding: chunk, as: UTF8.self) }
                if !signalled, log.lock.withLock({ log.text.contains("keychaind: ready") }) {
                    signalled = true
                    log.ready.signal()
                }
            }
            if !signalled { log.ready.signal() }
        }
        guard log.ready.wait(timeout: .now() + 60) == .success, output.contains("keychaind: ready") else {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DaemonStartFailure(log: output)
        }
    }

    /// What the daemon wrote to stderr so far.
    var output: String { log.lock.withLock { log.text } }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard lock.withLock({ () -> Bool in defer { stopped = true }; return !stopped }) else { return process.terminationStatus }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL, then waits for the process to be gone.
    func kill() {
        lock.withLock { stopped = true }
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

struct DaemonStartFailure: Error, CustomStringConvertible {
    var log: String
    var description: String { "keychaind did not start:\n\(log)" }
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

struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the test helper to completion.
func runHelper(_ args: [String], environment: [String: String]) throws -> ProcessResult {
    let process = Process()
    process.executableURL = productsDirectory().appendingPathComponent("keychain-test-helper")
    process.arguments = args
    process.environment = environment
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: stderr, as: UTF8.self))
}

func baseEnvironment(home: String) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["KEYCHAIN_HOME"] = home
    env.removeValue(forKey: "KEYCHAIN_ENTITLEMENTS")
    env.removeValue(forKey: "KEYCHAIN_DAEMON_SOCKET")
    return env
}
