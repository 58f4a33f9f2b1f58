import Foundation

/// `device.key.tpm`: the device key sealed to this machine's TPM 2.0, in place of the plain `device.key`.
///
/// File format (integers big-endian):
/// ```
/// magic "SKDK" | u16 version = 1 | u8 protection = 1 (TPM 2.0 keyed-hash object under the owner hierarchy's
/// primary ECC P-256 storage key) | u32-prefixed TPM2B_PUBLIC | u32-prefixed TPM2B_PRIVATE
/// ```
/// The file's presence records that the keychain is sealed to a TPM; only that TPM can unseal the key, so a copy
/// of the folder opens nowhere else, not even for root on another machine.
package struct SealedDeviceKey: Sendable, Hashable {
    package static let magic: [UInt8] = Array("SKDK".utf8)
    package static let version: UInt16 = 1
    /// The one protection so far: a TPM 2.0 sealed object.
    package static let tpm2Protection: UInt8 = 1

    package var sealed: TPMDevice.Sealed

    package init(sealed: TPMDevice.Sealed) { self.sealed = sealed }

    package var encoded: [UInt8] {
        var w = BinaryWriter(capacity: 16 + sealed.publicBlob.count + sealed.privateBlob.count)
        w.raw(Self.magic)
        w.u16(Self.version)
        w.u8(Self.tpm2Protection)
        w.lengthPrefixed(sealed.publicBlob)
        w.lengthPrefixed(sealed.privateBlob)
        return w.bytes
    }

    package init(decoding bytes: some Sequence<UInt8>, path: String) throws(KeychainError) {
        let corrupt = KeychainError(code: .corruptData, message: "\(path) is damaged: it is not a sealed device key. Restore it from a backup of this machine's keychain folder.")
        var r = BinaryReader(bytes, truncated: corrupt)
        guard Array(try r.take(4)) == Self.magic else { throw corrupt }
        let version = try r.u16()
        guard version == Self.version else {
            throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: "\(path) has format version \(version), which this swift-keychain does not understand. Upgrade swift-keychain.")
        }
        guard try r.u8() == Self.tpm2Protection else { throw corrupt }
        let publicBlob = Array(try r.lengthPrefixed())
        let privateBlob = Array(try r.lengthPrefixed())
        guard r.isAtEnd, !publicBlob.isEmpty, !privateBlob.isEmpty,
            publicBlob.count <= 1024, privateBlob.count <= 1024
        else { throw corrupt }
        sealed = TPMDevice.Sealed(publicBlob: publicBlob, privateBlob: privateBlob)
    }
}
