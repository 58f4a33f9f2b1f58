import CKeychainPKCS12
import Foundation

/// An identity to write into a PKCS#12 file: its private key, its certificate, and the friendly name (the item's
/// label) its bags carry.
package struct PKCS12ExportIdentity: Sendable {
    package var key: KeyMaterial
    package var certificate: CertificateData
    package var friendlyName: String?

    /// An identity; `friendlyName` is usually the keychain item's label.
    package init(key: KeyMaterial, certificate: CertificateData, friendlyName: String?) {
        self.key = key
        self.certificate = certificate
        self.friendlyName = friendlyName
    }
}

extension PKCS12 {
    /// Writes a password-protected PKCS#12 file (`SecItemExport` with `kSecFormatPKCS12`, `security export -f
    /// pkcs12`) with the system's OpenSSL libcrypto, in OpenSSL 3's default profile: PBES2 (PBKDF2 with
    /// HMAC-SHA-256, AES-256-CBC) for the keys and the certificates, an HMAC-SHA-256 MAC, 2048 iterations. Each
    /// identity's key and certificate share a local key ID; `certificates` (the chain) follow.
    ///
    /// - Throws: `errSecParam` when there is nothing to write, a key is public or is not its certificate's;
    ///   `errSecNotAvailable` when libcrypto cannot be loaded.
    package static func make(identities: [PKCS12ExportIdentity], certificates: [CertificateData], password: String) throws(KeychainError) -> Data {
        guard !identities.isEmpty || !certificates.isEmpty else {
            throw KeychainError(code: .invalidParameter, message: "A PKCS#12 file needs at least one identity or certificate.")
        }
        var keys: [Data] = []
        for identity in identities {
            guard try identity.key.applicationLabel() == identity.certificate.publicKeyHash else {
                throw KeychainError(code: .invalidParameter, message: "A private key is not the key of the certificate it is exported with.")
            }
            keys.append(try identity.key.privateKeyDER())
        }
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let messageCapacity = message.count
        // The C strings and buffers live for the whole call: copied into one allocation each.
        let names = identities.map { $0.friendlyName.map { strdup($0) } ?? nil }
        defer { names.forEach { free($0) } }
        let keyBuffers = keys.map(Self.copy), certificateBuffers = identities.map { Self.copy($0.certificate.der) }
        let chainBuffers = certificates.map { Self.copy($0.der) }
        defer {
            for (buffer, count) in zip(keyBuffers, keys.map(\.count)) {
                buffer.update(repeating: 0, count: count)
                buffer.deallocate()
            }
            (certificateBuffers + chainBuffers).forEach { $0.deallocate() }
        }
        var entries: [ckeychain_pkcs12_identity] = []
        for index in identities.indices {
            entries.append(
                ckeychain_pkcs12_identity(
                    key: keyBuffers[index], key_length: keys[index].count,
                    certificate: certificateBuffers[index], certificate_length: identities[index].certificate.der.count,
                    friendly_name: names[index].map { UnsafePointer($0) }))
        }
        let chain: [UnsafePointer<UInt8>?] = chainBuffers.map { UnsafePointer($0) }
        let chainLengths = certificates.map(\.der.count)
        let status = password.withCString { pass in
            ckeychain_pkcs12_create(
                entries, Int32(entries.count), chain, chainLengths, Int32(chain.count), pass,
                &output, &length, &message, messageCapacity)
        }
        defer { ckeychain_crypto_buffer_free(output, length) }
        let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case 0:
            guard let output else { throw KeychainError(code: .internal, message: "libcrypto wrote no PKCS#12 file.") }
            return Data(bytes: output, count: length)
        case -1: throw KeychainError(code: .notAvailable, message: reason)
        case -2: throw KeychainError(code: .invalidParameter, message: reason)
        default: throw KeychainError(code: .internal, message: reason)
        }
    }

    /// The issuers of `certificate` found among `pool`, nearest first, up to a self-signed root (at most 10): the
    /// chain `security export -f pkcs12` puts after an identity.
    package static func issuers(of certificate: CertificateData, in pool: [CertificateData]) -> [CertificateData] {
        var chain: [CertificateData] = []
        var current = certificate
        while chain.count < 10, current.normalizedIssuer != current.normalizedSubject,
            let issuer = pool.first(where: { $0.normalizedSubject == current.normalizedIssuer && $0.der != current.der }),
            !chain.contains(where: { $0.der == issuer.der })
        {
            chain.append(issuer)
            current = issuer
        }
        return chain
    }

    private static func copy(_ data: Data) -> UnsafeMutablePointer<UInt8> {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(data.count, 1))
        data.copyBytes(to: buffer, count: data.count)
        return buffer
    }
}
