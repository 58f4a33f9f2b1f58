import Crypto
import Foundation
import SwiftASN1
import X509

/// An X.509 certificate revocation list (RFC 5280 §5), parsed with SwiftASN1:
///
///     CertificateList ::= SEQUENCE { tbsCertList TBSCertList, signatureAlgorithm AlgorithmIdentifier, signatureValue BIT STRING }
///     TBSCertList ::= SEQUENCE { version INTEGER OPTIONAL, signature AlgorithmIdentifier, issuer Name, thisUpdate Time,
///         nextUpdate Time OPTIONAL, revokedCertificates SEQUENCE OF SEQUENCE { userCertificate INTEGER,
///         revocationDate Time, crlEntryExtensions Extensions OPTIONAL } OPTIONAL, crlExtensions [0] EXPLICIT Extensions OPTIONAL }
///
/// Its signature is verified with swift-certificates (swift-crypto) by the issuer's public key.
package struct CertificateRevocationList: Sendable {
    /// The DER, as given.
    package let der: Data
    /// Who issued (and signed) the list.
    package let issuer: DistinguishedName
    /// When the list was issued.
    package let thisUpdate: Date
    /// When the next list is due; after it, this one is stale.
    package let nextUpdate: Date?
    /// The revoked serial numbers, with their revocation dates.
    package let revoked: [Certificate.SerialNumber: Date]
    private let signedBytes: [UInt8]
    private let algorithm: Certificate.SignatureAlgorithm?
    private let signature: [UInt8]

    /// Parses one DER CRL; `errSecUnknownFormat` when the bytes are not one.
    package init(der: Data) throws(KeychainError) {
        do {
            let root = try DER.parse(Array(der))
            var parts: [ASN1Node] = []
            try DER.sequence(root, identifier: .sequence) { nodes in
                while let node = nodes.next() { parts.append(node) }
            }
            guard parts.count == 3 else { throw CRLFormatError() }
            signedBytes = Array(parts[0].encodedBytes)
            algorithm = try Self.signatureAlgorithm(parts[1])
            signature = Array(try ASN1BitString(derEncoded: parts[2]).bytes)
            var fields: [ASN1Node] = []
            try DER.sequence(parts[0], identifier: .sequence) { nodes in
                while let node = nodes.next() { fields.append(node) }
            }
            var index = 0
            if index < fields.count, fields[index].identifier == .integer { index += 1 }  // version v2
            index += 1  // the inner signature algorithm (must equal the outer one)
            guard index + 1 < fields.count else { throw CRLFormatError() }
            issuer = try DistinguishedName(derEncoded: fields[index])
            thisUpdate = try Self.time(fields[index + 1])
            index += 2
            if index < fields.count, let next = try? Self.time(fields[index]) {
                nextUpdate = next
                index += 1
            } else {
                nextUpdate = nil
            }
            var revoked: [Certificate.SerialNumber: Date] = [:]
            if index < fields.count, fields[index].identifier == .sequence {
                try DER.sequence(fields[index], identifier: .sequence) { entries in
                    while let entry = entries.next() {
                        try DER.sequence(entry, identifier: .sequence) { nodes in
                            guard let serialNode = nodes.next(), let dateNode = nodes.next() else { throw CRLFormatError() }
                            let serial = try ArraySlice<UInt8>(derEncoded: serialNode)
                            revoked[Certificate.SerialNumber(bytes: serial)] = try Self.time(dateNode)
                            while nodes.next() != nil {}
                        }
                    }
                }
            }
            self.revoked = revoked
        } catch {
            throw KeychainError(
                code: .invalidParameter, status: .unknownFormat,
                message: "The data is not a DER or PEM certificate revocation list (X509 CRL).")
        }
        self.der = der
    }

    /// The CRLs of a file: the `X509 CRL` blocks of a PEM file, or one DER CRL.
    package static func read(_ data: Data) throws(KeychainError) -> [CertificateRevocationList] {
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            guard let documents = try? PEMDocument.parseMultiple(pemString: text) else {
                throw KeychainError(code: .invalidParameter, status: .unknownFormat, message: "The PEM file does not parse: check its BEGIN/END lines and base64.")
            }
            var out: [CertificateRevocationList] = []
            for document in documents where document.discriminator == "X509 CRL" {
                out.append(try CertificateRevocationList(der: Data(document.derBytes)))
            }
            guard !out.isEmpty else {
                throw KeychainError(code: .invalidParameter, status: .unknownFormat, message: "The PEM file holds no X509 CRL block.")
            }
            return out
        }
        return [try CertificateRevocationList(der: data)]
    }

    /// Whether `issuer`'s key signed this list, and `issuer` may sign lists (its key usage, when it has one,
    /// includes cRLSign) and is the list's issuer by name.
    package func isSigned(by issuer: Certificate) -> Bool {
        guard issuer.subject == self.issuer, let algorithm else { return false }
        if let usage = try? issuer.extensions.keyUsage, !usage.cRLSign { return false }
        return issuer.publicKey.isValidSignature(signature, for: signedBytes, signatureAlgorithm: algorithm)
    }

    /// Whether the list is current at `date`: issued before it, and not yet past its next update.
    package func isCurrent(at date: Date) -> Bool {
        thisUpdate <= date && (nextUpdate.map { date <= $0 } ?? true)
    }

    /// The SHA-1 of the DER, upper-case hex: the list's file name in a CRL folder.
    package var sha1Fingerprint: String { Insecure.SHA1.hash(data: der).map { String(format: "%02X", $0) }.joined() }

    // MARK: Parsing helpers

    private struct CRLFormatError: Error {}

    private static let algorithms: [ASN1ObjectIdentifier: Certificate.SignatureAlgorithm] = [
        [1, 2, 840, 10045, 4, 3, 2]: .ecdsaWithSHA256, [1, 2, 840, 10045, 4, 3, 3]: .ecdsaWithSHA384,
        [1, 2, 840, 10045, 4, 3, 4]: .ecdsaWithSHA512, [1, 2, 840, 113549, 1, 1, 5]: .sha1WithRSAEncryption,
        [1, 2, 840, 113549, 1, 1, 11]: .sha256WithRSAEncryption, [1, 2, 840, 113549, 1, 1, 12]: .sha384WithRSAEncryption,
        [1, 2, 840, 113549, 1, 1, 13]: .sha512WithRSAEncryption, [1, 3, 101, 112]: .ed25519,
    ]

    /// The signature algorithm an AlgorithmIdentifier names, or nil for one swift-certificates cannot verify.
    private static func signatureAlgorithm(_ node: ASN1Node) throws -> Certificate.SignatureAlgorithm? {
        try DER.sequence(node, identifier: .sequence) { nodes in
            guard let oidNode = nodes.next() else { throw CRLFormatError() }
            let oid = try ASN1ObjectIdentifier(derEncoded: oidNode)
            while nodes.next() != nil {}
            return algorithms[oid]
        }
    }

    /// A UTCTime or GeneralizedTime as a date.
    private static func time(_ node: ASN1Node) throws -> Date {
        var components = DateComponents()
        if node.identifier == UTCTime.defaultIdentifier {
            let time = try UTCTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        } else if node.identifier == GeneralizedTime.defaultIdentifier {
            let time = try GeneralizedTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        } else {
            throw CRLFormatError()
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        guard let date = calendar.date(from: components) else { throw CRLFormatError() }
        return date
    }
}
