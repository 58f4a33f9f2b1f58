import Foundation
import KeychainCore

/// An X.509 certificate, parsed.
public struct KeychainCertificate: Sendable {
    let parsed: CertificateData

    /// Parses a DER certificate.
    ///
    /// - Throws: `KeychainError` with `KeychainError/Code/invalidParameter` when `der` is not one.
    public init(der: Data) throws(KeychainError) {
        parsed = try CertificateData(der: der)
    }

    init(_ parsed: CertificateData) { self.parsed = parsed }

    /// The certificate's DER encoding.
    public var der: Data { parsed.der }
    /// What Apple's `SecCertificateCopySubjectSummary` gives: the common name, else another readable part of the subject.
    public var subjectSummary: String? { parsed.subjectSummary }
    /// The subject's common names.
    public var commonNames: [String] { parsed.commonNames }
    /// The subject's email addresses.
    public var emailAddresses: [String] { parsed.emailAddresses }
    /// The SHA-1 of the DER, in uppercase hex (as `security find-certificate -Z` prints it).
    public var sha1Fingerprint: String { parsed.sha1Fingerprint }
    /// The SHA-256 of the DER, in uppercase hex.
    public var sha256Fingerprint: String { parsed.sha256Fingerprint }
    /// `kSecAttrPublicKeyHash`: the SHA-1 of the public key, equal to the application label of its private key.
    public var publicKeyHash: Data { parsed.publicKeyHash }
    /// The certificate as PEM (`-----BEGIN CERTIFICATE-----`), ending in a newline.
    public var pem: String { ExchangeContents.pem("CERTIFICATE", parsed.der) }

    /// Checks that a chain from this certificate through `intermediates` reaches a trusted root: one of `anchors`,
    /// or (unless `anchorsOnly`) one of the system's. With `hostname`, the certificate must also be valid for that
    /// server (SSL policy). Returns the chain, leaf first.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/notTrusted`, saying why.
    @discardableResult
    public func verify(intermediates: [KeychainCertificate] = [], anchors: [KeychainCertificate] = [], anchorsOnly: Bool = false,
                       hostname: String? = nil, at date: Date? = nil) throws(KeychainError) -> [KeychainCertificate] {
        try TrustEvaluation.evaluate(.init(leaf: parsed, intermediates: intermediates.map(\.parsed), anchors: anchors.map(\.parsed),
                                           anchorsOnly: anchorsOnly, hostname: hostname, date: date)).map(KeychainCertificate.init)
    }
}

/// A public or private key (EC P-256/P-384/P-521 or RSA).
public struct KeychainKey: Sendable {
    let material: KeyMaterial

    init(_ material: KeyMaterial) { self.material = material }

    /// The key a `kSecClassKey` item holds; nil when the item is not a key with its data.
    public init?(item: KeychainItem) {
        guard item.itemClass == .key, let data = item.data,
              let key = try? KeyMaterial(storedAttributes: item.attributes.mapValues(\.attributeValue), data: data) else { return nil }
        material = key
    }

    /// Whether this is a private key.
    public var isPrivate: Bool { material.keyClass == .privateKey }

    /// `kSecAttrApplicationLabel`: the SHA-1 of the public key.
    public func applicationLabel() throws(KeychainError) -> Data { try material.applicationLabel() }

    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo), ending in a newline.
    public func publicKeyPEM() throws(KeychainError) -> String { try material.publicKeyPEM() }
}

/// What a PEM or DER file, or a PKCS#12 archive, holds.
public struct KeyAndCertificateFile: Sendable {
    /// The certificates, in file order.
    public var certificates: [KeychainCertificate] = []
    /// The private keys.
    public var privateKeys: [KeychainKey] = []
    /// The public keys.
    public var publicKeys: [KeychainKey] = []

    /// Nothing.
    public init() {}

    /// Reads PEM (any number of certificates and keys) or one DER certificate or key; nil when `data` is neither.
    ///
    /// - Throws: `KeychainError` for a PEM block that does not parse.
    public static func read(_ data: Data) throws(KeychainError) -> KeyAndCertificateFile? {
        guard let contents = try ExchangeContents.read(data) else { return nil }
        var out = KeyAndCertificateFile()
        out.certificates = contents.certificates.map(KeychainCertificate.init)
        out.privateKeys = contents.privateKeys.map(KeychainKey.init)
        out.publicKeys = contents.publicKeys.map(KeychainKey.init)
        return out
    }

    /// An identity in a PKCS#12 archive: its private key, certificate and the rest of the chain.
    public struct PKCS12Identity: Sendable {
        /// The private key.
        public var key: KeychainKey?
        /// The certificate of the private key.
        public var certificate: KeychainCertificate?
        /// The other certificates.
        public var chain: [KeychainCertificate]
    }

    /// Opens a PKCS#12 archive (PBES2/AES and the legacy 3DES/RC2 profiles).
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/authFailed` for a wrong password, `KeychainStatus/decode`
    ///   when `data` is not PKCS#12.
    public static func pkcs12(_ data: Data, password: String) throws(KeychainError) -> PKCS12Identity {
        let contents = try PKCS12.open(data, password: password)
        return PKCS12Identity(key: contents.key.map(KeychainKey.init), certificate: contents.certificate.map(KeychainCertificate.init),
                              chain: contents.chain.map(KeychainCertificate.init))
    }
}
