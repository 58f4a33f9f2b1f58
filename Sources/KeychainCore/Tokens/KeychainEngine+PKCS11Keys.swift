import Foundation

// SecKeyCreateSignature, SecKeyCreateDecryptedData and SecKeyCopyKeyExchangeResult on a PKCS#11 token's private
// key: the request names the key's item (its persistent reference, from SecItemCopyMatching), and the token does the
// work through PKCS11Registry, logged in with the PIN the caller's LAContext carries (`.smartCardPIN`).

extension KeychainEngine {
    /// Carries out `request` on the token key `reference` names; nil when no present token holds that item (the
    /// reference is then the keychain's own).
    ///
    /// The PIN is `authentication`'s ``AuthenticationOptions/smartCardPIN``: a token that requires login
    /// (`CKF_LOGIN_REQUIRED`) and gets none fails the call with `errSecInteractionNotAllowed`, as Apple's calls do
    /// when CryptoTokenKit may not ask for the PIN; a wrong PIN is `errSecAuthFailed`. The PIN is passed to the token
    /// only, never logged or kept.
    func pkcs11TokenKey(
        _ request: TokenKeyRequest, reference: PersistentReference, algorithmName: String, caller: AccessPolicy,
        authentication: AuthenticationOptions
    ) throws(KeychainError) -> TokenKeyResult? {
        guard let pkcs11, reference.itemClass == .key, let item = tokenItem(reference) else { return nil }
        guard caller.unrestricted || caller.groups.contains(PKCS11Item.accessGroup) || caller.groups.contains("*") else {
            throw KeychainError.notFound("The token key is not visible to this program (its groups lack com.apple.token).")
        }
        guard item.kind == .privateKey, let publicKey = item.publicKey else {
            throw KeychainError(code: .invalidParameter, message: "A token's public key verifies and encrypts in this process; only its private key signs, decrypts and agrees keys.")
        }
        guard let algorithm = KeyAlgorithm(identifier: algorithmName) else {
            if let reason = KeyAlgorithm.unimplementedReason(algorithmName) { throw KeychainError(code: .unimplemented, message: reason) }
            throw .param("The algorithm is not supported. Check SecKeyIsAlgorithmSupported first.")
        }
        var pin: String?
        if let given = authentication.smartCardPIN {
            guard let text = String(data: given, encoding: .utf8) else { throw .param("A smart card PIN must be UTF-8 text.") }
            pin = text
        } else if item.token.loginRequired {
            throw KeychainError(
                code: .interactionNotAllowed,
                message:
                    "The key is on the token \(item.token.identifier), which needs its PIN: give it with LAContext's setCredential(_:type: .smartCardPIN) and pass the context as kSecUseAuthenticationContext."
            )
        }
        let token = item.token, id = item.objectID
        switch request {
        case .create:
            throw .param("Keys are generated on a token with its own tools (pkcs11-tool --keypairgen).")
        case .sign(_, _, let input):
            logger.debug("token key operation", metadata: ["op": "sign", "in": "pkcs11"])
            let (tokenInput, mechanism, derEncode) = try Self.pkcs11Signing(algorithm, algorithmName, input, publicKey)
            let signature = try pkcs11.sign(tokenInput, keyID: id, on: token, mechanism: mechanism, pin: pin)
            return .data(derEncode ? try Self.ecdsaDER(fromRaw: signature) : signature)
        case .decrypt(_, _, let input):
            logger.debug("token key operation", metadata: ["op": "decrypt", "in": "pkcs11"])
            guard publicKey.type == .rsa, case .rsaEncryption(let padding, let aesGCM) = algorithm, !aesGCM else {
                throw .param("Algorithm \(algorithmName) does not decrypt with this token key (RSA PKCS#1, OAEP or raw only).")
            }
            let mechanism: PKCS11DecryptMechanism =
                switch padding {
                case .none: .rsaRaw
                case .pkcs1: .rsaPKCS1
                case .oaep(let hash): .rsaOAEP(Self.pkcs11Hash(hash))
                }
            return .data(try pkcs11.decrypt(input, keyID: id, on: token, mechanism: mechanism, pin: pin))
        case .exchange(_, _, let peer, let requestedSize, let sharedInfo):
            logger.debug("token key operation", metadata: ["op": "exchange", "in": "pkcs11"])
            guard publicKey.type == .ec, case .ecdh(_, let kdf) = algorithm else {
                throw .param("Algorithm \(algorithmName) is not a key exchange for this token key (ECDH only).")
            }
            let peerKey = try KeyMaterial(externalRepresentation: peer, type: .ec, keyClass: .publicKey)
            guard peerKey.sizeInBits == publicKey.sizeInBits else {
                throw .param("The other party's key must be an EC public key on the same curve.")
            }
            let secret = try pkcs11.deriveECDH(keyID: id, on: token, peerPublicKey: peerKey.bytes, pin: pin)
            guard let kdf else { return .data(secret) }
            guard let requestedSize, (1...1 << 16).contains(requestedSize) else {
                throw .param("\(algorithmName) needs kSecKeyKeyExchangeParameterRequestedSize (1 to 65536 bytes).")
            }
            // ANSI X9.63's KDF: the digests of secret ‖ counter (32-bit big-endian, from 1) ‖ shared info.
            var output = Data()
            var counter: UInt32 = 1
            while output.count < requestedSize {
                output += try kdf.digest(secret + withUnsafeBytes(of: counter.bigEndian) { Data($0) } + sharedInfo)
                counter += 1
            }
            return .data(Data(output.prefix(requestedSize)))
        }
    }

