import Foundation

/// Apple's four SecItem operations on property-list dictionaries, with Apple's result shapes.
///
/// The API layer converts CoreFoundation values to ``PlistValue`` and back; everything between (parsing,
/// entitlement checks, storage, result shaping) happens here, so embedded and daemon modes share it.
extension KeychainEngine {
    /// `SecItemAdd`. Returns the result object when a return key was set.
    package func secItemAdd(_ attributes: [String: PlistValue], caller: AccessPolicy) throws(KeychainError) -> PlistValue? {
        let q = try QueryParser.parse(KeychainEngine.withCertificateAttributes(attributes), for: .add)
        if q.hasMatchKeys { throw .param("SecItemAdd does not take kSecMatch… keys.") }
        let item = try add(q, caller: caller)
        guard q.returns.any else { return nil }
        return KeychainEngine.shape(item, q.returns, addResult: true)
    }

    /// `SecItemCopyMatching`.
    package func secItemCopyMatching(_ query: [String: PlistValue], caller: AccessPolicy) throws(KeychainError) -> PlistValue? {
        let q = try QueryParser.parse(query, for: .copyMatching)
        let items = try find(q, caller: caller)
        guard q.returns.any else { return nil }
        if q.limit.returnsArray {
            let shaped = items.compactMap { KeychainEngine.shape($0, q.returns, addResult: false) }
            return shaped.isEmpty ? nil : .array(shaped)
        }
        return items.first.flatMap { KeychainEngine.shape($0, q.returns, addResult: false) }
    }

    /// `SecItemUpdate`.
    package func secItemUpdate(_ query: [String: PlistValue], attributesToUpdate: [String: PlistValue], caller: AccessPolicy) throws(KeychainError) {
        let q = try QueryParser.parse(query, for: .update)
        let (changes, sync, data) = try QueryParser.parseUpdate(attributesToUpdate, itemClass: q.itemClass)
        try update(q, attributes: changes, sync: sync, data: data, caller: caller)
    }

    /// `SecItemDelete`.
    package func secItemDelete(_ query: [String: PlistValue], caller: AccessPolicy) throws(KeychainError) {
        let q = try QueryParser.parse(query, for: .delete)
        try delete(q, caller: caller)
    }

    /// The attributes Apple returns for an item: everything stored, plus `musr` (empty for the single-user keychain).
    package static func returnedAttributes(_ item: FoundItem) -> [String: PlistValue] {
        var out = item.attributes.mapValues(\.plist)
        out["musr"] = .data(Data())
        return out
    }

    /// One item's result (Apple's `SecDbItemCopyResult` plus the client's post-processing).
    static func shape(_ stored: FoundItem, _ r: ReturnOptions, addResult: Bool) -> PlistValue? {
        // A token key's data is its private key, which never leaves: results carry no data for it.
        var item = stored
        if item.itemClass == .key, TokenKeys.isTokenKey(item.attributes) { item.data = nil }
        switch (r.data, r.attributes, r.ref, r.persistentRef) {
        case (true, false, false, false):
            return .data(item.data ?? Data())
        case (false, false, false, true):
            return .data(item.persistentRef.data)
        case (false, false, true, false):
            // Password items have no ref object on iOS: success with a NULL result. Keys come back as SecKeys.
            return keyReference(stored)
        default:
            var dict: [String: PlistValue] = r.attributes ? returnedAttributes(item) : [:]
            if r.data, let data = item.data { dict["v_Data"] = .data(data) }
            if r.persistentRef { dict["v_PersistentRef"] = .data(item.persistentRef.data) }
            if r.ref {
                dict["class"] = .string(item.itemClass.rawValue)
                dict["v_Ref"] = keyReference(stored)
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
    static func keyReference(_ item: FoundItem) -> PlistValue? {
        if let key = item.identityKey {
            // The certificate and key halves, each made exactly as they are on their own.
            var certificate = item
            certificate.identityKey = nil
            let privateKey = FoundItem(itemClass: .key, uuid: key.uuid, attributes: key.attributes, data: key.data)
            guard case .dictionary(let c)? = keyReference(certificate), case .dictionary(let certificateFields)? = c[certificateReferenceMarker],
                  case .dictionary(let k)? = keyReference(privateKey), case .dictionary(let keyFields)? = k[keyReferenceMarker] else { return nil }
            return .dictionary([identityReferenceMarker: .dictionary(["certificate": .dictionary(certificateFields), "key": .dictionary(keyFields)])])
        }
        let marker: String
        switch item.itemClass {
        case .key: marker = keyReferenceMarker
        case .certificate: marker = certificateReferenceMarker
        default: return nil
        }
        guard let data = item.data else { return nil }
        if item.itemClass == .key, TokenKeys.isTokenKey(item.attributes) {
            // A key that never leaves: its reference and public key, never its private bytes.
            guard let reference = try? TokenKeys.reference(item, privateBytes: data) else { return nil }
            return .dictionary([marker: .dictionary(reference)])
        }
        var fields = returnedAttributes(item)
        fields["v_Data"] = .data(data)
        return .dictionary([marker: .dictionary(fields)])
    }

    /// A certificate item's attributes with what Apple derives from its DER data (subject, issuer, serial number,
    /// key hashes, type and encoding) put over what the caller gave, and its label defaulting to the subject
    /// summary. Data that is not a certificate is stored as given.
    static func withCertificateAttributes(_ attributes: [String: PlistValue]) -> [String: PlistValue] {
        guard attributes["class"] == .string(ItemClass.certificate.rawValue), case .data(let der)? = attributes["v_Data"],
              let certificate = try? CertificateData(der: der) else { return attributes }
        var out = attributes.merging(certificate.derivedAttributes) { $1 }
        if out["labl"] == nil, let summary = certificate.subjectSummary { out["labl"] = .string(summary) }
        return out
    }
}
