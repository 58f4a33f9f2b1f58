import Crypto
import Foundation
import KeychainCore

/// A one-time invitation to join a sync account (`security sync invite`): a random secret of twelve characters of
/// Crockford's base32 (60 bits), written `XXXX-XXXX-XXXX`, and a URI that carries it with the server and the
/// account (`keychain-sync://join?server=…&account=…&invitation=…`, short enough for a QR code).
///
/// The server keeps only its SHA-256 (``hash``) and admits one join request that gives the secret within its
/// lifetime (15 minutes at most); without one it stores nothing. It gates the server's door only: the new device
/// is still approved by its join code on a device of the account, which checks its keys.
public struct SyncInvitation: Sendable, Hashable, CustomStringConvertible {
    /// The twelve characters, upper case, without dashes: what the join request sends.
    public let secret: String

    /// A new random invitation.
    public init() {
        var generator = SystemRandomNumberGenerator()
        secret = String((0..<12).map { _ in SyncJoinCode.alphabet[Int(generator.next(upperBound: UInt8(32)))] })
    }

    /// An invitation as a person typed it (case, spaces and dashes do not matter; O is read as 0, I and L as 1),
    /// or the `invitation` of a URI.
    /// - Throws: ``KeychainError`` `invalidParameter` when it is not twelve such characters.
    public init(parsing text: String) throws(KeychainError) {
        guard let characters = SyncJoinCode.crockford(text, atMost: 12) else {
            throw KeychainError(
                code: .invalidParameter,
                message: "'\(text.prefix(40))' is not an invitation: it has twelve letters and digits, as XXXX-XXXX-XXXX, shown by `security sync invite` on a machine of the account.")
        }
        guard characters.count == 12 else {
            throw KeychainError(code: .invalidParameter, message: "An invitation has twelve letters and digits (XXXX-XXXX-XXXX); '\(text.prefix(40))' has \(characters.count).")
        }
        secret = characters
    }

    /// The SHA-256 of the secret's UTF-8 bytes: all the server keeps.
    public var hash: Data { Data(SHA256.hash(data: Data(secret.utf8))) }

    /// `XXXX-XXXX-XXXX`.
    public var description: String {
        [secret.prefix(4), secret.dropFirst(4).prefix(4), secret.suffix(4)].joined(separator: "-")
    }

    /// `keychain-sync://join?server=…&account=…&invitation=XXXX-XXXX-XXXX` (``SyncInvitationURI``).
    public func uri(server: URL, account: String) -> String {
        SyncInvitationURI.make(server: server.absoluteString, account: account, code: description)
    }
}
