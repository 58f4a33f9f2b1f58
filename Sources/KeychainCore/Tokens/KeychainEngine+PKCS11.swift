import Foundation

// SecItemCopyMatching's view of PKCS#11 tokens: the keys and certificates on them, after the stored items, for callers
// that may see Apple's token group (`com.apple.token`). Token items are never written.

extension KeychainEngine {
    /// Whether `q` may return token items for `caller`: a key, certificate or identity query, not only for
    /// synchronizable items, by a caller that sees `com.apple.token` (named by the query, among its groups, or
    /// unrestricted like the `security` tool), with no token ID or a PKCS#11 one (`module:serial`).
    func tokenItemsApply(_ q: ItemQuery, caller: AccessPolicy) -> Bool {
        guard pkcs11 != nil, [.key, .certificate, .identity].contains(q.itemClass), q.sync != .synchronizable else { return false }
        if let group = q.accessGroup {
            guard group == PKCS11Item.accessGroup else { return false }
        }
        guard caller.unrestricted || caller.groups.contains(PKCS11Item.accessGroup) || caller.groups.contains("*") else { return false }
        if case .string(let token)? = q.attributes["tkid"] {
            return token != TokenKeys.secureEnclave && token.contains(":")
        }
        return q.attributes["tkid"] == nil
    }

    /// The token items of the present tokens, each once (a token that fails to list its objects is skipped and
    /// logged: tokens come and go).
    func presentTokenItems(tokenID: String? = nil) -> [PKCS11Item] {
        guard let pkcs11 else { return [] }
        let tokens: [PKCS11Token]
        do {
            tokens = try pkcs11.tokens().filter { tokenID == nil || $0.identifier == tokenID }
        } catch {
            logger.debug("PKCS#11 tokens not listed", metadata: ["error": "\(error.message)"])
            return []
        }
        var items: [PKCS11Item] = []
        for token in tokens {
            do {
                items += PKCS11Item.items(of: try pkcs11.objects(on: token), on: token)
            } catch {
                logger.debug("PKCS#11 token not read", metadata: ["token": "\(token.identifier)", "error": "\(error.message)"])
            }
        }
        return items
    }

    /// The token item a persistent reference names, if one of the present tokens holds it.
    func tokenItem(_ reference: PersistentReference) -> PKCS11Item? {
        guard pkcs11 != nil, reference.itemClass == .key || reference.itemClass == .certificate else { return nil }
        return presentTokenItems().first { $0.persistentReference == reference }
    }

    /// The token items matching `q` as found items: certificates with their DER, public keys with their bytes,
    /// private keys with their public key in ``FoundItem/tokenPublicKey`` (their private part stays on the token),
    /// identities as a certificate with the token's private key of the same `CKA_ID`. Empty when
    /// ``tokenItemsApply(_:caller:)`` is false.
    func tokenItems(_ q: ItemQuery, caller: AccessPolicy) -> [FoundItem] {
        guard tokenItemsApply(q, caller: caller) else { return [] }
        let tokenID = q.attributes["tkid"]?.stringValue
        let items = presentTokenItems(tokenID: tokenID)
        var out: [FoundItem] = []
        if q.itemClass == .identity {
            let certificateCodes = Set(ItemClass.certificate.attributes.map(\.code))
            let keyCodes = Set(ItemClass.key.attributes.map(\.code)).subtracting(certificateCodes)
            var certificates = q
            certificates.itemClass = .certificate
            certificates.attributes = q.attributes.filter { certificateCodes.contains($0.key) }
            var keys = q
            keys.itemClass = .key
            keys.attributes = q.attributes.filter { keyCodes.contains($0.key) }
            for certificate in items where certificate.kind == .certificate {
                guard matches(certificate.attributes, certificates),
                    q.persistentRef == nil || q.persistentRef == certificate.persistentReference,
                    let key = items.first(where: { $0.kind == .privateKey && $0.token == certificate.token && $0.objectID == certificate.objectID }),
                    matches(key.attributes, keys)
                else { continue }
                var identity = Self.foundItem(certificate)
                identity.identityKey = FoundItem.IdentityKey(
                    uuid: key.uuid, attributes: key.attributes, data: nil, tokenPublicKey: key.publicKey.map(\.bytes))
                out.append(identity)
            }
        } else {
            for item in items where item.itemClass == q.itemClass {
                guard matches(item.attributes, q), q.persistentRef == nil || q.persistentRef == item.persistentReference else { continue }
                out.append(Self.foundItem(item))
            }
        }
        if let limit = q.limit.maximum { out = Array(out.prefix(limit)) }
        return out
    }

    /// A token item as the engine returns it.
    static func foundItem(_ item: PKCS11Item) -> FoundItem {
        switch item.kind {
        case .certificate:
            return FoundItem(itemClass: .certificate, uuid: item.uuid, attributes: item.attributes, data: item.certificate)
        case .publicKey:
            return FoundItem(itemClass: .key, uuid: item.uuid, attributes: item.attributes, data: item.publicKey?.bytes)
        case .privateKey:
            var found = FoundItem(itemClass: .key, uuid: item.uuid, attributes: item.attributes, data: nil)
            found.tokenPublicKey = item.publicKey?.bytes
            return found
        }
    }

    /// Refuses a write to `com.apple.token`: token items are read-only (`errSecMissingEntitlement`, as Apple's
    /// server refuses the group for add, update and delete).
    func refuseTokenGroupWrite(_ q: ItemQuery) throws(KeychainError) {
        guard q.accessGroup == PKCS11Item.accessGroup else { return }
        throw KeychainError(
            code: .missingEntitlement,
            message: "The access group \(PKCS11Item.accessGroup) holds the items of smart cards and other tokens, which are read-only: they cannot be added, updated or deleted through the keychain.")
    }
}
