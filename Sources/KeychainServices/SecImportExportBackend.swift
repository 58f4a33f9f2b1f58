#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainCore

/// What `SecItemExport` does: sorts the items, picks the format, and has the engine write it.
enum SecImportExportBackend {
    static func export(
        _ items: CFTypeRef, _ format: SecExternalFormat, _ flags: SecItemImportExportFlags,
        _ parameters: SecItemImportExportKeyParameters?, _ out: UnsafeMutablePointer<CFData?>
    ) -> OSStatus {
        out.pointee = nil
        do {
            let data = try export(items, format, pem: flags.contains(.pemArmour), parameters)
            out.pointee = NSData(data: data)
            return errSecSuccess
        } catch {
            SecItemBackend.logger.debug("SecItemExport failed", metadata: ["status": "\(error.status.rawValue)"])
            return error.status.rawValue
        }
    }

    private static func export(
        _ items: CFTypeRef, _ format: SecExternalFormat, pem: Bool,
        _ parameters: SecItemImportExportKeyParameters?
    ) throws(KeychainError) -> Data {
        let list: [AnyObject] = (items as? NSArray).map { $0.map { $0 as AnyObject } } ?? [items]
        var identities: [SecIdentity] = [], certificates: [SecCertificate] = [], keys: [SecKey] = []
        for item in list {
            if let identity = item as? SecIdentity {
                identities.append(identity)
            } else if let certificate = item as? SecCertificate {
                certificates.append(certificate)
            } else if let key = item as? SecKey {
                keys.append(key)
            } else {
                throw KeychainError(code: .invalidParameter, message: "SecItemExport exports SecIdentity, SecCertificate and SecKey objects only.")
            }
        }
        guard !list.isEmpty else { throw KeychainError(code: .invalidParameter, message: "SecItemExport needs at least one item.") }
        var chosen = format
        if format == .formatUnknown {
            chosen = !identities.isEmpty ? .formatPKCS12 : (!keys.isEmpty ? .formatOpenSSL : (certificates.count == 1 ? .formatX509Cert : .formatPEMSequence))
        }
        switch chosen {
        case .formatPKCS12:
            return try pkcs12(identities, certificates, keys, parameters)
        case .formatX509Cert:
            let all = identities.map(\.certificate) + certificates
            guard keys.isEmpty, all.count == 1 else {
                throw KeychainError(code: .invalidParameter, message: "kSecFormatX509Cert holds exactly one certificate; use kSecFormatPEMSequence for several.")
            }
            return pem ? Data(ExchangeContents.pem("CERTIFICATE", all[0].data.der).utf8) : all[0].data.der
        case .formatPEMSequence:
            guard keys.isEmpty, identities.isEmpty else {
                throw KeychainError(code: .invalidParameter, message: "kSecFormatPEMSequence holds certificates; export identities with kSecFormatPKCS12 and keys with kSecFormatOpenSSL.")
            }
            return Data(certificates.map { ExchangeContents.pem("CERTIFICATE", $0.data.der) }.joined().utf8)
        case .formatOpenSSL:
            guard keys.count == 1, identities.isEmpty, certificates.isEmpty else {
                throw KeychainError(code: .invalidParameter, message: "kSecFormatOpenSSL holds one key.")
            }
            guard !keys[0].isPrivate else {
                throw KeychainError(
                    code: .unimplemented,
                    message:
                        "Private keys are exported inside a PKCS#12 file with their certificate (kSecFormatPKCS12), or with SecKeyCopyExternalRepresentation; kSecFormatOpenSSL writes public keys.")
            }
            let text = try keys[0].material.publicKeyPEM()
            return pem ? Data(text.utf8) : try derOfPEM(text)
        default:
            throw KeychainError(
                code: .invalidParameter, status: .unsupportedFormat,
                message: "SecItemExport writes kSecFormatPKCS12, kSecFormatX509Cert, kSecFormatPEMSequence and kSecFormatOpenSSL (public keys).")
        }
    }

    private static func pkcs12(
        _ identities: [SecIdentity], _ certificates: [SecCertificate], _ keys: [SecKey],
        _ parameters: SecItemImportExportKeyParameters?
    ) throws(KeychainError) -> Data {
        guard keys.isEmpty else {
            throw KeychainError(code: .unimplemented, message: "A PKCS#12 export holds identities and certificates; export a private key as the identity of its certificate (SecIdentity).")
        }
        guard let passphrase = parameters?.passphrase?.takeUnretainedValue() else {
            throw KeychainError(
                code: .invalidParameter, status: .init(errSecPassphraseRequired),
                message: "kSecFormatPKCS12 needs a passphrase in SecItemImportExportKeyParameters.passphrase (a CFString or CFData).")
        }
        let password: String
        if let string = passphrase as? String {
            password = string
        } else if let data = passphrase as? Data, let string = String(data: data, encoding: .utf8) {
            password = string
        } else {
            throw KeychainError(code: .invalidParameter, message: "The passphrase must be a CFString, or a CFData of UTF-8.")
        }
        var entries: [PKCS12ExportIdentity] = []
        for identity in identities {
            guard identity.privateKey.tokenReference == nil else {
                throw KeychainError(
                    code: .unimplemented,
                    message: "The identity's private key lives in the keychain's token and never leaves it; it cannot be exported. Export its certificate (kSecFormatX509Cert) instead.")
            }
            var label: String?
            if case .string(let text)? = identity.privateKey.extraAttributes["labl"] { label = text }
            entries.append(
                PKCS12ExportIdentity(
                    key: identity.privateKey.material, certificate: identity.certificate.data,
                    friendlyName: label ?? identity.certificate.data.subjectSummary))
        }
        return try PKCS12.make(identities: entries, certificates: certificates.map(\.data), password: password)
    }

    /// The DER inside a one-block PEM text.
    private static func derOfPEM(_ text: String) throws(KeychainError) -> Data {
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else {
            throw KeychainError(code: .internal, message: "A public key's PEM did not decode.")
        }
        return der
    }
}
#endif