    /// What the token signs for `algorithm`, how, and whether its raw ECDSA `r‖s` becomes X9.62 DER: ECDSA over the
    /// digest (hashed here for the message algorithms); RSA PKCS#1 v1.5 over the DigestInfo of the digest (the input
    /// as given for the Raw algorithm); PSS over the digest with a salt as long as it; raw RSA.
    static func pkcs11Signing(
        _ algorithm: KeyAlgorithm, _ name: String, _ input: Data, _ publicKey: KeyMaterial
    ) throws(KeychainError) -> (Data, PKCS11SignMechanism, derEncode: Bool) {
        func checked(_ digest: Data, _ hash: KeyHash?) throws(KeychainError) -> Data {
            if let hash, digest.count != hash.byteCount {
                throw .param("Bad digest size for signing with algorithm \(name): \(digest.count) bytes, expected \(hash.byteCount).")
            }
            return digest
        }
        switch algorithm {
        case .ecdsaDigest(let hash, let raw) where publicKey.type == .ec:
            return (try checked(input, hash), .ecdsa, !raw)
        case .ecdsaMessage(let hash, let raw) where publicKey.type == .ec:
            return (try hash.digest(input), .ecdsa, !raw)
        case .rsaSignature(let padding, let hash, let message) where publicKey.type == .rsa:
            let digest: Data
            if message, let hash { digest = try hash.digest(input) } else { digest = try checked(input, hash) }
            switch padding {
            case .none:
                guard digest.count <= publicKey.blockSize else {
                    throw .param("\(name) signs at most \(publicKey.blockSize) bytes with this key; got \(digest.count).")
                }
                return (Data(count: publicKey.blockSize - digest.count) + digest, .rsaRaw, false)
            case .pkcs1v15:
                return (hash.map { digestInfoPrefix($0) + digest } ?? digest, .rsaPKCS1, false)
            case .pss:
                guard let hash else { throw .param("\(name) names no hash for PSS.") }
                return (digest, .rsaPSS(hash: pkcs11Hash(hash), saltLength: hash.byteCount), false)
            }
        default:
            throw .param("Algorithm \(name) does not sign with this token key.")
        }
    }

    static func pkcs11Hash(_ hash: KeyHash) -> PKCS11Hash {
        switch hash {
        case .sha1: .sha1
        case .sha224: .sha224
        case .sha256: .sha256
        case .sha384: .sha384
        case .sha512: .sha512
        }
    }

    /// The DER of a DigestInfo up to the digest (RFC 8017, section 9.2, note 1).
    static func digestInfoPrefix(_ hash: KeyHash) -> Data {
        switch hash {
        case .sha1: Data([0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2B, 0x0E, 0x03, 0x02, 0x1A, 0x05, 0x00, 0x04, 0x14])
        case .sha224: Data([0x30, 0x2D, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04, 0x05, 0x00, 0x04, 0x1C])
        case .sha256: Data([0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20])
        case .sha384: Data([0x30, 0x41, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30])
        case .sha512: Data([0x30, 0x51, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40])
        }
    }

    /// An X9.62 `Ecdsa-Sig-Value` (DER `SEQUENCE { r INTEGER, s INTEGER }`) from PKCS#11's raw `r‖s`.
    static func ecdsaDER(fromRaw raw: Data) throws(KeychainError) -> Data {
        guard !raw.isEmpty, raw.count % 2 == 0, raw.count <= 2 * 66 else {
            throw KeychainError(code: .internal, message: "The token returned an ECDSA signature of \(raw.count) bytes, not r‖s.")
        }
        func length(_ count: Int) -> Data { count < 0x80 ? Data([UInt8(count)]) : Data([0x81, UInt8(count)]) }
        func integer(_ bytes: Data) -> Data {
            var value = Data(bytes.drop { $0 == 0 })
            if value.isEmpty || (value.first ?? 0) & 0x80 != 0 { value.insert(0, at: 0) }
            return Data([0x02]) + length(value.count) + value
        }
        let half = raw.count / 2
        let body = integer(Data(raw.prefix(half))) + integer(Data(raw.suffix(half)))
        return Data([0x30]) + length(body.count) + body
    }
}
