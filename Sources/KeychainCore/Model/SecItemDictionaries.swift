import Foundation

/// Apple's SecItem dictionaries on either side of a typed call: requests parsed into ``ItemQuery`` and
/// ``ItemChanges`` before they go to a keychain (in-process or keychaind alike), and found items shaped into
/// Apple's result forms after they come back.
package enum SecItemDictionaries {
    /// `SecItemAdd`'s attributes as a typed add. A certificate's attributes derived from its DER are put in.
    package static func addQuery(_ attributes: [String: PlistValue]) throws(KeychainError) -> ItemQuery {
        let q = try QueryParser.parse(withCertificateAttributes(attributes), for: .add)
        if q.hasMatchKeys { throw .param("SecItemAdd does not take kSecMatch… keys.") }
        return q
    }

    /// `SecItemAdd`'s result, when a return key was set.
    package static func addResult(_ item: FoundItem, _ q: ItemQuery) -> PlistValue? {
        guard q.returns.any else { return nil }
        return shape(item, q.returns)
    }

    /// `SecItemCopyMatching`'s result for the items a query found.
    package static func matchingResult(_ items: [FoundItem], _ q: ItemQuery) -> PlistValue? {
        guard q.returns.any else { return nil }
        if q.limit.returnsArray {
            let shaped = items.compactMap { shape($0, q.returns) }
            return shaped.isEmpty ? nil : .array(shaped)
        }
        return items.first.flatMap { shape($0, q.returns) }
    }

    /// The attributes Apple returns for an item: everything stored, plus `musr` (empty for the single-user keychain).
    package static func returnedAttributes(_ item: FoundItem) -> [String: PlistValue] {
        var out = item.attributes.mapValues { $0.plist }
        if case .data(let bytes)? = item.attributes["accc"], let control = AccessControl(encoded: bytes) {
            out["accc"] = .accessControl(control)
        }
        if let trusted = TrustedApplications(stored: item.attributes[TrustedApplications.code]) {
            out[TrustedApplications.code] = .array(trusted.terms.map(PlistValue.string))
        }
        out["musr"] = .data(Data())
        return out
    }

    /// One item's result (Apple's `SecDbItemCopyResult` plus the client's post-processing).
    static func shape(_ item: FoundItem, _ r: ReturnOptions) -> PlistValue? {
        switch (r.data, r.attributes, r.ref, r.persistentRef) {
        case (true, false, false, false):
            return .data(item.data ?? Data())
        case (false, false, false, true):
            return .data(item.persistentRef.data)
        case (false, false, true, false):
            // Password items have no ref object on iOS: success with a NULL result. Keys come back as SecKeys.
            return keyReference(item)
        default:
            var dict: [String: PlistValue] = r.attributes ? returnedAttributes(item) : [:]
            if r.data, let data = item.data { dict["v_Data"] = .data(data) }
            if r.persistentRef { dict["v_PersistentRef"] = .data(item.persistentRef.data) }
            if r.ref {
                dict["class"] = .string(item.itemClass.rawValue)
                dict["v_Ref"] = keyReference(item)
            }
            return .dictionary(dict)
        }
    }

    /// The key inside results that the API layer turns into a `SecKey` object.
    package static let keyReferenceMarker = "swift-keychain.SecKey"
    /// The key inside results that the API layer turns into a `SecCertificate` object.
    package static let certificateReferenceMarker = "swift-keychain.SecCertificate"
    /// The key inside results that the API layer turns into a `SecIdentity` object (`certificate` and `key` inside).
    package static let identityReferenceMarker = "swift-keychain.SecIdentity"

    /// A key or certificate item as the API layer makes a `SecKey` or `SecCertificate` of it:
    /// `[marker: attributes and data]`; nil for the password classes, which have no ref objects.
    package static func keyReference(_ item: FoundItem) -> PlistValue? {
        if let key = item.identityKey {
            // The certificate and key halves, each made exactly as they are on their own.
            var certificate = item
            certificate.identityKey = nil
            guard case .dictionary(let c)? = keyReference(certificate), case .dictionary(let certificateFields)? = c[certificateReferenceMarker],
                case .dictionary(let k)? = keyReference(key.item), case .dictionary(let keyFields)? = k[keyReferenceMarker]
            else { return nil }
            return .dictionary([identityReferenceMarker: .dictionary(["certificate": .dictionary(certificateFields), "key": .dictionary(keyFields)])])
        }
        let marker: String
        switch item.itemClass {
        case .key: marker = keyReferenceMarker
        case .certificate: marker = certificateReferenceMarker
        default: return nil
        }
        if item.itemClass == .key, let publicKey = item.tokenPublicKey {
            // A key that never leaves: its reference and public key, never its private bytes.
            var fields = returnedAttributes(item)
            fields["v_PersistentRef"] = .data(item.persistentRef.data)
            fields["pub"] = .data(publicKey)
            return .dictionary([marker: .dictionary(fields)])
        }
        guard let data = item.data else { return nil }
        var fields = returnedAttributes(item)
        fields["v_Data"] = .data(data)
        return .dictionary([marker: .dictionary(fields)])
    }

    /// A certificate item's attributes with what Apple derives from its DER data (subject, issuer, serial number,
    /// key hashes, type and encoding) put over what the caller gave, and its label defaulting to the subject
    /// summary. Data that is not a certificate is stored as given.
    package static func withCertificateAttributes(_ attributes: [String: PlistValue]) -> [String: PlistValue] {
        guard attributes["class"] == .string(ItemClass.certificate.rawValue), case .data(let der)? = attributes["v_Data"],
            let certificate = try? CertificateData(der: der)
        else { return attributes }
        var out = attributes.merging(certificate.derivedAttributes) { $1 }
        if out["labl"] == nil, let summary = certificate.subjectSummary { out["labl"] = .string(summary) }
        return out
    }
}
