import Crypto
import CryptoExtras
import Foundation
@testable import KeychainSecretService
@testable import KeychainSecretServiceClient
import Testing

/// secretstorage's own client side (python3-secretstorage's `dhcrypto.Session` and `util.format_secret`, and the
/// three lines of `Item.get_secret` that decrypt), driven line by line over stdin and stdout:
/// `NEW` and `FIXED <private key>` start a session and print its public key as secretstorage sends it (no leading
/// zeros); `SERVER <public key>` completes it and prints the AES key; `ENCRYPT <secret>` prints `<iv> <value>`;
/// `DECRYPT <iv> <value>` prints the secret. All bytes in hex.
let secretstorageClientScript = #"""
    import sys
    from cryptography.hazmat.backends import default_backend
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from secretstorage.dhcrypto import DH_PRIME_1024, Session, int_to_bytes
    from secretstorage.util import format_secret

    def decrypt(session, iv, value):
        # secretstorage.item.Item.get_secret, without the D-Bus call
        aes = algorithms.AES(session.aes_key)
        decryptor = Cipher(aes, modes.CBC(iv), default_backend()).decryptor()
        padded = decryptor.update(value) + decryptor.finalize()
        return padded[:-padded[-1]]

    session = None
    for line in sys.stdin:
        words = line.rstrip('\n').split(' ')
        command, args = words[0], [bytes.fromhex(word) for word in words[1:]]
        if command in ('NEW', 'FIXED'):
            session = Session()
            session.object_path = '/org/freedesktop/secrets/session/test'
            if command == 'FIXED':
                session.my_private_key = int.from_bytes(args[0], 'big')
                session.my_public_key = pow(2, session.my_private_key, DH_PRIME_1024)
            print(int_to_bytes(session.my_public_key).hex(), flush=True)
        elif command == 'SERVER':
            session.set_server_public_key(int.from_bytes(args[0], 'big'))
            print(session.aes_key.hex(), flush=True)
        elif command == 'ENCRYPT':
            _, iv, value, _ = format_secret(session, args[0], 'text/plain')
            print(iv.hex() + ' ' + value.hex(), flush=True)
        elif command == 'DECRYPT':
            print(decrypt(session, args[0], args[1]).hex(), flush=True)
        else:
            print('unknown command ' + command, file=sys.stderr, flush=True)
            sys.exit(2)
    """#

/// /usr/bin/python3 running ``secretstorageClientScript``.
final class SecretstorageClient {
    /// The script stopped answering.
    struct Exited: Error, CustomStringConvertible {
        /// Its exit status and standard error.
        let description: String
    }

    let process = Process()
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    /// Bytes read past the last line returned.
    var pending = [UInt8]()

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", secretstorageClientScript]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Sends one command line and returns the script's answer line, split at spaces into byte strings.
    func ask(_ command: String, _ arguments: [UInt8]...) throws -> [[UInt8]] {
        guard process.isRunning else { throw exited() }
        let line = ([command] + arguments.map { hex($0) }).joined(separator: " ") + "\n"
        try input.fileHandleForWriting.write(contentsOf: Data(line.utf8))
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let answer = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return try answer.split(separator: " ", omittingEmptySubsequences: false).map { try hexBytes(String($0)) }
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { throw exited() }
            pending += data
        }
    }

    /// What the script left on standard error once it has exited.
    func exited() -> Exited {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return Exited(description: "python3 exited with status \(process.terminationStatus): \(text)")
    }
}

/// The service against secretstorage, a client people use, running its own Diffie-Hellman and AES code.
@Suite(
    .enabled(
        if: FileManager.default.fileExists(atPath: "/usr/bin/python3"),
        "needs /usr/bin/python3 with secretstorage and cryptography (Debian package python3-secretstorage)"),
    .timeLimit(.minutes(10)))
struct SecretTransferPythonTests {
    @Test func secretstorageAndTheServiceExchangeSecretsBothWays() throws {
        let client = try SecretstorageClient()
        // 40 sessions: some client keys are shorter than 128 bytes (no leading zeros), and one exchange in 256
        // has a shared secret starting with zero (the fixed vector below covers that every time).
        for _ in 0..<40 {
            let clientPublicKey = try #require(try client.ask("NEW").first)
            let (server, serverPublicKey) = try SecretSessionCrypto.open(algorithm: "dh-ietf1024-sha256-aes128-cbc-pkcs7", input: clientPublicKey)
            let clientKey = try #require(try client.ask("SERVER", serverPublicKey).first)
            #expect(keyBytes(server.key) == clientKey)

            let secrets: [[UInt8]] = [[], Array("hunter2".utf8), [UInt8](repeating: 0xA5, count: 16), (0..<200).map { UInt8($0) }]
            for secret in secrets {
                // secretstorage → service (SetSecret, CreateItem).
                let sent = try client.ask("ENCRYPT", secret)
                try #require(sent.count == 2)
                #expect(try server.open(parameters: sent[0], value: sent[1]) == secret)
                // Service → secretstorage (GetSecret).
                let sealed = try server.seal(secret)
                #expect(try client.ask("DECRYPT", sealed.parameters, sealed.value) == [secret])
            }
        }
    }

    @Test func secretstoragePadsASharedSecretWhoseFirstByteIsZeroAsTheServiceDoes() throws {
        typealias V = LeadingZeroVector
        let client = try SecretstorageClient()
        let clientPublicKey = try #require(try client.ask("FIXED", try hexBytes(V.clientExponent)).first)
        #expect(hex(clientPublicKey) == V.clientPublicKey)
        let (server, serverPublicKey) = try SecretSessionCrypto.openDiffieHellman(
            clientPublicKey: clientPublicKey, privateExponent: try hexBytes(V.serverExponent))
        #expect(try client.ask("SERVER", serverPublicKey) == [try hexBytes(V.aesKey)])
        #expect(hex(keyBytes(server.key) ?? []) == V.aesKey)
        #expect(try client.ask("DECRYPT", try hexBytes(V.iv), try hexBytes(V.ciphertext)) == [Array(V.plaintext.utf8)])
        let sent = try client.ask("ENCRYPT", Array(V.plaintext.utf8))
        try #require(sent.count == 2)
        #expect(try server.open(parameters: sent[0], value: sent[1]) == Array(V.plaintext.utf8))
    }
}
