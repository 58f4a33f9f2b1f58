import Foundation
import KeychainCore

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
    /// Signalled when the process exits (and again by each ``waitForExit(timeout:)`` that saw it).
    private let exited = DispatchSemaphore(value: 0)
    /// Its standard error as read so far.
    private let log = StandardErrorLog()
    private let lock = NSLock()
    private var stopped = false

    /// Starts keychaind with `environment` (its `KEYCHAIN_HOME` is the keychain), on `socketPath`, with extra
    /// `arguments`; `commandPrefix` runs it through another program (`setpriv …` to run it as another user);
    /// `executable` is another keychaind than the build products' (the multi-call binary under that name).
    public init(
        socketPath: String, environment: [String: String], arguments: [String] = [], commandPrefix: [String] = [],
        executable: String? = nil
    ) throws {
        self.socketPath = socketPath
        let command = commandPrefix + [try executable ?? BuiltProducts.path(of: "keychaind"), "--foreground", "--socket", socketPath] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = environment
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        log.follow(errors, isReady: { $0.contains("keychaind: ready") })
        guard log.waitUntilReady(), output.contains("keychaind: ready") else {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestProcessError("keychaind did not start:\n\(output)")
        }
    }

    /// The daemon's process ID.
    public var pid: Int32 { process.processIdentifier }

    /// What the daemon wrote to stderr so far.
    public var output: String { log.text }

    /// Waits up to `timeout` for keychaind to write `text` to its log; false when it did not.
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(60)) -> Bool {
        log.waitFor(text, timeout: timeout)
    }

    /// The environment that sends a program's keychain calls to this daemon.
    public var environment: [String: String] { ["KEYCHAIN_DAEMON_SOCKET": socketPath] }

    /// Waits up to `timeout` for keychaind to exit on its own; its exit status, or nil while it still runs.
    public func waitForExit(timeout: Duration) -> Int32? {
        guard exited.wait(timeout: .now() + timeout.timeInterval) == .success else { return nil }
        exited.signal()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        guard
            lock.withLock({ () -> Bool in
                defer { stopped = true }; return !stopped
            })
        else { return process.terminationStatus }
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
