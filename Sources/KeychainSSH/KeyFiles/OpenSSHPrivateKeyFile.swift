import Crypto
import CryptoExtras
import Foundation
import KeychainCore

/// OpenSSH's private key files (`-----BEGIN OPENSSH PRIVATE KEY-----`, the `openssh-key-v1` format that
/// `ssh-keygen` writes): one key, in the clear or protected by a passphrase (bcrypt KDF with AES-256 in CTR mode,
/// `ssh-keygen`'s default, or GCM).
package enum OpenSSHPrivateKeyFile {
    /// The largest file read, in bytes (an RSA key of 16,384 bits takes about 13 KiB).
    package static let maximumSize = 64 * 1024

    /// What a file holds before its private part is opened.
    package struct Envelope: Sendable {
        /// The public key (in the clear even in a protected file).
        package var publicKey: SSHPublicKey
        /// Whether a passphrase is needed.
        package var isEncrypted: Bool
        let cipher: String
        let salt: [UInt8]
        let rounds: UInt32
        let sealed: [UInt8]
        let tag: [UInt8]
    }

    static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----", end = "-----END OPENSSH PRIVATE KEY-----"

    /// Reads a file's envelope: `corruptData` for anything that is not an OpenSSH private key file of one key,
    /// `unimplemented` for a cipher or key type not supported.
    package static func envelope(_ text: String) throws(KeychainError) -> Envelope {
        guard text.utf8.count <= maximumSize else {
            throw KeychainError(code: .corruptData, message: "The file is larger than an OpenSSH private key can be (64 KiB).")
        }
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else {
            let pem = text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----")
            throw KeychainError(
                code: .corruptData,
                message: pem
                    ? "The file is a private key in the older PEM format. Convert it first: ssh-keygen -p -f FILE (it rewrites the file in OpenSSH's format)."
                    : "The file is not an OpenSSH private key (no \"\(begin)\" line).")
        }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let decoded = Data(base64Encoded: String(body)) else {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key's base64 text is damaged.")
        }
        var reader = SSHWireReader(decoded)
        guard try reader.raw(15) == Array("openssh-key-v1\0".utf8) else {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key is not in the openssh-key-v1 format.")
        }
        let cipher = try reader.text(), kdf = try reader.text()
        var options = SSHWireReader(try reader.string())
        let keyCount = try reader.uint32()
        guard keyCount == 1 else {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key file holds \(keyCount) keys; one is expected.")
        }
        let publicKey = try SSHPublicKey(blob: try reader.string())
        let sealed = try reader.string()
        var salt: [UInt8] = [], rounds: UInt32 = 0
        switch (cipher, kdf) {
        case ("none", "none"):
            break
        case ("aes256-ctr", "bcrypt"), ("aes256-gcm@openssh.com", "bcrypt"):
            salt = try options.string()
            rounds = try options.uint32()
            guard !salt.isEmpty, salt.count <= 64, rounds >= 1, rounds <= BcryptPBKDF.maximumRounds else {
                throw KeychainError(
                    code: .corruptData, message: "The OpenSSH private key's bcrypt settings are out of range (\(rounds) rounds, at most \(BcryptPBKDF.maximumRounds)).")
            }
        default:
            throw KeychainError(
                code: .unimplemented,
                message: "The OpenSSH private key is protected with \(cipher.prefix(40)) and \(kdf.prefix(20)), which is not supported. Re-protect it with ssh-keygen -p -Z aes256-ctr -f FILE.")
        }
        let tag = cipher == "aes256-gcm@openssh.com" ? try reader.raw(16) : []
        guard reader.isAtEnd, sealed.count % (cipher == "none" ? 8 : 16) == 0 else {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key's private part has a length no cipher gives.")
        }
        return Envelope(publicKey: publicKey, isEncrypted: cipher != "none", cipher: cipher, salt: salt, rounds: rounds, sealed: sealed, tag: tag)
    }

    /// The key and its comment: `authenticationFailed` when the passphrase is wrong, `authenticationNeeded` when the
    /// file needs one and none was given.
    package static func open(_ envelope: Envelope, passphrase: [UInt8]?) throws(KeychainError) -> (key: SSHPrivateKey, comment: String) {
        var plain = envelope.sealed
        if envelope.isEncrypted {
            guard let passphrase, !passphrase.isEmpty else {
                throw KeychainError(code: .authenticationNeeded, message: "The OpenSSH private key is protected by a passphrase; give it.")
            }
            let isGCM = envelope.cipher == "aes256-gcm@openssh.com"
            guard let material = BcryptPBKDF.derive(passphrase: passphrase, salt: envelope.salt, rounds: envelope.rounds, length: isGCM ? 44 : 48) else {
                throw KeychainError(code: .corruptData, message: "The OpenSSH private key's bcrypt settings are out of range.")
            }
            let key = SymmetricKey(data: material[..<32])
            do {
                if isGCM {
                    let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: material[32..<44]), ciphertext: envelope.sealed, tag: envelope.tag)
                    plain = Array(try AES.GCM.open(box, using: key))
                } else {
                    plain = Array(try AES._CTR.decrypt(envelope.sealed, using: key, nonce: AES._CTR.Nonce(nonceBytes: material[32..<48])))
                }
            } catch {
                throw wrongPassphrase
            }
        }
        var reader = SSHWireReader(plain)
        let check1 = try reader.uint32(), check2 = try reader.uint32()
        guard check1 == check2 else {
            if envelope.isEncrypted { throw wrongPassphrase }
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key's private part is damaged (its check numbers differ).")
        }
        let key = try SSHPrivateKey.read(from: &reader)
        guard key.publicKey == envelope.publicKey else {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key's public and private parts do not belong together.")
        }
        let comment = String(decoding: try reader.string(), as: UTF8.self)
        // The padding is 1, 2, 3, … up to the block size.
        for (index, byte) in reader.remaining.enumerated() where byte != UInt8(truncatingIfNeeded: index + 1) {
            throw KeychainError(code: .corruptData, message: "The OpenSSH private key's padding is damaged.")
        }
        return (key, comment)
    }

    static let wrongPassphrase = KeychainError(
        code: .authenticationFailed, message: "The passphrase does not open the OpenSSH private key. Check it and try again.")
}
