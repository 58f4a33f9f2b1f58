import CKeychainTPM
import Crypto
import Foundation
import Synchronization

/// A P-256 key made inside a TPM 2.0, as Apple's Secure Enclave keys (`kSecAttrTokenIDSecureEnclave`) are made
/// inside the Secure Enclave: the private key never exists outside the TPM. What is stored is the key's two
/// blobs, which only the TPM that made them can load.
///
/// Serialized form (integers big-endian):
/// ```
/// magic "SKTK" | u16 version = 1 | u8 kind = 1 (TPM 2.0 ECC P-256 key under the owner hierarchy's primary
/// ECC P-256 storage key, the one the device key is sealed under) | u32-prefixed TPM2B_PUBLIC | u32-prefixed TPM2B_PRIVATE
/// ```
/// The public key is not stored apart: it is read from the TPM2B_PUBLIC, so it cannot disagree with the key the
/// TPM loads.
package struct TPMKeyBlob: Sendable, Hashable {
    /// The serialized form's first four bytes.
    package static let magic: [UInt8] = Array("SKTK".utf8)
    /// The serialized form's version.
    package static let version: UInt16 = 1
    /// The one kind so far: an ECC P-256 key of `ckeychain_tpm_key_create`'s template.
    package static let p256Kind: UInt8 = 1

    /// The key's marshalled TPM2B_PUBLIC: its template and public point.
    package let publicBlob: [UInt8]
    /// The key's marshalled TPM2B_PRIVATE: the private key, encrypted and integrity-protected by the TPM's primary
    /// key. Not secret outside that TPM; useless without it.
    package let privateBlob: [UInt8]
    /// The public key as X9.63 (`0x04 || x || y`, 65 bytes), as `SecKeyCopyExternalRepresentation` gives it.
    package let x963PublicKey: [UInt8]

    /// A key from its two blobs; nil when the public blob is not a P-256 key of `ckeychain_tpm_key_create`'s
    /// template, or either blob has a size no such key has.
    package init?(publicBlob: [UInt8], privateBlob: [UInt8]) {
        guard !privateBlob.isEmpty, privateBlob.count <= Int(CKEYCHAIN_TPM_MAX_BLOB), let x963 = Self.publicKey(of: publicBlob) else { return nil }
        self.publicBlob = publicBlob
        self.privateBlob = privateBlob
        x963PublicKey = x963
    }

    /// The serialized form (see the type's description).
    package var serialized: [UInt8] {
        var w = BinaryWriter(capacity: 16 + publicBlob.count + privateBlob.count)
        w.raw(Self.magic)
        w.u16(Self.version)
        w.u8(Self.p256Kind)
        w.lengthPrefixed(publicBlob)
        w.lengthPrefixed(privateBlob)
        return w.bytes
    }

    /// Reads the serialized form, strictly: short data, data left over, another kind, or a public blob that is not
    /// a P-256 key of the expected template are all `corruptData` (errSecDecode); another version is
    /// `notAvailable` (errSecWrongSecVersion).
    package init(serialized bytes: some Sequence<UInt8>) throws(KeychainError) {
        let corrupt = KeychainError(code: .corruptData, message: "The TPM key is damaged: it is not a key made by this machine's TPM.")
        var r = BinaryReader(bytes, truncated: corrupt)
        guard Array(try r.take(4)) == Self.magic else { throw corrupt }
        let version = try r.u16()
        guard version == Self.version else {
            throw KeychainError(
                code: .notAvailable, status: .wrongSecVersion, message: "The TPM key has format version \(version), which this swift-keychain does not understand. Upgrade swift-keychain.")
        }
        guard try r.u8() == Self.p256Kind else { throw corrupt }
        let publicBlob = Array(try r.lengthPrefixed())
        let privateBlob = Array(try r.lengthPrefixed())
        guard r.isAtEnd, let key = TPMKeyBlob(publicBlob: publicBlob, privateBlob: privateBlob) else { throw corrupt }
        self = key
    }

    /// The X9.63 public key in a TPM2B_PUBLIC of `ckeychain_tpm_key_create`'s template, nil for anything else.
    ///
    /// That template marshals as: u16 size | u16 type ECC | u16 nameAlg SHA-256 | u32 attributes | u16 0 (no
    /// policy) | u16 NULL (symmetric) | u16 NULL (scheme) | u16 NIST P-256 | u16 NULL (KDF) | TPM2B x | TPM2B y.
    static func publicKey(of publicBlob: [UInt8]) -> [UInt8]? {
        let tpmAlgECC: UInt16 = 0x0023
        let tpmAlgSHA256: UInt16 = 0x000B
        let tpmAlgNull: UInt16 = 0x0010
        let tpmECCNISTP256: UInt16 = 0x0003
        guard publicBlob.count <= Int(CKEYCHAIN_TPM_MAX_BLOB) else { return nil }
        var r = BinaryReader(publicBlob, truncated: KeychainError(code: .corruptData, message: "truncated"))
        do throws(KeychainError) {
            guard Int(try r.u16()) == r.remaining,
                try r.u16() == tpmAlgECC, try r.u16() == tpmAlgSHA256, try r.u32() == CKEYCHAIN_TPM_KEY_ATTRIBUTES,
                try r.u16() == 0, try r.u16() == tpmAlgNull, try r.u16() == tpmAlgNull,
                try r.u16() == tpmECCNISTP256, try r.u16() == tpmAlgNull
            else { return nil }
            let x = try r.take(Int(try r.u16()))
            let y = try r.take(Int(try r.u16()))
            let size = Int(CKEYCHAIN_TPM_P256_SIZE)
            guard r.isAtEnd, x.count <= size, y.count <= size else { return nil }
            let x963 = [0x04] + [UInt8](repeating: 0, count: size - x.count) + x + [UInt8](repeating: 0, count: size - y.count) + y
            // On the curve, not the point at infinity: what swift-crypto accepts as a public key.
            guard (try? P256.Signing.PublicKey(x963Representation: x963)) != nil else { return nil }
            return x963
        } catch {
            return nil
        }
    }
}

