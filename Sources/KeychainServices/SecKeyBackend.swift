#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation
import KeychainClient
import KeychainCore
import LocalAuthentication

/// What the SecKey functions do: parameter dictionaries in, `KeyMaterial` operations, `CFError`s out.
enum SecKeyBackend {
    /// Runs `body`; on failure stores the error as Apple's CFError (domain `NSOSStatusErrorDomain`, code the
    /// `OSStatus`) and returns nil.
    static func attempt<T>(_ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws(KeychainError) -> T) -> T? {
        error?.pointee = nil
        do {
            return try body()
        } catch let failure {
            SecItemBackend.logger.debug("SecKey call failed", metadata: ["status": "\(failure.status.rawValue)"])
            let object = NSError(
                domain: NSOSStatusErrorDomain, code: Int(failure.status.rawValue),
                userInfo: [NSDebugDescriptionErrorKey: failure.message])
            error?.pointee = Unmanaged.passRetained(object)
            return nil
        }
    }

    static func createRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
        attempt(error) { () throws(KeychainError) in
            let p = try SecItemBackend.plistDictionary(parameters)
            let type = try keyType(p["type"])
            guard let size = p["bsiz"].flatMap(number) else {
                throw KeychainError(code: .invalidParameter, message: "kSecAttrKeySizeInBits is required: 256, 384 or 521 for EC, 2048 to 4096 for RSA.")
            }
            let privateAttributes = try nested(p, "private"), publicAttributes = try nested(p, "public")
            if case .string(let token)? = p["tkid"] ?? privateAttributes["tkid"] {
                let context = ((parameters["private"] as? NSDictionary)?["u_AuthCtx"] ?? parameters["u_AuthCtx"]) as? LAContext
                return try createTokenKey(token, type: type, size: size, p, privateAttributes, context: context)
            }
            let material = try KeyMaterial.generate(type: type, sizeInBits: Int(size))
            // Shared attributes first, the key's own over them.
            let shared = p.filter { storedAttributes.contains($0.key) }
            let privateExtra = shared.merging(privateAttributes.filter { storedAttributes.contains($0.key) }) { $1 }
            if flag(p["perm"]) || flag(privateAttributes["perm"]) {
                try store(material, privateExtra)
            }
            if flag(publicAttributes["perm"]) {
                // A shared kSecAttrAccessControl guards the private key; the public key gets only its own.
                let publicShared = shared.filter { $0.key != "accc" }
                try store(try material.publicKey(), publicShared.merging(publicAttributes.filter { storedAttributes.contains($0.key) }) { $1 })
            }
            return SecKey(material, attributes: privateExtra)
        }
    }

    /// `SecKeyGeneratePair`: a random key whose top-level `kSecAttrIsPermanent` stores the public key too.
    static func generatePair(
        _ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?,
        _ privateKey: UnsafeMutablePointer<SecKey?>?
    ) -> OSStatus {
        publicKey?.pointee = nil
        privateKey?.pointee = nil
        let given = parameters.mutableCopy() as? NSMutableDictionary ?? NSMutableDictionary()
        if let permanent = given["perm"] {
            let publicAttributes = (given["public"] as? NSDictionary)?.mutableCopy() as? NSMutableDictionary ?? NSMutableDictionary()
            if publicAttributes["perm"] == nil { publicAttributes["perm"] = permanent }
            given["public"] = publicAttributes
        }
        var error: Unmanaged<CFError>?
        guard let key = createRandomKey(given, &error), let pair = copyPublicKey(key) else {
            return error.map { OSStatus(truncatingIfNeeded: $0.takeRetainedValue().code) } ?? errSecInternalComponent
        }
        publicKey?.pointee = pair
        privateKey?.pointee = key
        return errSecSuccess
    }

    static func createWithData(_ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
        attempt(error) { () throws(KeychainError) in
            let p = try SecItemBackend.plistDictionary(attributes)
            let type = try keyType(p["type"])
            guard let raw = p["kcls"].flatMap(number), let keyClass = KeyClass(rawValue: raw) else {
                throw KeychainError(code: .invalidParameter, message: "kSecAttrKeyClass must be kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate.")
            }
            let material = try KeyMaterial(externalRepresentation: keyData as Data, type: type, keyClass: keyClass)
            return SecKey(material, attributes: p.filter { storedAttributes.contains($0.key) })
        }
    }

    static func copyPublicKey(_ key: SecKey) -> SecKey? {
        guard let material = try? key.material.publicKey() else { return nil }
        return SecKey(material, attributes: key.extraAttributes)
    }

    static func copyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
        attempt(error) { () throws(KeychainError) in
            guard key.tokenReference == nil else {
                throw KeychainError(
                    code: .unimplemented,
                    message:
                        "The key lives in the keychain's token and is not extractable; use it through SecKeyCreateSignature, SecKeyCreateDecryptedData or SecKeyCopyKeyExchangeResult, or export its public key (SecKeyCopyPublicKey)."
                )
            }
            return NSData(data: key.material.bytes)
        }
    }

    static func copyAttributes(_ key: SecKey) -> CFDictionary? {
        guard var attributes = try? attributeDictionary(key.material, key.extraAttributes) else { return nil }
        if key.tokenReference != nil {
            // The public key's derivation, with the private key's class and capabilities, and no key bytes.
            attributes.merge(KeyMaterial.capabilities(isPrivate: true)) { $1 }
            attributes["v_Data"] = nil
            attributes["perm"] = .int(1)
        }
        if case .data(let bytes)? = attributes["accc"], let control = AccessControl(encoded: bytes) {
            attributes["accc"] = .accessControl(control)
        }
        // A key's own dictionary gives its class and type as Apple's string constants (`kSecAttrKeyClassPrivate`,
        // `kSecAttrKeyTypeECSECPrimeRandom`), as Apple's does; only a stored item's attributes have them as numbers.
        for name in ["kcls", "type"] {
            if case .int(let value)? = attributes[name] { attributes[name] = .string(String(value)) }
        }
        return SecItemBackend.object(.dictionary(attributes)) as? NSDictionary
    }

    static func createSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
        attempt(error) { () throws(KeychainError) in
            let (parsed, name) = try resolve(algorithm)
            if let reference = key.tokenReference {
                return NSData(data: try tokenOperation(.sign(reference: tokenReference(reference), algorithm: name, input: data as Data), key))
            }
            return NSData(data: try key.material.sign(parsed, identifier: name, data as Data))
        }
    }

    /// Makes a key that never leaves the keychain: the engine (keychaind in daemon mode) generates and stores it.
    /// A `kSecAttrAccessControl` among the attributes (with `.privateKeyUsage`, the constraints its signing,
    /// decryption and key exchange need) is stored with the key; `context` is the `kSecUseAuthenticationContext`
    /// given, which the key's operations use.
    static func createTokenKey(
        _ token: String, type: KeyType, size: Int64, _ p: [String: PlistValue],
        _ privateAttributes: [String: PlistValue], context: LAContext?
    ) throws(KeychainError) -> SecKey {
        guard token == TokenKeys.secureEnclave else {
            throw KeychainError(code: .invalidParameter, message: "kSecAttrTokenID must be kSecAttrTokenIDSecureEnclave.")
        }
        guard type == .ec, size == 256 else {
            throw KeychainError(code: .invalidParameter, message: "Keys in the token are EC P-256 (kSecAttrKeyTypeECSECPrimeRandom, 256 bits).")
        }
        var attributes = p.filter { storedAttributes.contains($0.key) }
        attributes.merge(privateAttributes.filter { storedAttributes.contains($0.key) }) { $1 }
        attributes["tkid"] = .string(token)
        attributes["class"] = .string(ItemClass.key.rawValue)
        let query = try QueryParser.parse(attributes, for: .add)
        guard case .key(let item) = try KeychainConnector.environment().tokenKey(.create(query)),
            case .dictionary(let marker)? = SecItemDictionaries.keyReference(item),
            case .dictionary(let fields)? = marker[SecItemDictionaries.keyReferenceMarker],
            let key = key(fromReference: fields, context: context)
        else {
            throw KeychainError(code: .internal, message: "The keychain did not return the token key it made.")
        }
        return key
    }

    /// Verifying and encrypting take the public key (`SecKeyCopyPublicKey`), as for any private key.
    static func tokenKeysArePrivate(_ algorithm: String) -> KeychainError {
        KeychainError(code: .invalidParameter, message: "Algorithm \(algorithm) is not supported for this private key's operation; use its public key (SecKeyCopyPublicKey).")
    }

    /// A private operation on a token key, carried out where the key is, under the key's authentication context
    /// (the proofs its access control needs are asked for when the context does not hold them).
    static func tokenOperation(_ request: TokenKeyRequest, _ key: SecKey) throws(KeychainError) -> Data {
        var authentication = AuthenticationOptions()
        if let context = key.authenticationContext { authentication.apply(context.value) }
        guard case .data(let result) = try KeychainConnector.environment().tokenKey(request, authentication: authentication) else {
            throw KeychainError(code: .internal, message: "The keychain returned no result for the token key operation.")
        }
        return result
    }

    /// The persistent reference a token key's `SecKey` holds.
    static func tokenReference(_ data: Data) throws(KeychainError) -> PersistentReference {
        guard let reference = PersistentReference(data), reference.itemClass == .key else {
            throw KeychainError(code: .invalidParameter, message: "The key's reference is not a key in this keychain.")
        }
        return reference
    }

    static func verifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: CFData, _ signature: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
        attempt(error) { () throws(KeychainError) in
            let (parsed, name) = try resolve(algorithm)
            guard key.tokenReference == nil else { throw tokenKeysArePrivate(name) }
            try key.material.verify(parsed, identifier: name, data as Data, signature: signature as Data)
            return true
        } ?? false
    }

    static func createEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
        attempt(error) { () throws(KeychainError) in
            let (parsed, name) = try resolve(algorithm)
            guard key.tokenReference == nil else { throw tokenKeysArePrivate(name) }
            return NSData(data: try key.material.encrypt(parsed, identifier: name, plaintext as Data))
        }
    }

    static func createDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
        attempt(error) { () throws(KeychainError) in
            let (parsed, name) = try resolve(algorithm)
            if let reference = key.tokenReference {
                return NSData(data: try tokenOperation(.decrypt(reference: tokenReference(reference), algorithm: name, input: ciphertext as Data), key))
            }
            return NSData(data: try key.material.decrypt(parsed, identifier: name, ciphertext as Data))
        }
    }

    static func copyKeyExchangeResult(
        _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary,
        _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
    ) -> CFData? {
        attempt(error) { () throws(KeychainError) in
            let (parsed, name) = try resolve(algorithm)
            let p = try SecItemBackend.plistDictionary(parameters)
            var sharedInfo = Data()
            if let info = p["sharedInfo"] {
                guard case .data(let bytes) = info else {
                    throw KeychainError(code: .invalidParameter, message: "kSecKeyKeyExchangeParameterSharedInfo must be data.")
                }
                sharedInfo = bytes
            }
            let size = p["requestedSize"].flatMap(number).map { Int(clamping: $0) }
            if let reference = privateKey.tokenReference {
                return NSData(
                    data: try tokenOperation(
                        .exchange(
                            reference: tokenReference(reference), algorithm: name,
                            peer: try publicKey.material.publicKey().bytes,
                            requestedSize: size, sharedInfo: sharedInfo), privateKey))
            }
            return NSData(
                data: try privateKey.material.keyExchange(
                    parsed, identifier: name, peer: publicKey.material,
                    requestedSize: size, sharedInfo: sharedInfo))
        }
    }

    static func isAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
        guard let parsed = KeyAlgorithm(identifier: algorithm.rawValue as String),
            let op = KeyOperation(rawValue: operation.rawValue)
        else { return false }
        if key.tokenReference != nil {
            return [.sign, .decrypt, .keyExchange].contains(op) && parsed.operations.contains(op) && parsed.isEC
        }
        return key.material.supports(op, parsed)
    }

    // MARK: Keys in the keychain

    /// The attributes a caller may give a stored key (the rest are derived from the key).
    static let storedAttributes: Set<String> = ["labl", "atag", "agrp", "pdmn", "sync", "alis", "crtr", "tkid", "accc"]

    /// Adds a key to the keychain as a `kSecClassKey` item: its derived attributes, and its external representation
    /// as the item's (encrypted) data.
    static func store(_ material: KeyMaterial, _ extra: [String: PlistValue]) throws(KeychainError) {
        var item = try attributeDictionary(material, extra)
        item["class"] = .string(ItemClass.key.rawValue)
        item["perm"] = .int(1)
        _ = try SecItemBackend.connection().secItemAdd(item)
    }

    /// Apple's attribute dictionary for a key (`SecKeyCopyAttributeDictionary`), over `extra`.
    static func attributeDictionary(_ m: KeyMaterial, _ extra: [String: PlistValue]) throws(KeychainError) -> [String: PlistValue] {
        try m.itemAttributes(extra)
    }

    /// A key item found in the keychain, as the engine returns it for `kSecReturnRef`; a token key keeps `context`
    /// (the search's `kSecUseAuthenticationContext`) for its private operations.
    static func key(fromReference fields: [String: PlistValue], context: LAContext? = nil) -> SecKey? {
        if case .data(let reference)? = fields["v_PersistentRef"], case .data(let publicBytes)? = fields["pub"], fields["v_Data"] == nil {
            // The key's type as the item gives it (RSA for a smart card's key); the keychain's own token keys are EC.
            let type = (try? keyType(fields["type"])) ?? .ec
            guard let publicKey = try? KeyMaterial(externalRepresentation: publicBytes, type: type, keyClass: .publicKey) else { return nil }
            return SecKey(
                publicKey, attributes: fields.filter { storedAttributes.contains($0.key) }, tokenReference: reference,
                authenticationContext: context)
        }
        guard case .data(let bytes)? = fields["v_Data"], let type = (try? keyType(fields["type"])),
            let raw = fields["kcls"].flatMap(number), let keyClass = KeyClass(rawValue: raw),
            let material = try? KeyMaterial(externalRepresentation: bytes, type: type, keyClass: keyClass)
        else { return nil }
        return SecKey(material, attributes: fields.filter { storedAttributes.contains($0.key) || $0.key == "perm" })
    }

    // MARK: PKCS#12

    static func importPKCS12(_ data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>) -> OSStatus {
        items.pointee = nil
        do {
            guard let password = options["passphrase"] as? String else {
                throw KeychainError(code: .invalidParameter, message: "SecPKCS12Import needs kSecImportExportPassphrase.")
            }
            let contents = try PKCS12.open(data as Data, password: password)
            // As Apple's: one dictionary per identity (a key with its certificate), whose chain holds every
            // certificate of the file: the identity's first, then its issuers, then the others. A file with
            // certificates alone gives one dictionary of them.
            let leaves = contents.identities.compactMap(\.certificate)
            var found: [NSDictionary] = []
            for identity in contents.identities {
                guard let certificate = identity.certificate else { continue }
                var item: [String: AnyObject] = [:]
                var chain = [certificate] + PKCS12.issuers(of: certificate, in: contents.certificates)
                for other in contents.certificates + leaves where !chain.contains(where: { $0.der == other.der }) { chain.append(other) }
                item["identity"] = SecIdentity(certificate: SecCertificate(certificate), privateKey: SecKey(identity.key))
                item["keyid"] = NSData(data: certificate.publicKeyHash)
                item["chain"] = NSArray(array: chain.map(SecCertificate.init))
                if let name = identity.friendlyName { item["label"] = NSString(string: name) }
                found.append(NSDictionary(dictionary: item))
            }
            if found.isEmpty {
                found.append(NSDictionary(dictionary: ["chain": NSArray(array: contents.certificates.map(SecCertificate.init))]))
            }
            items.pointee = NSArray(array: found)
            return errSecSuccess
        } catch let error as KeychainError {
            SecItemBackend.logger.debug("SecPKCS12Import failed", metadata: ["status": "\(error.status.rawValue)"])
            return error.status.rawValue
        } catch {
            return errSecInternalError
        }
    }

    /// A found identity, as the engine returns it for `kSecReturnRef`.
    static func identity(fromReference fields: [String: PlistValue], context: LAContext? = nil) -> SecIdentity? {
        guard case .dictionary(let certificateFields)? = fields["certificate"], case .data(let der)? = certificateFields["v_Data"],
            let certificate = try? CertificateData(der: der),
            case .dictionary(let keyFields)? = fields["key"], let key = key(fromReference: keyFields, context: context)
        else { return nil }
        return SecIdentity(certificate: SecCertificate(certificate), privateKey: key)
    }

    // MARK: Parameters

    private static func resolve(_ algorithm: SecKeyAlgorithm) throws(KeychainError) -> (KeyAlgorithm, String) {
        let name = algorithm.rawValue as String
        guard let parsed = KeyAlgorithm(identifier: name) else {
            if let reason = KeyAlgorithm.unimplementedReason(name) { throw KeychainError(code: .unimplemented, message: reason) }
            throw KeychainError(code: .invalidParameter, message: "Algorithm \(name) is not supported. Check SecKeyIsAlgorithmSupported first.")
        }
        return (parsed, name)
    }

    private static func keyType(_ value: PlistValue?) throws(KeychainError) -> KeyType {
        guard let raw = value.flatMap(number), let type = KeyType(rawValue: raw) else {
            throw KeychainError(code: .invalidParameter, message: "kSecAttrKeyType must be kSecAttrKeyTypeECSECPrimeRandom or kSecAttrKeyTypeRSA.")
        }
        return type
    }

    /// A number given as a number or as its decimal string (Apple's key constants are strings: "73", "42", "1").
    private static func number(_ value: PlistValue) -> Int64? {
        switch value {
        case .int(let n): n
        case .string(let s): Int64(s)
        default: nil
        }
    }

    private static func flag(_ value: PlistValue?) -> Bool {
        switch value {
        case .bool(let b)?: b
        case .int(let n)?: n != 0
        default: false
        }
    }

    private static func nested(_ p: [String: PlistValue], _ key: String) throws(KeychainError) -> [String: PlistValue] {
        guard let value = p[key] else { return [:] }
        guard case .dictionary(let d) = value else {
            throw KeychainError(code: .invalidParameter, message: "kSecPrivateKeyAttrs and kSecPublicKeyAttrs must be dictionaries.")
        }
        return d
    }
}
#endif
