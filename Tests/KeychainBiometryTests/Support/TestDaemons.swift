import Foundation
import KeychainDBus

#if canImport(Glibc)
import Glibc
#endif

/// What the machine has for these tests.
enum Machine {
    static let dbusDaemon = "/usr/bin/dbus-daemon"
    static let fprintd = "/usr/libexec/fprintd"
    static let python = "/usr/bin/python3"
    /// python-dbusmock's polkitd template (Debian's python3-dbusmock), which fprintd's own tests use as polkit.
    static let polkitTemplate = "/usr/lib/python3/dist-packages/dbusmock/templates/polkitd.py"

    static var hasDBusDaemon: Bool { FileManager.default.isExecutableFile(atPath: dbusDaemon) }
    static var hasFprintd: Bool {
        hasDBusDaemon && FileManager.default.isExecutableFile(atPath: fprintd)
            && FileManager.default.isExecutableFile(atPath: python) && FileManager.default.fileExists(atPath: polkitTemplate)
    }
}

struct TestSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A temporary directory, removed at deinit.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/keychain-biometry-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw TestSetupError("mkdtemp failed: errno \(errno)")
        }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A program started for a test with posix_spawn, its output in a log file; stopped with SIGTERM (then SIGKILL after
/// 3 s) by ``stop()`` or at deinit.
///
/// Not Foundation's `Process`: it spawns from a Dispatch thread whose signals are blocked, the child inherits that
/// mask, and dbus-daemon and fprintd then never see SIGTERM. Here the child starts with no signal blocked and the
/// usual dispositions.
final class ChildProcess: @unchecked Sendable {
    let name: String
    let logPath: String
    let pid: pid_t
    private let lock = NSLock()
    private var exited = false

    init(_ name: String, executable: String, arguments: [String], environment: [String: String], logPath: String) throws {
        self.name = name
        self.logPath = logPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw TestSetupError("cannot start \(executable): errno \(result)") }
        pid = child
    }

    /// Whether it has not exited yet (reaping it if it has).
    var isRunning: Bool {
        lock.withLock {
            guard !exited else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exited = true }
            return !exited
        }
    }

    /// What it wrote so far.
    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        guard isRunning else { return }
        kill(pid, SIGKILL)
        lock.withLock {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            exited = true
        }
    }

    deinit { stop() }
}

/// Retries `body` every 20 ms until it returns a value or `timeout` passes; the last error is rethrown.
func poll<T>(for timeout: Duration, _ what: String, _ body: () throws -> T?) throws -> T {
    let deadline = ContinuousClock.now + timeout
    var lastError: (any Error)?
    while ContinuousClock.now < deadline {
        do {
            if let value = try body() { return value }
        } catch {
            lastError = error
        }
        usleep(20_000)
    }
    throw TestSetupError("\(what) within \(timeout)" + (lastError.map { ": \($0)" } ?? ""))
}

/// A private message bus: a real dbus-daemon with its own configuration, listening on a socket in a temporary
/// directory, without service activation, where every connection may own any name and send anything (a
/// permissive system bus).
final class PrivateBus: Sendable {
    let directory: TemporaryDirectory
    let address: String
    let daemon: ChildProcess

    init() throws {
        directory = try TemporaryDirectory()
        let socket = directory.path + "/bus"
        address = "unix:path=" + socket
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory.path + "/bus.conf"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        daemon = try ChildProcess(
            "dbus-daemon", executable: Machine.dbusDaemon,
            arguments: ["--config-file=\(configPath)", "--nofork", "--nosyslog"],
            environment: ["PATH": "/usr/bin:/bin"], logPath: directory.path + "/dbus-daemon.log")
        let address = self.address
        _ = try poll(for: .seconds(10), "dbus-daemon did not accept connections") {
            try DBusConnection(address: address, timeout: .seconds(1))
        }
    }

    deinit { daemon.stop() }

    /// A new connection to this bus.
    func connect(timeout: Duration = .seconds(5)) throws -> DBusConnection {
        try DBusConnection(address: address, timeout: timeout)
    }

    /// Waits until `name` has an owner on this bus.
    func waitForName(_ name: String, timeout: Duration = .seconds(15)) throws {
        let connection = try connect()
        _ = try poll(for: timeout, "\(name) did not appear on the bus") { try connection.nameOwner(of: name) }
    }
}

/// The real fprintd on a ``PrivateBus``, with libfprint's virtual device (`FP_VIRTUAL_DEVICE`, a Unix socket taking
/// text commands, as fprintd's and libfprint's own tests use it), prints stored in a temporary directory, and
/// python-dbusmock's polkitd template as polkit, told to allow everything (as fprintd's tests do).
final class FprintdUnderTest: Sendable {
    let bus: PrivateBus
    let polkit: ChildProcess
    let fprintd: ChildProcess
    let device: VirtualFingerprintDevice

