import Foundation
import SwiftASN1

/// Certificates and keys as files carry them (what `security import` reads): PEM blocks, or one DER certificate
/// or key. PEM is read with swift-asn1, certificates with swift-certificates, keys with swift-crypto.
package struct ExchangeContents: Sendable {
    package var certificates: [CertificateData] = []
    package var privateKeys: [KeyMaterial] = []
    package var publicKeys: [KeyMaterial] = []

    package init() {}

    package var isEmpty: Bool { certificates.isEmpty && privateKeys.isEmpty && publicKeys.isEmpty }

    /// Reads a file's bytes; nil when they are neither PEM nor a DER certificate or key. A PEM block of a kind
    /// the keychain cannot store (an encrypted private key, say) is an error that names it.
    package static func read(_ data: Data) throws(KeychainError) -> ExchangeContents? {
        var out = ExchangeContents()
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            guard let documents = try? PEMDocument.parseMultiple(pemString: text) else {
                throw KeychainError(code: .corruptData, message: "The PEM file does not parse: check its BEGIN/END lines and base64.")
            }
            for document in documents {
                do {
                    try out.add(document)
                } catch  where error.code == .invalidParameter {
                    throw KeychainError(code: .corruptData, message: "A \(document.discriminator) block of the PEM file does not parse.", cause: error)
                }
            }
            return out.isEmpty ? nil : out
        }
        if let certificate = try? CertificateData(der: data) {
            out.certificates = [certificate]
        } else if let key = try? KeyMaterial(derRepresentation: data, keyClass: .privateKey) {
            out.privateKeys = [key]
        } else if let key = try? KeyMaterial(derRepresentation: data, keyClass: .publicKey) {
            out.publicKeys = [key]
        } else {
            return nil
        }
        return out
    }

    private mutating func add(_ document: PEMDocument) throws(KeychainError) {
        let der = Data(document.derBytes)
        switch document.discriminator {
        case "CERTIFICATE", "TRUSTED CERTIFICATE":
            certificates.append(try CertificateData(der: der))
        case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
            privateKeys.append(try KeyMaterial(derRepresentation: der, keyClass: .privateKey))
        case "PUBLIC KEY", "RSA PUBLIC KEY":
            publicKeys.append(try KeyMaterial(derRepresentation: der, keyClass: .publicKey))
        default:
            throw KeychainError(code: .unimplemented, message: "PEM blocks of type \(document.discriminator) cannot be imported (encrypted private keys: decrypt them with openssl first).")
        }
    }

    /// A PEM block of `der` under `label`, base64 in lines of 64 characters.
    package static func pem(_ label: String, _ der: Data) -> String {
        let base64 = der.base64EncodedString()
        var lines: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let next = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(base64[index..<next])
            index = next
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}
