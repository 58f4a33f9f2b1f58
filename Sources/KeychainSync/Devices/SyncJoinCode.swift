import Crypto
import Foundation
import KeychainCore

/// The short code a joining device shows and a person types on a device already in the account
/// (`security sync approve CODE`): ten characters of Crockford's base32 (50 bits) taken from SHA-256 of the new
/// device's public keys, written `XXXXX-XXXXX`.
///
/// The code is not a secret (anyone with the public keys computes it): it ties what the person sees on the new
/// device to one pending request, so that the approving device approves those keys and no others. Another
/// request with the same code would need keys found by about 2⁵⁰ tries within the day a request stays pending;
/// the full fingerprint is shown beside it for the careful.
public struct SyncJoinCode: Sendable, Hashable, CustomStringConvertible {
    /// The ten characters, upper case, without the dash.
    public let characters: String

    /// Crockford's base32 alphabet (no I, L, O, U).
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// The code of `keys`.
    public init(keys: SyncDevicePublicKeys) {
        var fields = SyncFields(domain: "keychain-sync/join-code/v1")
        fields.append(bytes: keys.signing.rawRepresentation)
        fields.append(bytes: keys.agreement.rawRepresentation)
        let digest = Array(SHA256.hash(data: fields.bytes))
        // The first 50 bits, five at a time.
        let bits = digest.prefix(7).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 6
        characters = String((0..<10).reversed().map { Self.alphabet[Int((bits >> UInt64($0 * 5)) & 31)] })
    }

    /// A code as a person typed it: case, spaces and dashes do not matter, and the letters Crockford maps are
    /// read as he says (O as 0; I and L as 1).
    /// - Throws: ``KeychainError`` `invalidParameter` when it is not ten such characters.
    public init(parsing text: String) throws(KeychainError) {
        guard let characters = Self.crockford(text, atMost: 10) else {
            throw KeychainError(
                code: .invalidParameter, message: "'\(text.prefix(40))' is not a join code: it has ten letters and digits, as XXXXX-XXXXX, shown by `security sync join` on the new device.")
        }
        guard characters.count == 10 else {
            throw KeychainError(code: .invalidParameter, message: "A join code has ten letters and digits (XXXXX-XXXXX); '\(text.prefix(40))' has \(characters.count).")
        }
        self.characters = characters
    }

    /// `text` as Crockford's base32 characters as a person typed them: upper case, without spaces and dashes, the
    /// letters he maps read as he says (O as 0; I and L as 1); nil when another character, or more than `atMost`
    /// of them, is there.
    static func crockford(_ text: String, atMost: Int) -> String? {
        var characters = ""
        for character in text.uppercased() where character != "-" && character != " " {
            let mapped: Character =
                switch character {
                case "O": "0"
                case "I", "L": "1"
                default: character
                }
            guard alphabet.contains(mapped), characters.count < atMost else { return nil }
            characters.append(mapped)
        }
        return characters
    }

    /// `XXXXX-XXXXX`.
    public var description: String {
        String(characters.prefix(5)) + "-" + String(characters.suffix(5))
    }
}