/// An open connection to a TPM, for the keys of ``TPMKeyBlob``: it creates them, signs with them and agrees
/// keys with them, the private key staying inside the TPM.
///
/// The connection keeps the owner hierarchy's primary storage key loaded (the key the device key is sealed
/// under, derived again from the same seed), so that an operation costs a Load and the operation itself rather
/// than a CreatePrimary each time. Calls are serialised: the C context is used by one thread at a time. Against a
/// TPM without a resource manager (swtpm on a socket), an open session holds one of its three object slots.
package final class TPMSession: Sendable {
    /// The TPM this session is connected to.
    package let device: TPMDevice
    /// The C context, used only with the lock held: it is not thread-safe.
    private let context: Mutex<OpaquePointer>

    /// Connects to `device` and creates its primary key.
    package init(device: TPMDevice) throws(TPMDevice.Failure) {
        var result = ckeychain_tpm_result()
        guard let context = ckeychain_tpm_open(device.tcti, &result) else {
            try TPMDevice.check(result)
            throw .failed("connecting to the TPM failed without a reason")
        }
        self.device = device
        self.context = Mutex(context)
    }

    deinit {
        context.withLock { ckeychain_tpm_close($0) }
    }

    /// Creates a P-256 key inside the TPM, for both signing and key agreement.
    package func createKey() throws(TPMDevice.Failure) -> TPMKeyBlob {
        var publicBlob = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_MAX_BLOB))
        var privateBlob = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_MAX_BLOB))
        var publicSize = publicBlob.count
        var privateSize = privateBlob.count
        var x = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_P256_SIZE))
        var y = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_P256_SIZE))
        let result = context.withLock { ctx in
            publicBlob.withUnsafeMutableBufferPointer { pub in
                privateBlob.withUnsafeMutableBufferPointer { priv in
                    x.withUnsafeMutableBufferPointer { xp in
                        y.withUnsafeMutableBufferPointer { yp in
                            ckeychain_tpm_key_create(ctx, pub.baseAddress, &publicSize, priv.baseAddress, &privateSize, xp.baseAddress, yp.baseAddress)
                        }
                    }
                }
            }
        }
        try TPMDevice.check(result)
        guard publicSize <= publicBlob.count, privateSize <= privateBlob.count,
            let key = TPMKeyBlob(publicBlob: Array(publicBlob.prefix(publicSize)), privateBlob: Array(privateBlob.prefix(privateSize))),
            key.x963PublicKey == [0x04] + x + y
        else { throw .failed("the TPM returned a key that is not the P-256 key asked for") }
        return key
    }

    /// Signs a SHA-256 `digest` (32 bytes) with `key`: the DER-encoded ECDSA signature (a SEQUENCE of the INTEGERs
    /// r and s) that `SecKeyCreateSignature` makes with `ecdsaSignatureDigestX962SHA256`.
    /// Throws ``TPMDevice/Failure/refused(_:)`` when this TPM did not make `key`, or its blobs were altered.
    package func sign(digest: [UInt8], key: TPMKeyBlob) throws(TPMDevice.Failure) -> [UInt8] {
        let size = Int(CKEYCHAIN_TPM_P256_SIZE)
        guard digest.count == size else { throw .failed("an ECDSA P-256 SHA-256 signature signs a 32-byte digest, not \(digest.count) bytes") }
        var r = [UInt8](repeating: 0, count: size)
        var s = [UInt8](repeating: 0, count: size)
        let result = context.withLock { ctx in
            key.publicBlob.withUnsafeBufferPointer { pub in
                key.privateBlob.withUnsafeBufferPointer { priv in
                    r.withUnsafeMutableBufferPointer { rp in
                        s.withUnsafeMutableBufferPointer { sp in
                            ckeychain_tpm_key_sign(ctx, pub.baseAddress, pub.count, priv.baseAddress, priv.count, digest, rp.baseAddress, sp.baseAddress)
                        }
                    }
                }
            }
        }
        try TPMDevice.check(result)
        do {
            return Array(try P256.Signing.ECDSASignature(rawRepresentation: r + s).derRepresentation)
        } catch {
            throw .failed("the TPM returned a signature that is not a P-256 ECDSA signature")
        }
    }

    /// Signs `message` with `key`: its SHA-256 digest signed as ``sign(digest:key:)`` does, the signature
    /// `SecKeyCreateSignature` makes with `ecdsaSignatureMessageX962SHA256`.
    package func sign(message: some DataProtocol, key: TPMKeyBlob) throws(TPMDevice.Failure) -> [UInt8] {
        try sign(digest: Array(SHA256.hash(data: message)), key: key)
    }

    /// ECDH between `key` and the peer's P-256 public key (X9.63, `0x04 || x || y`): the shared point's x
    /// coordinate (32 bytes), what `SecKeyCopyKeyExchangeResult` returns with `ecdhKeyExchangeStandard`.
    /// Throws ``TPMDevice/Failure/refused(_:)`` when this TPM did not make `key`, or its blobs were altered, and
    /// ``TPMDevice/Failure/failed(_:)`` when the peer's key is not a P-256 point.
    package func sharedSecret(peerX963: [UInt8], key: TPMKeyBlob) throws(TPMDevice.Failure) -> [UInt8] {
        let size = Int(CKEYCHAIN_TPM_P256_SIZE)
        // Checked here too (the TPM checks the point is on the curve): the coordinates are the point's, in full.
        guard let peer = try? P256.KeyAgreement.PublicKey(x963Representation: peerX963) else {
            throw .failed("the peer's public key is not an uncompressed P-256 public key")
        }
        let point = Array(peer.x963Representation)
        guard point.count == 1 + 2 * size else { throw .failed("the peer's public key is not an uncompressed P-256 public key") }
        let peerX = Array(point[1...size])
        let peerY = Array(point[(1 + size)...])
        var z = [UInt8](repeating: 0, count: size)
        let result = context.withLock { ctx in
            key.publicBlob.withUnsafeBufferPointer { pub in
                key.privateBlob.withUnsafeBufferPointer { priv in
                    z.withUnsafeMutableBufferPointer { zp in
                        ckeychain_tpm_key_ecdh(ctx, pub.baseAddress, pub.count, priv.baseAddress, priv.count, peerX, peerY, zp.baseAddress)
                    }
                }
            }
        }
        try TPMDevice.check(result)
        return z
    }
}
