import Crypto
import Foundation
import KeychainCore
import KeychainSSH
import KeychainTestSupport
import Testing

/// OpenSSH private key files as `ssh-keygen` writes them, read here; and this module's signatures checked by
/// `ssh-keygen -Y check-novalidate`.
@Suite(.enabled(if: OpenSSHTools.available, "needs ssh-keygen (Debian's openssh-client)"))
struct OpenSSHKeyFileTests {
    /// `ssh-keygen` with `arguments`, which must succeed.
    @discardableResult
    static func keygen(_ arguments: [String], input: Data? = nil) throws -> ProgramRun {
        let run = try ProgramRun.run(OpenSSHTools.keygen, arguments, environment: ["PATH": "/usr/bin:/bin"], input: input, timeout: 60)
        guard run.status == 0 else { throw TestFailure("ssh-keygen \(arguments.joined(separator: " ")) failed: \(run.stderr)") }
        return run
    }

    /// A new key made by `ssh-keygen -t type` with `passphrase` (and `extra` arguments), its file's text and its `.pub` line.
    static func newKey(_ type: [String], passphrase: String = "", extra: [String] = []) throws -> (folder: String, file: String, text: String, publicLine: String) {
        let folder = NSTemporaryDirectory() + "ssh-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/id"
        try keygen(["-q", "-C", "test key é", "-N", passphrase, "-f", file] + type + extra)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let publicLine = try String(contentsOfFile: file + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return (folder, file, text, publicLine)
    }

    static let types: [[String]] = [["-t", "ed25519"], ["-t", "ecdsa", "-b", "256"], ["-t", "rsa", "-b", "3072"]]

    @Test(arguments: types)
    func aKeyInTheClearIsReadWithItsPublicKeyAndComment(_ type: [String]) throws {
        let key = try Self.newKey(type)
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let envelope = try OpenSSHPrivateKeyFile.envelope(key.text)
        #expect(!envelope.isEncrypted)
        let (privateKey, comment) = try OpenSSHPrivateKeyFile.open(envelope, passphrase: nil)
        #expect(comment == "test key é")
        #expect(privateKey.publicKey.authorizedKeysLine(comment: comment) == key.publicLine)
        // The fingerprint as ssh-keygen -l prints it.
        let listed = try Self.keygen(["-l", "-E", "sha256", "-f", key.file + ".pub"]).stdout
        #expect(listed.split(separator: " ")[1] == Substring(privateKey.publicKey.fingerprint))
        // The public blob reads back.
        #expect(try SSHPublicKey(blob: privateKey.publicKey.blob) == privateKey.publicKey)
    }

    @Test(arguments: [["-Z", "aes256-ctr"], ["-Z", "aes256-gcm@openssh.com"]])
    func aProtectedKeyOpensWithItsPassphraseOnly(_ cipher: [String]) throws {
        let key = try Self.newKey(["-t", "ed25519"], passphrase: "correct horse", extra: ["-a", "4"] + cipher)
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let envelope = try OpenSSHPrivateKeyFile.envelope(key.text)
        #expect(envelope.isEncrypted)
        // The public key is readable without the passphrase.
        #expect(envelope.publicKey.authorizedKeysLine(comment: "test key é") == key.publicLine)
        let (privateKey, _) = try OpenSSHPrivateKeyFile.open(envelope, passphrase: Array("correct horse".utf8))
        #expect(privateKey.publicKey == envelope.publicKey)
        expectKeychainError(.authenticationFailed) { try OpenSSHPrivateKeyFile.open(envelope, passphrase: Array("wrong horse".utf8)) }
        expectKeychainError(.authenticationNeeded) { try OpenSSHPrivateKeyFile.open(envelope, passphrase: nil) }
    }

    @Test func ssh_keygensDefaultProtectionWithSixteenRoundsOpens() throws {
        // No -a: ssh-keygen's own default (16 rounds, aes256-ctr), the file a person has.
        let key = try Self.newKey(["-t", "ecdsa", "-b", "256"], passphrase: "pw")
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let (privateKey, _) = try OpenSSHPrivateKeyFile.open(try OpenSSHPrivateKeyFile.envelope(key.text), passphrase: Array("pw".utf8))
        #expect(privateKey.publicKey.authorizedKeysLine(comment: "test key é") == key.publicLine)
    }

    @Test(arguments: types)
    func signaturesAreAcceptedByOpenSSH(_ type: [String]) throws {
        let key = try Self.newKey(type)
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let (privateKey, _) = try OpenSSHPrivateKeyFile.open(try OpenSSHPrivateKeyFile.envelope(key.text), passphrase: nil)
        // An SSHSIG signature (PROTOCOL.sshsig) made with the agent's signature, which ssh-keygen checks.
        let message = Array("a message to sign\n".utf8)
        let namespace = "file"
        var signed = SSHWireWriter()
        signed.raw(Array("SSHSIG".utf8))
        signed.string(namespace)
        signed.string([UInt8]())
        signed.string("sha512")
        signed.string(Array(SHA512.hash(data: message)))
        let signature = try privateKey.signature(of: signed.bytes, flags: SSHPrivateKey.rsaSHA512)
        if case .rsa = privateKey.publicKey {} else { #expect(privateKey.publicKey.verifies(signature, of: signed.bytes)) }
        var blob = SSHWireWriter()
        blob.raw(Array("SSHSIG".utf8))
        blob.uint32(1)
        blob.string(privateKey.publicKey.blob)
        blob.string(namespace)
        blob.string([UInt8]())
        blob.string("sha512")
        blob.string(signature)
        let armored =
            "-----BEGIN SSH SIGNATURE-----\n" + Data(blob.bytes).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END SSH SIGNATURE-----\n"
        try armored.write(toFile: key.folder + "/message.sig", atomically: true, encoding: .utf8)
        let check = try ProgramRun.run(
            OpenSSHTools.keygen, ["-Y", "check-novalidate", "-n", namespace, "-s", key.folder + "/message.sig"], environment: ["PATH": "/usr/bin:/bin"],
            input: Data(message))
        #expect(check.status == 0, "\(check.stderr)")
        // A changed message is refused.
        let tampered = try ProgramRun.run(
            OpenSSHTools.keygen, ["-Y", "check-novalidate", "-n", namespace, "-s", key.folder + "/message.sig"], environment: ["PATH": "/usr/bin:/bin"],
            input: Data("another message\n".utf8))
        #expect(tampered.status != 0)
    }

    @Test func rsaWithSHA1IsRefused() throws {
        let key = try Self.newKey(["-t", "rsa", "-b", "2048"])
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let (privateKey, _) = try OpenSSHPrivateKeyFile.open(try OpenSSHPrivateKeyFile.envelope(key.text), passphrase: nil)
        expectKeychainError(.unimplemented) { try privateKey.signature(of: [1, 2, 3], flags: 0) }
    }

    @Test func everyCutOfAFileGivesAnErrorNotACrash() throws {
        let key = try Self.newKey(["-t", "ed25519"], passphrase: "pw", extra: ["-a", "1"])
        defer { try? FileManager.default.removeItem(atPath: key.folder) }
        let body = key.text.split(separator: "\n").dropFirst().dropLast().joined()
        let bytes = try #require(Data(base64Encoded: body))
        for cut in stride(from: 0, to: bytes.count, by: 3) {
            let text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + bytes.prefix(cut).base64EncodedString() + "\n-----END OPENSSH PRIVATE KEY-----\n"
            expectKeychainError(.corruptData, "cut at \(cut)") { try OpenSSHPrivateKeyFile.open(try OpenSSHPrivateKeyFile.envelope(text), passphrase: Array("pw".utf8)) }
        }
        expectKeychainError(.corruptData) { try OpenSSHPrivateKeyFile.envelope("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n") }
        expectKeychainError(.corruptData) { try OpenSSHPrivateKeyFile.envelope("not a key") }
    }
}

/// Where OpenSSH's tools are.
enum OpenSSHTools {
    static let keygen = "/usr/bin/ssh-keygen"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: keygen) }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
