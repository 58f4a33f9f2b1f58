import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// A software TPM 2.0 (`swtpm`), one per "machine": its own state folder, so its own owner seed.
public final class SoftwareTPM: @unchecked Sendable {
    /// The installed swtpm, if any.
    public static let executable = ["/usr/bin/swtpm", "/usr/local/bin/swtpm"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// Whether swtpm is installed.
    public static var available: Bool { executable != nil }

    let process: Process
    /// Its state folder.
    public let state: String
    /// The TPM, for the engine.
    package let device: TPMDevice
    /// Its TCTI configuration, for `KEYCHAIN_TPM_TCTI`.
    public var tcti: String { device.tcti }

    /// Starts swtpm on a free pair of TCP ports (server P, control P + 1) and waits until it answers.
    public init() throws {
        guard let executable = Self.executable else { throw TestProcessError("swtpm is not installed") }
        state = FileManager.default.temporaryDirectory.appendingPathComponent("swtpm-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        for _ in 0..<20 {
            let port = Int.random(in: 20000...60000) & ~1
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "socket", "--tpm2", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                "--tpmstate", "dir=\(state)", "--flags", "startup-clear",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if Self.waitForListener(port: port, process: process) {
                self.process = process
                device = TPMDevice(tcti: "swtpm:host=127.0.0.1,port=\(port)")
                return
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: state)
        throw TestProcessError("swtpm did not start on any of 20 ports")
    }

    /// True once something accepts on `port`; false if swtpm exits first (the port was taken) or after 10 s.
    private static func waitForListener(port: Int, process: Process) -> Bool {
        for _ in 0..<200 {
            guard process.isRunning else { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected =
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                } == 0
            close(fd)
            if connected { return true }
            usleep(50_000)
        }
        return false
    }

    /// Stops the TPM, as if it were taken out of the machine (its state stays until deinit).
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        // swtpm waits for its next command before it looks at SIGTERM; it holds nothing that needs a clean stop.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: state)
    }
}
