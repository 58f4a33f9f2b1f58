import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private session bus for a test: a real `dbus-daemon --session --print-address --nofork --nopidfile` (the
/// system's session configuration: any connection may own any name), killed at deinit.
///
/// Killed with SIGKILL: Foundation's `Process` starts children with the signals of its spawning thread blocked,
/// so dbus-daemon might never see SIGTERM.
public final class PrivateSessionBus: Sendable {
    /// Where dbus-daemon is expected.
    public static let daemonPath = "/usr/bin/dbus-daemon"
    /// Whether this machine has dbus-daemon (Debian package dbus-daemon).
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: daemonPath) }

    /// The bus's address, as dbus-daemon printed it (`unix:path=/tmp/dbus-…,guid=…`).
    public let address: String
    /// The daemon's process.
    private let process: Process

    /// Starts dbus-daemon and reads the address it prints once it listens (within `timeout`).
    ///
    /// With `serviceDirectory`, the bus activates the services whose `.service` files are there (and only those),
    /// starting them with `environment`.
    public init(timeout: Duration = .seconds(10), serviceDirectory: String? = nil, environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.daemonPath)
        var arguments = ["--print-address", "--nofork", "--nopidfile", "--nosyslog"]
        if let serviceDirectory {
            let config = serviceDirectory + "/bus.conf"
            try Data(
                """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>session</type>
                  <listen>unix:tmpdir=/tmp</listen>
                  <servicedir>\(serviceDirectory)</servicedir>
                  <policy context="default">
                    <allow send_destination="*" eavesdrop="true"/>
                    <allow eavesdrop="true"/>
                    <allow own="*"/>
                  </policy>
                </busconfig>

                """.utf8
            ).write(to: URL(fileURLWithPath: config))
            arguments.append("--config-file=" + config)
        } else {
            arguments.append("--session")
        }
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { _, given in given }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        let descriptor = output.fileHandleForReading.fileDescriptor
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var byte: UInt8 = 0
        while ContinuousClock.now < deadline {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 100)
            if polled < 0 && errno != EINTR { break }
            if polled <= 0 { continue }
            let count = read(descriptor, &byte, 1)
            if count <= 0 { break }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        let address = String(decoding: line, as: UTF8.self)
        guard address.hasPrefix("unix:") else {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestProcessError("dbus-daemon printed no address (got \(address.debugDescription))")
        }
        self.address = address
    }

    /// Kills the bus daemon (SIGKILL), as a session ending with a crash does, and waits until it is gone.
    public func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}
