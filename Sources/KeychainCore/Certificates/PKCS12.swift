import CKeychainPKCS12
import Foundation

/// What a PKCS#12 file holds: each private key with its certificate (an identity), and the certificates that are
/// no key's (the chains' CA certificates, or certificates alone).
package struct PKCS12Contents: Sendable {
    /// A private key of the file and, when the file holds it, the certificate of that key.
    package struct Identity: Sendable {
        package var key: KeyMaterial
        package var certificate: CertificateData?
        /// The friendly name of the key's bag, else of its certificate's.
        package var friendlyName: String?
    }

    /// Every private key of the file, in the file's order.
    package var identities: [Identity] = []
    /// The certificates of no key, in the file's order.
    package var certificates: [CertificateData] = []
}

/// Password-protected PKCS#12 files (`SecPKCS12Import`), opened with the system's OpenSSL libcrypto: the
/// PBES2/AES profile OpenSSL 3 writes, and the legacy 3DES/RC2 one (`openssl pkcs12 -export -legacy`).
package enum PKCS12 {
    /// Opens a file and reads every key and certificate in it: `errSecDecode` when it is not PKCS#12 (or truncated,
    /// or uses an unsupported profile, or a key or certificate in it does not parse), `errSecAuthFailed` when the
    /// password is wrong, `errSecUnsupportedFormat` for a key the keychain cannot hold (neither RSA nor elliptic
    /// curve), `errSecParam` for more than 32 keys or 64 certificates. Nothing is left out silently.
    package static func open(_ data: Data, password: String) throws(KeychainError) -> PKCS12Contents {
        guard !data.isEmpty else {
            throw KeychainError(code: .corruptData, message: "The data is empty, not a PKCS#12 file.")
        }
        // About 5 KB of fixed arrays: on the heap, not a caller's stack.
        let result = UnsafeMutablePointer<ckeychain_pkcs12>.allocate(capacity: 1)
        defer { result.deallocate() }
        let status = data.withUnsafeBytes { raw in
            password.withCString { ckeychain_pkcs12_parse(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, $0, result) }
        }
        defer { ckeychain_pkcs12_free(result) }
        let message = withUnsafeBytes(of: result.pointee.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch status {
        case 0: break
        case 2: throw KeychainError(code: .authenticationFailed, message: message)
        case 4: throw KeychainError(code: .notAvailable, message: message)
        case 5: throw KeychainError(code: .unimplemented, status: .unsupportedFormat, message: message)
        case 6: throw KeychainError(code: .invalidParameter, message: message)
        default: throw KeychainError(code: .corruptData, message: message)
        }
        let keys = try Self.keys(result.pointee)
        let certificates = try Self.certificates(result.pointee)
        return Self.pair(keys: keys, certificates: certificates)
    }

    /// A bag as read: its value, its localKeyID and its friendly name.
    struct Bag<Value> {
        var value: Value
        var localKeyID: Data?
        var friendlyName: String?
    }

    private static func keys(_ result: ckeychain_pkcs12) throws(KeychainError) -> [Bag<KeyMaterial>] {
        var keys: [Bag<KeyMaterial>] = []
        for index in 0..<Int(result.key_count) {
            let bag = withUnsafeBytes(of: result.keys) { $0.bindMemory(to: ckeychain_pkcs12_key.self)[index] }
            guard let bytes = bag.der, bag.length > 0 else { throw unreadable("a private key") }
            let der = Data(bytes: bytes, count: bag.length)
            let key: KeyMaterial
            do {
                key =
                    bag.type == 1
                    ? try KeyMaterial(externalRepresentation: der, type: .rsa, keyClass: .privateKey)
                    : try KeyMaterial(ecPrivateKeyDER: der)
            } catch {
                throw KeychainError(code: .corruptData, message: "A private key of the PKCS#12 file is not one the keychain can use: \(error.message)", cause: error)
            }
            keys.append(Bag(value: key, localKeyID: data(bag.local_key_id, bag.local_key_id_length), friendlyName: bag.friendly_name.map { String(cString: $0) }))
        }
        return keys
    }

    private static func certificates(_ result: ckeychain_pkcs12) throws(KeychainError) -> [Bag<CertificateData>] {
        var certificates: [Bag<CertificateData>] = []
        for index in 0..<Int(result.certificate_count) {
            let bag = withUnsafeBytes(of: result.certificates) { $0.bindMemory(to: ckeychain_pkcs12_certificate.self)[index] }
            guard let bytes = bag.der, bag.length > 0 else { throw unreadable("a certificate") }
            let certificate = try CertificateData(der: Data(bytes: bytes, count: bag.length))
            certificates.append(
                Bag(
                    value: certificate, localKeyID: data(bag.local_key_id, bag.local_key_id_length),
                    friendlyName: bag.friendly_name.map { String(cString: $0) }))
        }
        return certificates
    }

    /// Gives each key its certificate: the one with the same localKeyID when its public key is the key's, else the
    /// first unclaimed one whose public key is the key's. The certificates no key claims are the rest.
    static func pair(keys: [Bag<KeyMaterial>], certificates: [Bag<CertificateData>]) -> PKCS12Contents {
        var claimed = Set<Int>()
        var contents = PKCS12Contents()
        for key in keys {
            let label = try? key.value.applicationLabel()
            let matches = certificates.indices.filter { !claimed.contains($0) && label != nil && certificates[$0].value.publicKeyHash == label }
            let index = matches.first { key.localKeyID != nil && certificates[$0].localKeyID == key.localKeyID } ?? matches.first
            if let index { claimed.insert(index) }
            let certificate = index.map { certificates[$0] }
            contents.identities.append(
                PKCS12Contents.Identity(
                    key: key.value, certificate: certificate?.value,
                    friendlyName: key.friendlyName ?? certificate?.friendlyName))
        }
        contents.certificates = certificates.indices.filter { !claimed.contains($0) }.map { certificates[$0].value }
        return contents
    }

    private static func data(_ bytes: UnsafeMutablePointer<UInt8>?, _ length: Int) -> Data? {
        guard let bytes, length > 0 else { return nil }
        return Data(bytes: bytes, count: length)
    }

    private static func unreadable(_ what: String) -> KeychainError {
        KeychainError(code: .corruptData, message: "The PKCS#12 file holds \(what) that could not be read.")
    }
}
