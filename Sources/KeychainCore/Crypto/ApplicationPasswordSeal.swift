import Foundation
import Crypto

/// The inner envelope of an item protected by `kSecAccessControlApplicationPassword`: the secret is sealed under a
/// key stretched from the application password (scrypt) before it is sealed as every secret is (per-item key
/// wrapped by the class key). Neither keychaind's memory nor the database holds the password, so the secret stays
/// out of reach without it even while the keychain is unlocked; a backup carries the envelope as it is.
///
/// Layout, version 1: `u8 1 | u32-prefixed scrypt parameters (KDF kind 1) | AES-256-GCM(nonce | ciphertext | tag)`,
/// the authenticated data being `"swift-keychain application password v1" | 0 | item UUID`. Fixed by a golden
/// vector in the tests.
package enum ApplicationPasswordSeal {
    static let version: UInt8 = 1
    static let label = Array("swift-keychain application password v1".utf8)

    static func aad(_ uuid: Data) -> [UInt8] { label + [0] + Array(uuid) }

    /// Seals `secret` for the item `uuid` under `password`, stretched with scrypt at `log2N` (at least 2^10).
    package static func seal(
        _ secret: Data, password: Data, uuid: Data, log2N: UInt8,
        random: any RandomSource
    ) throws(KeychainError) -> Data {
        let kdf = PasscodeKDF(log2N: max(10, log2N), salt: random.bytes(16))
        let key = try kdf.derive(String(decoding: password, as: UTF8.self))
        let sealed = try Seal.seal(secret, key: key, aad: aad(uuid), random: random)
        var w = BinaryWriter(capacity: sealed.count + 64)
        w.u8(version)
        w.lengthPrefixed(kdf.encoded)
        w.raw(sealed)
        return w.data
    }

    /// Opens an envelope; a wrong password is `errSecAuthFailed`, a malformed envelope `errSecDecode`.
    package static func open(_ envelope: Data, password: Data, uuid: Data) throws(KeychainError) -> Data {
        var r = BinaryReader(envelope)
        let malformed = KeychainError(code: .corruptData, message: "An item's application-password envelope is malformed.")
        guard let v = try? r.u8(), v == version, let parameters = try? r.lengthPrefixed(),
            let sealed = try? r.take(r.remaining)
        else { throw malformed }
        let kdf: PasscodeKDF
        do {
            kdf = try PasscodeKDF(decoding: parameters)
        } catch {
            throw malformed
        }
        let key = try kdf.derive(String(decoding: password, as: UTF8.self))
        do {
            return Data(try Seal.open(sealed, key: key, aad: aad(uuid)))
        } catch {
            throw KeychainError(code: .authenticationFailed, message: "The application password is not correct.")
        }
    }
}
