import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// A software TPM 2.0 (`swtpm`), one per "machine": its own state folder, so its own owner seed.
final class SoftwareTPM: @unchecked Sendable {
    static let executable = ["/usr/bin/swtpm", "/usr/local/bin/swtpm"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var available: Bool { executable != nil }

    let process: Process
    let state: String
    let device: TPMDevice

    /// Starts swtpm on a free pair of TCP ports (server P, control P + 1) and waits until it answers.
    init() throws {
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

    deinit {
        // swtpm waits for its next command before it looks at SIGTERM; it holds nothing that needs a clean stop.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: state)
    }
}

/// The device key sealed to the machine's TPM: a copied keychain does not open on another machine.
@Suite struct TPMSealingTests {
    static let caller = AccessPolicy(groups: ["g"])

    final class Folder: @unchecked Sendable {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tpm-keychain-\(UUID().uuidString)").path
        var location: KeychainLocation { KeychainLocation(home: path) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static func addSecret(_ engine: KeychainEngine, _ secret: String) throws {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["acct": .string("alice"), "svce": .string("tpm")]
        q.valueData = Data(secret.utf8)
        _ = try engine.add(q, caller: caller)
    }

    static func secret(_ engine: KeychainEngine) throws -> String? {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["acct": .string("alice"), "svce": .string("tpm")]
        q.returns.data = true
        return try engine.find(q, caller: caller).first?.data.map { String(decoding: $0, as: UTF8.self) }
    }

    static func copyFolder(_ from: String, to: String) throws {
        try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        for name in try FileManager.default.contentsOfDirectory(atPath: from) {
            try FileManager.default.copyItem(atPath: from + "/" + name, toPath: to + "/" + name)
        }
    }

    @Test(.enabled(if: SoftwareTPM.available, "needs swtpm (Debian packages swtpm, swtpm-tools)"))
    func aKeychainSealedToOneTPMOpensOnlyWithThatTPM() throws {
        let machineA = try SoftwareTPM()
        let machineB = try SoftwareTPM()
        let home = Folder()
        let engine = try KeychainEngine(location: home.location, tpm: machineA.device)
        try Self.addSecret(engine, "sealed secret")
        try engine.close()
        // The device key is only in its sealed form; nothing in the folder is the key itself.
        #expect(FileManager.default.fileExists(atPath: home.location.sealedDeviceKeyPath))
        #expect(!FileManager.default.fileExists(atPath: home.location.deviceKeyPath))
        let sealedFile = try Data(contentsOf: URL(fileURLWithPath: home.location.sealedDeviceKeyPath))
        #expect(sealedFile.prefix(7) == Data("SKDK".utf8 + [0, 1, 1]))

        // Same machine, new process: it opens.
        let again = try KeychainEngine(location: home.location, tpm: machineA.device)
        #expect(try Self.secret(again) == "sealed secret")
        try again.close()

        // The whole folder copied to another machine (another TPM): refused, with a message that says why.
        let copy = Folder()
        try Self.copyFolder(home.path, to: copy.path)
        let elsewhere = expectKeychainError(.sealedToAnotherMachine, status: .invalidKeychain) {
            try KeychainEngine(location: copy.location, tpm: machineB.device)
        }
        #expect(elsewhere?.status.rawValue == -25295)
        #expect(elsewhere?.message.contains("sealed to another machine's TPM") == true)
        // … and with no TPM at all.
        let noTPM = expectKeychainError(.sealedToAnotherMachine, status: .invalidKeychain) {
            try KeychainEngine(location: copy.location, tpm: nil)
        }
        #expect(noTPM?.message.contains("no TPM is available") == true)
        // The refused opens left the copy as it was: back on machine A it opens.
        #expect(!FileManager.default.fileExists(atPath: copy.location.deviceKeyPath))
        let back = try KeychainEngine(location: copy.location, tpm: machineA.device)
        #expect(try Self.secret(back) == "sealed secret")
        try back.close()
    }

    @Test(.enabled(if: SoftwareTPM.available, "needs swtpm (Debian packages swtpm, swtpm-tools)"))
    func aKeychainMadeWithoutATPMIsSealedOnItsFirstOpenWithOne() throws {
        let machine = try SoftwareTPM()
        let home = Folder()
        let plain = try KeychainEngine(location: home.location, tpm: nil)
        try Self.addSecret(plain, "from before the TPM")
        try plain.close()
        #expect(FileManager.default.fileExists(atPath: home.location.deviceKeyPath))

        let sealed = try KeychainEngine(location: home.location, tpm: machine.device)
        #expect(try Self.secret(sealed) == "from before the TPM")
        try sealed.close()
        #expect(FileManager.default.fileExists(atPath: home.location.sealedDeviceKeyPath))
        #expect(!FileManager.default.fileExists(atPath: home.location.deviceKeyPath), "the plain device key is gone once sealed")
        // From now on the TPM is needed.
        expectKeychainError(.sealedToAnotherMachine, status: .invalidKeychain) { try KeychainEngine(location: home.location, tpm: nil) }
    }

    @Test(.enabled(if: SoftwareTPM.available, "needs swtpm (Debian packages swtpm, swtpm-tools)"))
    func anAlteredSealedKeyIsRefused() throws {
        let machine = try SoftwareTPM()
        let home = Folder()
        try KeychainEngine(location: home.location, tpm: machine.device).close()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: home.location.sealedDeviceKeyPath)))
        bytes[bytes.count - 5] ^= 0x01  // inside the private blob's encrypted sensitive area
        try Data(bytes).write(to: URL(fileURLWithPath: home.location.sealedDeviceKeyPath))
        expectKeychainError(.sealedToAnotherMachine, status: .invalidKeychain) { try KeychainEngine(location: home.location, tpm: machine.device) }
        // Not a sealed key at all: errSecDecode.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: home.location.sealedDeviceKeyPath))
        expectKeychainError(.corruptData, status: .decode) { try KeychainEngine(location: home.location, tpm: machine.device) }
    }

    @Test func withoutATPMTheDeviceKeyIsAPlainFileAsBefore() throws {
        #expect(TPMDevice.fromEnvironment("none") == nil)
        #expect(TPMDevice.fromEnvironment(nil, defaultDevice: "/nonexistent/tpmrm0") == nil)
        #expect(TPMDevice.fromEnvironment("", defaultDevice: "/nonexistent/tpmrm0") == nil)
        #expect(TPMDevice.fromEnvironment("swtpm:port=2321") == TPMDevice(tcti: "swtpm:port=2321", required: true))
        #expect(TPMDevice.fromEnvironment(nil, defaultDevice: "/dev/null") == TPMDevice(tcti: "device:/dev/null", required: false))

        let home = Folder()
        let engine = try KeychainEngine(location: home.location, tpm: nil)
        try Self.addSecret(engine, "no tpm here")
        try engine.close()
        #expect(FileManager.default.fileExists(atPath: home.location.deviceKeyPath))
        #expect(!FileManager.default.fileExists(atPath: home.location.sealedDeviceKeyPath))
        let again = try KeychainEngine(location: home.location, tpm: nil)
        #expect(try Self.secret(again) == "no tpm here")
        try again.close()
    }

    @Test func aTPMThatDoesNotAnswer() throws {
        // Named by KEYCHAIN_TPM_TCTI: creating a keychain fails rather than quietly leaving the key in a file.
        let home = Folder()
        let named = TPMDevice(tcti: "swtpm:host=127.0.0.1,port=9", required: true)
        let error = expectKeychainError(.notAvailable) { try KeychainEngine(location: home.location, tpm: named) }
        #expect(error?.message.contains("KEYCHAIN_TPM_TCTI") == true)
        #expect(!FileManager.default.fileExists(atPath: home.location.deviceKeyPath))
        #expect(!FileManager.default.fileExists(atPath: home.location.keybagPath))
        // The default device that this user cannot use: the keychain still works, with a plain device key.
        let fallback = Folder()
        let engine = try KeychainEngine(location: fallback.location, tpm: TPMDevice(tcti: "swtpm:host=127.0.0.1,port=9", required: false))
        try Self.addSecret(engine, "plain")
        try engine.close()
        #expect(FileManager.default.fileExists(atPath: fallback.location.deviceKeyPath))
        // An existing plain keychain opened while the TPM is away stays plain and opens.
        let reopened = try KeychainEngine(location: fallback.location, tpm: named)
        #expect(try Self.secret(reopened) == "plain")
        try reopened.close()
        #expect(FileManager.default.fileExists(atPath: fallback.location.deviceKeyPath))
    }
}
