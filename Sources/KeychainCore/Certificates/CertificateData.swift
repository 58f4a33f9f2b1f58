import Crypto
import Foundation
import SwiftASN1
import X509

/// A DER X.509 certificate as the keychain reads it (parsed by swift-certificates, never by hand), with the
/// attributes Apple derives from it when it is added (`SecCertificateCopyAttributeDictionary`).
package struct CertificateData: Sendable {
    /// The DER bytes, as given.
    package let der: Data
    /// The parsed certificate.
    package let certificate: Certificate

    /// Parses DER; `errSecParam` when the bytes are not one certificate.
    package init(der: Data) throws(KeychainError) {
        do {
            certificate = try Certificate(derEncoded: Array(der))
        } catch {
            throw KeychainError(code: .invalidParameter, message: "The data is not a DER-encoded X.509 certificate.", cause: error)
        }
        self.der = der
    }

    // MARK: What Apple derives

    /// `kSecAttrCertificateType` (`ctyp`): the X.509 version, 3 for v3.
    package var certificateType: Int64 { certificate.version == .v1 ? 1 : 3 }

    /// `kSecAttrSerialNumber` (`slnr`): the serial number's content bytes.
    package var serialNumber: Data { Data(certificate.serialNumber.bytes) }

    /// The subject and issuer normalized as Apple compares names: every string value trimmed, its inner runs of
    /// white space made one space, upper-cased, and re-encoded as a UTF8String; the result's SEQUENCE content.
    package var normalizedSubject: Data { CertificateData.normalizedContent(certificate.subject) }
    package var normalizedIssuer: Data { CertificateData.normalizedContent(certificate.issuer) }

    /// `kSecAttrSubjectKeyID` (`skid`), when the certificate has the extension.
    package var subjectKeyIdentifier: Data? {
        guard let skid = try? certificate.extensions.subjectKeyIdentifier else { return nil }
        return Data(skid.keyIdentifier)
    }

    /// The public key's bytes: the subjectPublicKey BIT STRING's content (the X9.63 point for EC, PKCS#1 DER for
    /// RSA). swift-certificates parses only certificates whose key type it knows (EC, RSA, Ed25519).
    package var publicKeyBytes: Data { Data(certificate.publicKey.subjectPublicKeyInfoBytes) }

    /// `kSecAttrPublicKeyHash` (`pkhh`): SHA-1 of the public key's bytes, equal to the application label of the
    /// matching private key.
    package var publicKeyHash: Data { Data(Insecure.SHA1.hash(data: publicKeyBytes)) }

    /// The public key as the keychain's key model holds it.
    package var publicKey: KeyMaterial? {
        let bytes = publicKeyBytes
        if let point = try? KeyMaterial(externalRepresentation: bytes, type: .ec, keyClass: .publicKey) { return point }
        return try? KeyMaterial(externalRepresentation: bytes, type: .rsa, keyClass: .publicKey)
    }

    /// The subject's common names, in order.
    package var commonNames: [String] { strings(certificate.subject, .RDNAttributeType.commonName) }

    /// The email addresses of the subject (its emailAddress attributes) and of its alternative names.
    package var emailAddresses: [String] {
        var out = strings(certificate.subject, .RDNAttributeType.emailAddress)
        if let names = try? certificate.extensions.subjectAlternativeNames {
            for name in names { if case .rfc822Name(let email) = name { out.append(email) } }
        }
        return out
    }

    /// `SecCertificateCopySubjectSummary`: the last common name, else the first email address, else the
    /// organization or organizational unit.
    package var subjectSummary: String? {
        commonNames.last ?? emailAddresses.first ?? strings(certificate.subject, .RDNAttributeType.organizationName).first
            ?? strings(certificate.subject, .RDNAttributeType.organizationalUnitName).first
    }

    /// The attributes Apple stores for a certificate item: `ctyp`, `cenc` (3, DER), `subj`, `issr`, `slnr`, `skid`,
    /// `pkhh`, and the label (the subject summary) when the caller gave none.
    package var derivedAttributes: [String: PlistValue] {
        var out: [String: PlistValue] = [
            "ctyp": .int(certificateType), "cenc": .int(3),
            "subj": .data(normalizedSubject), "issr": .data(normalizedIssuer), "slnr": .data(serialNumber),
        ]
        if let skid = subjectKeyIdentifier { out["skid"] = .data(skid) }
        out["pkhh"] = .data(publicKeyHash)
        return out
    }

    /// The DER's SHA-1, upper-case hex: the hash `security find-identity` and `-Z` show.
    package var sha1Fingerprint: String { Insecure.SHA1.hash(data: der).map { String(format: "%02X", $0) }.joined() }
    /// The DER's SHA-256, upper-case hex.
    package var sha256Fingerprint: String { SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined() }

    // MARK: Helpers

    private func strings(_ name: DistinguishedName, _ type: ASN1ObjectIdentifier) -> [String] {
        name.flatMap { $0 }.filter { $0.type == type }.compactMap { String($0.value) }
    }

    /// `SecCertificateCopyNormalized…Sequence`: the normalized name as a DER SEQUENCE.
    package static func normalizedSequence(_ name: DistinguishedName) -> Data {
        let normalized = DistinguishedName(
            name.map { rdn in
                RelativeDistinguishedName(
                    rdn.map { attribute in
                        guard let text = String(attribute.value) else { return attribute }
                        let folded = text.split(whereSeparator: \.isWhitespace).joined(separator: " ").uppercased()
                        return RelativeDistinguishedName.Attribute(type: attribute.type, utf8String: folded)
                    })
            })
        var serializer = DER.Serializer()
        // A name built from a parsed name always serializes.
        guard (try? serializer.serialize(normalized)) != nil else { return Data() }
        return Data(serializer.serializedBytes)
    }

    static func normalizedContent(_ name: DistinguishedName) -> Data {
        let sequence = normalizedSequence(name)
        guard let root = try? DER.parse(Array(sequence)), case .constructed(let children) = root.content else { return Data() }
        // The content is what follows the SEQUENCE's tag and length: its children's encodings.
        return Data(sequence.suffix(children.reduce(0) { $0 + $1.encodedBytes.count }))
    }
}
