import CKeychainPKCS12
import Foundation

/// RSA operations and digests swift-crypto does not offer (raw RSA, PKCS#1 v1.5 encryption, signatures over a
/// digest the caller computed, OAEP and PSS with SHA-224/384/512, SHA-224 itself), carried out by the system's
/// OpenSSL libcrypto, opened on first use.
enum SystemRSA {
    /// What `ckeychain_rsa` does.
    enum Operation: Int32 {
        case sign = 1, verify = 2, recover = 3, encrypt = 4, decrypt = 5
    }

    /// OpenSSL's padding modes.
    enum Padding: Int32 {
        case pkcs1 = 1, none = 3, oaep = 4, pss = 6
    }

    /// Runs one RSA operation. `key` is PKCS#1 DER (private for sign and decrypt, public otherwise). Verify
    /// returns empty data or throws `errSecVerifyFailed`.
    static func run(
        _ operation: Operation, _ padding: Padding, digest: KeyHash?, key: Data, input: Data,
        signature: Data = Data(), outputCapacity: Int, identifier: String
    ) throws(KeychainError) -> Data {
        var output = Data(count: max(outputCapacity, 1))
        var length = output.count
        var message = [CChar](repeating: 0, count: 256)
        let messageCapacity = message.count
        let status = output.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { k in
                input.withUnsafeBytes { i in
                    signature.withUnsafeBytes { s in
                        withOptionalCString(digest?.rawValue) { name in
                            ckeychain_rsa(
                                operation.rawValue, padding.rawValue, name,
                                k.bindMemory(to: UInt8.self).baseAddress, k.count,
                                i.bindMemory(to: UInt8.self).baseAddress, i.count,
                                s.bindMemory(to: UInt8.self).baseAddress, s.count,
                                out.bindMemory(to: UInt8.self).baseAddress, &length, &message, messageCapacity)
                        }
                    }
                }
            }
        }
        let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case 0:
            return output.prefix(length)
        case -1:
            throw KeychainError(code: .notAvailable, message: reason)
        case -3:
            throw KeychainError(code: .verifyFailed, message: "The \(identifier) signature does not match the data and key.")
        default:
            throw KeychainError(code: .invalidParameter, message: "\(identifier) failed: \(reason) Check the input's length against the key size and the algorithm.")
        }
    }

    /// The digest `hash` of `data`, by libcrypto.
    static func digest(_ hash: KeyHash, _ data: Data) throws(KeychainError) -> Data {
        var output = Data(count: 64)
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let messageCapacity = message.count
        let status = output.withUnsafeMutableBytes { out in
            data.withUnsafeBytes { d in
                ckeychain_digest(
                    hash.rawValue, d.bindMemory(to: UInt8.self).baseAddress, d.count,
                    out.bindMemory(to: UInt8.self).baseAddress, &length, &message, messageCapacity)
            }
        }
        guard status == 0 else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw KeychainError(code: status == -1 ? .notAvailable : .internal, message: reason)
        }
        return output.prefix(length)
    }

    private static func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let string else { return body(nil) }
        return string.withCString { body($0) }
    }
}
