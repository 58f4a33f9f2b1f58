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
    public func verify(
        intermediates: [KeychainCertificate] = [], anchors: [KeychainCertificate] = [], anchorsOnly: Bool = false,
        hostname: String? = nil, at date: Date? = nil
    ) throws(KeychainError) -> [KeychainCertificate] {
        try TrustEvaluation.evaluate(
            .init(
                leaf: parsed, intermediates: intermediates.map(\.parsed), anchors: anchors.map(\.parsed),
                anchorsOnly: anchorsOnly, hostname: hostname, date: date)
        ).map(KeychainCertificate.init)
    }
}

/// A public or private key (EC P-256/P-384/P-521 or RSA).
public struct KeychainKey: Sendable {
    let material: KeyMaterial

    init(_ material: KeyMaterial) { self.material = material }

    /// The key a `kSecClassKey` item holds; nil when the item is not a key with its data.
    public init?(item: KeychainItem) {
        guard item.itemClass == .key, let data = item.data,
            let key = try? KeyMaterial(storedAttributes: item.attributes.mapValues(\.attributeValue), data: data)
        else { return nil }
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
public struct KeychainKeyAndCertificateFile: Sendable {
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
    public static func read(_ data: Data) throws(KeychainError) -> KeychainKeyAndCertificateFile? {
        guard let contents = try ExchangeContents.read(data) else { return nil }
        var out = KeychainKeyAndCertificateFile()
        out.certificates = contents.certificates.map(KeychainCertificate.init)
        out.privateKeys = contents.privateKeys.map(KeychainKey.init)
        out.publicKeys = contents.publicKeys.map(KeychainKey.init)
        return out
    }

    /// A private key of a PKCS#12 archive, with its certificate when the archive holds it.
    public struct PKCS12Identity: Sendable {
        /// The private key.
        public var key: KeychainKey
        /// The certificate of the private key; nil when the archive does not hold it.
        public var certificate: KeychainCertificate?
        /// The friendly name the archive gives the key (or its certificate); nil when it gives none.
        public var friendlyName: String?
        /// The certificates of the archive that issued ``certificate``, leaf's issuer first.
        public var chain: [KeychainCertificate]
    }

    /// Everything a PKCS#12 archive holds.
    public struct PKCS12Archive: Sendable {
        /// Each private key of the archive, in its order, with its certificate.
        public var identities: [PKCS12Identity]
        /// The certificates that belong to no key (the chains' CA certificates, or certificates alone).
        public var certificates: [KeychainCertificate]
    }

    /// Opens a PKCS#12 archive (PBES2/AES and the legacy 3DES/RC2 profiles) and reads every key and certificate in
    /// it; nothing is left out silently.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/authFailed` for a wrong password, `KeychainStatus/decode`
    ///   when `data` is not PKCS#12 or part of it does not parse, `KeychainStatus/unsupportedFormat` for a key that
    ///   is neither RSA nor elliptic curve.
    public static func pkcs12(_ data: Data, password: String) throws(KeychainError) -> PKCS12Archive {
        let contents = try PKCS12.open(data, password: password)
        let pool = contents.certificates
        let identities = contents.identities.map { identity in
            PKCS12Identity(
                key: KeychainKey(identity.key), certificate: identity.certificate.map(KeychainCertificate.init),
                friendlyName: identity.friendlyName,
                chain: identity.certificate.map { PKCS12.issuers(of: $0, in: pool).map(KeychainCertificate.init) } ?? [])
        }
        return PKCS12Archive(identities: identities, certificates: pool.map(KeychainCertificate.init))
    }
}
