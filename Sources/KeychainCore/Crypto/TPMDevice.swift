import Foundation
import CKeychainTPM

/// A TPM 2.0 the device key can be sealed to, reached through a tpm2-tss TCTI.
///
/// Which TPM: `KEYCHAIN_TPM_TCTI` names a TCTI configuration for `Tss2_TctiLdr_Initialize`
/// (`device:/dev/tpmrm0`, `swtpm:host=127.0.0.1,port=2321`, …); `none` turns the TPM off. Unset or empty, the
/// kernel's resource manager `/dev/tpmrm0` is used when it exists, else there is no TPM and the device key stays
/// a plain file, as before.
package struct TPMDevice: Sendable, Hashable {
    /// The TCTI configuration string.
    package var tcti: String
    /// Whether the TPM was asked for by name (`KEYCHAIN_TPM_TCTI`): then a TPM that does not answer is an error
    /// when a keychain is created, instead of a quiet fallback to a plain `device.key`.
    package var required: Bool

    package init(tcti: String, required: Bool = true) {
        self.tcti = tcti
        self.required = required
    }

    /// The environment variable that names the TCTI.
    package static let environmentVariable = "KEYCHAIN_TPM_TCTI"

    /// The TPM the environment names (see the type's description), or nil for none.
    package static func fromEnvironment(
        _ value: String? = getenv(TPMDevice.environmentVariable).map { String(cString: $0) },
        defaultDevice: String = "/dev/tpmrm0"
    ) -> TPMDevice? {
        if let value, !value.isEmpty {
            return value == "none" ? nil : TPMDevice(tcti: value, required: true)
        }
        guard FileManager.default.fileExists(atPath: defaultDevice) else { return nil }
        return TPMDevice(tcti: "device:" + defaultDevice, required: false)
    }

    /// A sealed object: the marshalled TPM2B_PUBLIC and TPM2B_PRIVATE.
    package struct Sealed: Sendable, Hashable {
        package var publicBlob: [UInt8]
        package var privateBlob: [UInt8]
    }

    /// Why a TPM call failed.
    package enum Failure: Error, Sendable, Equatable {
        /// No TPM answered at this TCTI.
        case unreachable(String)
        /// The TPM refused the sealed object: another TPM sealed it, or it was altered.
        case refused(String)
        /// Another TPM failure.
        case failed(String)
    }

    /// Seals `secret` (at most 128 bytes) under the owner hierarchy's primary storage key.
    package func seal(_ secret: [UInt8]) throws(Failure) -> Sealed {
        var publicBlob = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_MAX_BLOB))
        var privateBlob = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_MAX_BLOB))
        var publicSize = 0
        var privateSize = 0
        let result = secret.withUnsafeBufferPointer { s in
            publicBlob.withUnsafeMutableBufferPointer { pub in
                privateBlob.withUnsafeMutableBufferPointer { priv in
                    ckeychain_tpm_seal(tcti, s.baseAddress, s.count, pub.baseAddress, &publicSize, priv.baseAddress, &privateSize)
                }
            }
        }
        try Self.check(result)
        guard publicSize <= publicBlob.count, privateSize <= privateBlob.count else { throw .failed("the sealed object is too large") }
        return Sealed(publicBlob: Array(publicBlob.prefix(publicSize)), privateBlob: Array(privateBlob.prefix(privateSize)))
    }

    /// Unseals what ``seal(_:)`` sealed, on the same TPM.
    package func unseal(_ sealed: Sealed) throws(Failure) -> [UInt8] {
        var secret = [UInt8](repeating: 0, count: Int(CKEYCHAIN_TPM_MAX_SECRET))
        var size = 0
        let result = sealed.publicBlob.withUnsafeBufferPointer { pub in
            sealed.privateBlob.withUnsafeBufferPointer { priv in
                secret.withUnsafeMutableBufferPointer { out in
                    ckeychain_tpm_unseal(tcti, pub.baseAddress, pub.count, priv.baseAddress, priv.count, out.baseAddress, &size)
                }
            }
        }
        try Self.check(result)
        guard size <= secret.count else { throw .refused("the unsealed secret is too large") }
        return Array(secret.prefix(size))
    }

    /// The failure a C result describes (its message names the step and the TSS2 code, never key material).
    static func check(_ result: ckeychain_tpm_result) throws(Failure) {
        var result = result
        let message = withUnsafeBytes(of: &result.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        switch result.status {
        case 0: return
        case 1: throw .unreachable(message)
        case 2: throw .refused(message)
        default: throw .failed(message)
        }
    }
}
