import Crypto
import Foundation
import Synchronization

/// Token keys inside the machine's TPM 2.0: when the engine has a TPM (``TPMDevice``), a new
/// `kSecAttrTokenIDSecureEnclave` key is created by the TPM under its storage key, and the item keeps only the TPM's
/// wrapped blobs (``TPMKeyBlob``), which no other TPM can load; signing and key agreement run in the TPM. The item
/// says where its key is: `kSecAttrCreator` is ``creator`` (`'tpm2'`) for a key in the TPM, and 0 for a key held by
/// keychaind.
extension TokenKeys {
    /// `kSecAttrCreator` of a key inside the TPM: the four characters `tpm2`.
    package static let creator: Int64 = 0x7470_6D32

    /// One open session per TPM, shared by the engines of this process (an open session holds a TPM object slot).
    private static let sessions = Mutex<[String: TPMSession]>([:])

    /// Whether stored key bytes are a TPM key's blobs rather than a private key.
    static func isTPMKey(_ bytes: Data) -> Bool { bytes.starts(with: TPMKeyBlob.magic) }

    /// The open session to `device`, opened on first use.
    static func session(_ device: TPMDevice) throws(KeychainError) -> TPMSession {
        if let open = sessions.withLock({ $0[device.tcti] }) { return open }
        let opened: TPMSession
        do {
            opened = try TPMSession(device: device)
        } catch {
            throw tpmError(error)
        }
        return sessions.withLock { open in
            if let other = open[device.tcti] { return other }
            open[device.tcti] = opened
            return opened
        }
    }

    /// Runs `body` on `device`'s session; a session whose TPM stopped answering (a restarted TPM) is opened again
    /// once.
    static func withSession<T>(_ device: TPMDevice, _ body: (TPMSession) throws(TPMDevice.Failure) -> T) throws(KeychainError) -> T {
        for attempt in 0..<2 {
            let session = try session(device)
            do {
                return try body(session)
            } catch {
                guard case .unreachable = error, attempt == 0 else { throw tpmError(error) }
                sessions.withLock { _ = $0.removeValue(forKey: device.tcti) }
            }
        }
        throw KeychainError(code: .notAvailable, message: "The TPM does not answer.")
    }

    static func tpmError(_ failure: TPMDevice.Failure) -> KeychainError {
        switch failure {
        case .unreachable(let why):
            KeychainError(code: .notAvailable, message: "The TPM that holds the key does not answer (\(why)). Check that the TPM (or swtpm) is there and KEYCHAIN_TPM_TCTI names it.")
        case .refused(let why):
            KeychainError(code: .corruptData, message: "The TPM refused the key: it was made by another TPM, or its blobs were altered (\(why)).")
        case .failed(let why):
            KeychainError(code: .invalidParameter, message: "The TPM could not do it: \(why)")
        }
    }

    /// Creates a key inside `device`: the bytes to store and the key item's attributes (type, size, class,
    /// capabilities, application label, creator).
    static func createInTPM(_ device: TPMDevice) throws(KeychainError) -> (bytes: Data, attributes: [String: PlistValue]) {
        let blob = try withSession(device) { session throws(TPMDevice.Failure) in try session.createKey() }
        let publicKey = try KeyMaterial(externalRepresentation: Data(blob.x963PublicKey), type: .ec, keyClass: .publicKey)
        var attributes = try publicKey.itemAttributes(["perm": .int(1)])
        attributes.merge(KeyMaterial.capabilities(isPrivate: true)) { $1 }
        attributes["v_Data"] = nil
        attributes["crtr"] = .int(creator)
        return (Data(blob.serialized), attributes)
    }

    /// The public key (X9.63) of a TPM key's stored bytes.
    static func tpmPublicKey(_ bytes: Data) throws(KeychainError) -> Data {
        Data(try TPMKeyBlob(serialized: bytes).x963PublicKey)
    }

