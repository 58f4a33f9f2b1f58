import CKeychainPKCS12
import Foundation

/// What a PKCS#12 file holds: a private key, its certificate, further certificates, and a friendly name.
package struct PKCS12Contents: Sendable {
    package var key: KeyMaterial?
    package var certificate: CertificateData?
    package var chain: [CertificateData] = []
    package var friendlyName: String?
}

/// Password-protected PKCS#12 files (`SecPKCS12Import`), opened with the system's OpenSSL libcrypto: the
/// PBES2/AES profile OpenSSL 3 writes, and the legacy 3DES/RC2 one (`openssl pkcs12 -export -legacy`).
package enum PKCS12 {
    /// Opens a file: `errSecDecode` when it is not PKCS#12 (or truncated, or uses an unsupported profile),
    /// `errSecAuthFailed` when the password is wrong.
    package static func open(_ data: Data, password: String) throws(KeychainError) -> PKCS12Contents {
        guard !data.isEmpty else {
            throw KeychainError(code: .corruptData, message: "The data is empty, not a PKCS#12 file.")
        }
        var result = ckeychain_pkcs12()
        let status = data.withUnsafeBytes { raw in
            password.withCString { ckeychain_pkcs12_parse(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, $0, &result) }
        }
        defer { ckeychain_pkcs12_free(&result) }
        let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch status {
        case 0: break
        case 2: throw KeychainError(code: .authenticationFailed, message: message)
        case 4: throw KeychainError(code: .notAvailable, message: message)
        default: throw KeychainError(code: .corruptData, message: message)
        }
        var contents = PKCS12Contents()
        if let key = result.key, result.key_length > 0 {
            let der = Data(bytes: key, count: result.key_length)
            switch result.key_type {
            case 1: contents.key = try? KeyMaterial(externalRepresentation: der, type: .rsa, keyClass: .privateKey)
            case 2: contents.key = try? KeyMaterial(ecPrivateKeyDER: der)
            default: break
            }
        }
        if let certificate = result.certificate, result.certificate_length > 0 {
            contents.certificate = try CertificateData(der: Data(bytes: certificate, count: result.certificate_length))
        }
        let count = Int(result.chain_count)
        withUnsafePointer(to: result.chain) { pointers in
            withUnsafePointer(to: result.chain_length) { lengths in
                pointers.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: count) { p in
                    lengths.withMemoryRebound(to: Int.self, capacity: count) { l in
                        for i in 0 ..< count {
                            guard let bytes = p[i], l[i] > 0, let parsed = try? CertificateData(der: Data(bytes: bytes, count: l[i])) else { continue }
                            contents.chain.append(parsed)
                        }
                    }
                }
            }
        }
        if let name = result.friendly_name { contents.friendlyName = String(cString: name) }
        return contents
    }
}