    init() throws {
        bus = try PrivateBus()
        let directory = bus.directory.path
        var environment = ["PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "LANG": "C.UTF-8"]
        polkit = try ChildProcess(
            "polkitd (dbusmock)", executable: Machine.python,
            arguments: ["-m", "dbusmock", "--system", "--template", "polkitd"],
            environment: environment, logPath: directory + "/polkitd.log")
        try bus.waitForName("org.freedesktop.PolicyKit1")
        try Self.setPolkit(on: bus, allowing: true)

        let state = directory + "/state"
        let runtime = directory + "/run"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        device = VirtualFingerprintDevice(socketPath: directory + "/virtual-device.socket")
        environment["FP_VIRTUAL_DEVICE"] = device.socketPath
        environment["FP_DRIVERS_WHITELIST"] = "virtual_device"
        environment["FP_DRIVERS_ALLOWLIST"] = "virtual_device"
        environment["STATE_DIRECTORY"] = state
        environment["RUNTIME_DIRECTORY"] = runtime
        environment["G_MESSAGES_DEBUG"] = "all"
        fprintd = try ChildProcess(
            "fprintd", executable: Machine.fprintd, arguments: ["--no-timeout"],
            environment: environment, logPath: directory + "/fprintd.log")
        try bus.waitForName("net.reactivated.Fprint")
    }

    /// Tells the polkit stand-in to allow (or refuse) every action.
    func setPolkit(allowing: Bool) throws {
        try Self.setPolkit(on: bus, allowing: allowing)
    }

    private static func setPolkit(on bus: PrivateBus, allowing: Bool) throws {
        try bus.connect().call(
            destination: "org.freedesktop.PolicyKit1", path: "/org/freedesktop/PolicyKit1/Authority",
            interface: "org.freedesktop.DBus.Mock", member: "AllowUnknown", [.bool(allowing)])
    }

    /// The default device's object path.
    func devicePath(_ connection: DBusConnection) throws -> String {
        let reply = try connection.call(
            destination: "net.reactivated.Fprint", path: "/net/reactivated/Fprint/Manager",
            interface: "net.reactivated.Fprint.Manager", member: "GetDefaultDevice")
        guard let path = reply.first?.string else { throw TestSetupError("GetDefaultDevice answered \(reply)") }
        return path
    }

    /// Enrols `finger` for `user` through fprintd, scanning the virtual print `print` for every stage.
    func enrol(_ finger: String, print: String, user: String) throws {
        let connection = try bus.connect()
        let path = try devicePath(connection)
        func device(_ member: String, _ arguments: [DBusValue] = []) throws {
            try connection.call(
                destination: "net.reactivated.Fprint", path: path, interface: "net.reactivated.Fprint.Device",
                member: member, arguments)
        }
        let stages = try connection.property(
            destination: "net.reactivated.Fprint", path: path,
            interface: "net.reactivated.Fprint.Device", name: "num-enroll-stages")
        guard case .int32(let count) = stages, count > 0, count < 100 else { throw TestSetupError("num-enroll-stages is \(stages)") }
        let owner = try connection.nameOwner(of: "net.reactivated.Fprint")
        let statuses = try connection.subscribe(
            sender: owner, path: path, interface: "net.reactivated.Fprint.Device",
            member: "EnrollStatus")
        try device("Claim", [.string(user)])
        defer { try? device("Release") }
        // The virtual device listens once claimed (opened); the scans wait in its queue for the enrolment.
        for _ in 0..<count { try self.device.send("SCAN \(print)") }
        try device("EnrollStart", [.string(finger)])
        defer { try? device("EnrollStop") }
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            guard let signal = try connection.nextSignal(from: statuses, until: deadline) else {
                throw TestSetupError("enrolment of \(finger) did not finish:\n\(fprintd.output.suffix(3000))")
            }
            guard let result = signal.arguments.first?.string, let done = signal.arguments.last?.bool else { continue }
            if done {
                guard result == "enroll-completed" else { throw TestSetupError("enrolment of \(finger) ended with \(result)") }
                return
            }
        }
    }

    deinit {
        fprintd.stop()
        polkit.stop()
    }
}

/// libfprint's virtual device (`virtual_device` driver): a Unix socket, listened on while the device is open (claimed),
/// that takes one text command per connection (`SCAN <print id>`, `RETRY <code>`, `ERROR <code>`, …) and closes
/// it once read. A new connection before the last was read drops the last, so ``send(_:timeout:)`` waits for the
/// close.
final class VirtualFingerprintDevice: Sendable {
    let socketPath: String

    init(socketPath: String) { self.socketPath = socketPath }

    /// Sends `command`, retrying the connection until the device listens, and waits until it was read.
    func send(_ command: String, timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if try sendOnce(command, deadline: deadline) { return }
            guard ContinuousClock.now < deadline else {
                throw TestSetupError("the virtual fingerprint device at \(socketPath) did not take \(command)")
            }
            usleep(20_000)
        }
    }

    /// One attempt: false when nothing listens yet.
    private func sendOnce(_ command: String, deadline: ContinuousClock.Instant) throws -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSetupError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestSetupError("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in pathBytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected != 0 {
            if errno == ENOENT || errno == ECONNREFUSED { return false }
            throw TestSetupError("connect \(socketPath): errno \(errno)")
        }
        let bytes = Array(command.utf8)
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw TestSetupError("write to the virtual device: errno \(errno)") }
            sent += written
        }
        // The device closes the connection once it has read the command.
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw TestSetupError("the virtual device did not read \(command)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(1, min(1000, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)))
            let ready = Glibc.poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno != EINTR { throw TestSetupError("poll: errno \(errno)") }
            if ready <= 0 { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return true }
        }
    }
}

/// Runs `body` on a new thread (it blocks) while `alongside` runs on this one, and waits for `body` at most
/// `timeout`.
func onThread<T: Sendable>(
    timeout: Duration, _ body: @escaping @Sendable () -> T,
    alongside: () throws -> Void = {}
) throws -> T {
    let box = ThreadResult<T>()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let value = body()
        box.lock.withLock { box.value = value }
        done.signal()
    }
    var sideError: (any Error)?
    do { try alongside() } catch { sideError = error }
    let (seconds, attoseconds) = timeout.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    let finished = done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    if let sideError { throw sideError }
    guard finished, let value = box.lock.withLock({ box.value }) else {
        throw TestSetupError("the call did not return within \(timeout)")
    }
    return value
}

/// A value handed from a thread to its waiter.
private final class ThreadResult<T: Sendable>: @unchecked Sendable {
    let lock = NSLock()
    var value: T?
}
