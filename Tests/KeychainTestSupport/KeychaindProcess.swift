import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real keychaind from the build products, serving the keychain its environment names and listening on
/// `socketPath`. Started at init, which returns once it says `keychaind: ready`; stopped with SIGTERM by
/// ``stop()`` or at deinit, or killed with ``kill()``.
public final class KeychaindProcess: @unchecked Sendable {
    /// Where it listens.
    public let socketPath: String
    /// The running keychaind.
    public let process = Process()
    private let errors = Pipe()
    /// Shared with the thread that reads stderr, which must not keep the daemon object alive (its deinit stops it).
    private final class Log: @unchecked Sendable {
        let lock = NSLock()
        var text = ""
        let ready = DispatchSemaphore(value: 0)
    }
    private let log = Log()
    private let lock = NSLock()
    private var stopped = false

    /// Starts keychaind with `environment` (its `KEYCHAIN_HOME` is the keychain), on `socketPath`, with extra
    /// `arguments`; `commandPrefix` runs it through another program (`setpriv …` to run it as another user).
    public init(socketPath: String, environment: [String: String], arguments: [String] = [], commandPrefix: [String] = []) throws {
        self.socketPath = socketPath
        let command = commandPrefix + [try BuiltProducts.path(of: "keychaind"), "--foreground", "--socket", socketPath] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = environment
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
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestProcessError("keychaind did not start:\n\(output)")
        }
    }

    /// The daemon's process ID.
    public var pid: Int32 { process.processIdentifier }

    /// What the daemon wrote to stderr so far.
    public var output: String { log.lock.withLock { log.text } }

    /// The environment that sends a program's keychain calls to this daemon.
    public var environment: [String: String] { ["KEYCHAIN_DAEMON_SOCKET": socketPath] }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        guard lock.withLock({ () -> Bool in defer { stopped = true }; return !stopped }) else { return process.terminationStatus }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL, then waits for the process to be gone.
    public func kill() {
        lock.withLock { stopped = true }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}