    /// Runs `request`'s operation with the TPM key in `bytes` on `device`.
    static func useTPMKey(
        _ request: TokenKeyRequest, algorithm: KeyAlgorithm, identifier: String, bytes: Data, device: TPMDevice?
    ) throws(KeychainError) -> Data {
        guard let device else {
            throw KeychainError(code: .notAvailable, message: "The key is inside a TPM, and this keychain has none. Set KEYCHAIN_TPM_TCTI to the TPM that made it.")
        }
        let blob = try TPMKeyBlob(serialized: bytes)
        switch (request, algorithm) {
        case (.sign(_, _, let input), .ecdsaMessage(.sha256, let raw)):
            let der = try withSession(device) { session throws(TPMDevice.Failure) in try session.sign(message: input, key: blob) }
            return try encoded(der, raw: raw)
        case (.sign(_, _, let input), .ecdsaDigest(let hash, let raw)) where hash == nil || hash == .sha256:
            guard input.count == 32 else {
                throw KeychainError(code: .invalidParameter, message: "A key in the TPM signs 32-byte (SHA-256) digests; this one has \(input.count) bytes.")
            }
            let der = try withSession(device) { session throws(TPMDevice.Failure) in try session.sign(digest: Array(input), key: blob) }
            return try encoded(der, raw: raw)
        case (.exchange(_, _, let peer, let size, let info), .ecdh(_, let kdf)):
            // P-256's cofactor is 1: ECDH and ECDHC agree.
            let shared = try withSession(device) { session throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: Array(peer), key: blob) }
            guard let kdf else { return Data(shared) }
            guard let size, size > 0, size <= 1024 else {
                throw KeychainError(code: .invalidParameter, message: "A key exchange with a KDF needs kSecKeyKeyExchangeParameterRequestedSize (1 to 1024 bytes).")
            }
            return try x963KDF(kdf, secret: shared, sharedInfo: info, size: size)
        case (.decrypt, _):
            throw KeychainError(code: .unimplemented, message: "A key inside the TPM signs and agrees keys; ECIES decryption with it is not supported (\(identifier)).")
        default:
            throw KeychainError(code: .unimplemented, message: "A key inside the TPM signs with ECDSA over SHA-256 and agrees keys with ECDH; \(identifier) is not one of those.")
        }
    }

    /// A DER signature as asked: DER, or r and s (32 bytes each) for the RFC 4754 algorithms.
    private static func encoded(_ der: [UInt8], raw: Bool) throws(KeychainError) -> Data {
        guard raw else { return Data(der) }
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: der) else {
            throw KeychainError(code: .internal, message: "The TPM's signature could not be read.")
        }
        return signature.rawRepresentation
    }

    /// ANSI X9.63's KDF: hash(Z ‖ counter ‖ sharedInfo) for counter 1, 2, … until `size` bytes.
    static func x963KDF(_ hash: KeyHash, secret: [UInt8], sharedInfo: Data, size: Int) throws(KeychainError) -> Data {
        guard hash != .sha224 else {
            throw KeychainError(code: .unimplemented, message: "A key inside the TPM agrees keys with the X9.63 KDF over SHA-1, SHA-256, SHA-384 or SHA-512, not SHA-224.")
        }
        var output = Data()
        var counter: UInt32 = 1
        while output.count < size {
            var input = Data(secret)
            withUnsafeBytes(of: counter.bigEndian) { input.append(contentsOf: $0) }
            input.append(sharedInfo)
            switch hash {
            case .sha1: output.append(contentsOf: Insecure.SHA1.hash(data: input))
            case .sha224: return Data()
            case .sha256: output.append(contentsOf: SHA256.hash(data: input))
            case .sha384: output.append(contentsOf: SHA384.hash(data: input))
            case .sha512: output.append(contentsOf: SHA512.hash(data: input))
            }
            counter += 1
        }
        return output.prefix(size)
    }
}
