import Crypto
import Foundation

// The keys and certificates on PKCS#11 tokens as keychain items, the way Apple shows CryptoTokenKit items: in the
// access group `com.apple.token`, with `tkid` naming the token, never written.

/// A key or certificate on a PKCS#11 token, as a keychain item.
///
/// Made from what the token shows without its PIN: certificates and public keys. The private key of a key pair is
/// represented by its public key object or its certificate (the same `CKA_ID`), as a private key item whose
/// public key is theirs; it is used through ``PKCS11Registry`` (with the PIN) by that `CKA_ID`.
package struct PKCS11Item: Sendable, Hashable {
    /// What the item is.
    package enum Kind: Sendable, Hashable {
        /// An X.509 certificate (`kSecClassCertificate`).
        case certificate
        /// A private key (`kSecClassKey`, `kcls` 1).
        case privateKey
        /// A public key (`kSecClassKey`, `kcls` 0).
        case publicKey
    }

    /// What the item is.
    package var kind: Kind
    /// The token it is on.
    package var token: PKCS11Token
    /// Its `CKA_ID`.
    package var objectID: Data
    /// Its `CKA_LABEL`.
    package var label: String
    /// A certificate's DER (nil for keys).
    package var certificate: Data?
    /// The key's public key (for a certificate: the certificate's, when the keychain models its type).
    package var publicKey: KeyMaterial?
    /// For keys: what the key may do, when the token showed the object itself (nil: the object is not visible
    /// without the PIN, and the usual capabilities of its class are given).
    package var usage: PKCS11KeyUsage?

    /// Apple's access group for token items (`kSecAttrAccessGroupToken`).
    package static let accessGroup = "com.apple.token"

    /// Creates an item description.
    package init(
        kind: Kind, token: PKCS11Token, objectID: Data, label: String, certificate: Data? = nil, publicKey: KeyMaterial?,
        usage: PKCS11KeyUsage? = nil
    ) {
        self.kind = kind
        self.token = token
        self.objectID = objectID
        self.label = label
        self.certificate = certificate
        self.publicKey = publicKey
        self.usage = usage
    }

    /// The item's class.
    package var itemClass: ItemClass { kind == .certificate ? .certificate : .key }

    /// A stable 16-byte identifier: the first bytes of SHA-256 over the token identifier, the object's kind and its
    /// `CKA_ID`, so the item's persistent reference is the same in every process and after reinsertion.
    package var uuid: Data {
        let kindName =
            switch kind {
            case .certificate: "certificate"
            case .privateKey: "private"
            case .publicKey: "public"
            }
        var input = Data("pkcs11-item\u{0}\(token.identifier)\u{0}\(kindName)\u{0}".utf8)
        input.append(objectID)
        return Data(SHA256.hash(data: input).prefix(ItemCrypto.uuidLength))
    }

    /// The item's persistent reference.
    package var persistentReference: PersistentReference { PersistentReference(itemClass: itemClass, uuid: uuid) }

    /// The item's attributes as Apple returns them for a CryptoTokenKit item: `agrp` `com.apple.token`, `tkid`,
    /// `labl`, and for certificates `sha1` (the DER's SHA-1) and the attributes derived from the DER (`subj`, `issr`,
    /// `slnr`, `pkhh`, …), for keys
    /// `kcls`, `type`, `bsiz`, `esiz`, `klbl` (the SHA-1 of the public key) and the capabilities.
    package var attributes: [String: AttributeValue] {
        var out: [String: AttributeValue] = [
            "agrp": .string(Self.accessGroup), "tkid": .string(token.identifier), "labl": .string(label), "pdmn": .string("dku"),
        ]
        switch kind {
        case .certificate:
            if let der = certificate, let parsed = try? CertificateData(der: der) {
                out["sha1"] = .data(Data(Insecure.SHA1.hash(data: der)))
                for (code, value) in parsed.derivedAttributes { if let value = Self.attribute(value) { out[code] = value } }
            }
        case .privateKey, .publicKey:
            let isPrivate = kind == .privateKey
            out["kcls"] = .int(isPrivate ? KeyClass.privateKey.rawValue : KeyClass.publicKey.rawValue)
            if let key = publicKey {
                out["type"] = .int(key.type.rawValue)
                out["bsiz"] = .int(Int64(key.sizeInBits))
                out["esiz"] = .int(Int64(key.sizeInBits))
                if let label = try? key.applicationLabel() { out["klbl"] = .data(label) }
            }
            for (code, value) in KeyMaterial.capabilities(isPrivate: isPrivate) { if let value = Self.attribute(value) { out[code] = value } }
            if let usage {
                let pairs: [(String, PKCS11KeyUsage)] =
                    isPrivate ? [("sign", .sign), ("decr", .decrypt), ("drve", .derive), ("unwp", .unwrap)] : [("vrfy", .verify), ("encr", .encrypt), ("wrap", .wrap)]
                for (code, flag) in pairs { out[code] = .int(usage.contains(flag) ? 1 : 0) }
            }
            out["perm"] = .int(1)
            out["extr"] = .int(0)
        }
        return out
    }

    static func attribute(_ value: PlistValue) -> AttributeValue? {
        switch value {
        case .string(let text): .string(text)
        case .data(let data): .data(data)
        case .int(let number): .int(number)
        case .bool(let flag): .int(flag ? 1 : 0)
        case .double(let number): .double(number)
        case .date(let date): .date(date)
        default: nil
        }
    }

    /// The items of `token`'s objects: each certificate; each public key; and one private key per `CKA_ID` that has
    /// a private key, a public key or a certificate of a key type the keychain models (the private key object
    /// itself is usually visible only after login), in the objects' order.
    package static func items(of objects: [PKCS11Object], on token: PKCS11Token) -> [PKCS11Item] {
        var items: [PKCS11Item] = []
        var privateIDs: [Data] = []
        var privateKeys: [Data: PKCS11Key] = [:]
        var publicKeys: [Data: KeyMaterial] = [:]
        var labels: [Data: String] = [:]
        for object in objects {
            switch object {
            case .certificate(let certificate):
                let key = (try? CertificateData(der: certificate.der))?.publicKey
                items.append(PKCS11Item(kind: .certificate, token: token, objectID: certificate.id, label: certificate.label, certificate: certificate.der, publicKey: key))
                if let key, publicKeys[certificate.id] == nil { publicKeys[certificate.id] = key }
                if labels[certificate.id] == nil { labels[certificate.id] = certificate.label }
                if key != nil, !privateIDs.contains(certificate.id) { privateIDs.append(certificate.id) }
            case .publicKey(let key):
                items.append(PKCS11Item(kind: .publicKey, token: token, objectID: key.id, label: key.label, publicKey: key.publicKey, usage: key.usage))
                if let material = key.publicKey { publicKeys[key.id] = material }
                labels[key.id] = key.label
                if key.publicKey != nil, !privateIDs.contains(key.id) { privateIDs.append(key.id) }
            case .privateKey(let key):
                privateKeys[key.id] = key
                if !privateIDs.contains(key.id) { privateIDs.append(key.id) }
            }
        }
        for id in privateIDs {
            let shown = privateKeys[id]
            guard let publicKey = (shown?.publicKey).flatMap({ try? $0.publicKey() }) ?? publicKeys[id] else { continue }
            items.append(
                PKCS11Item(kind: .privateKey, token: token, objectID: id, label: shown?.label ?? labels[id] ?? "", publicKey: publicKey, usage: shown?.usage))
        }
        return items
    }
}
