import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

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
