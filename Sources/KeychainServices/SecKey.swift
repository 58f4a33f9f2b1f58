#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore
import LocalAuthentication

// Keychain Services key functions, with Apple's signatures (SecKey.h). The key model and its cryptography live
// in the engine (`KeyMaterial`, on swift-crypto); this file only declares the API.

/// An asymmetric cryptographic key: EC (P-256, P-384, P-521) or RSA (2048–4096 bits), public or private.
public final class SecKey: @unchecked Sendable, CustomStringConvertible {
    /// The key; for a token key (one that never leaves the keychain), its public key only.
    let material: KeyMaterial
    /// The attributes given when the key was made or found (label, tag, access group, …), without its bytes.
    let extraAttributes: [String: PlistValue]
    /// For a token key: the persistent reference of its keychain item, which its private operations name.
    let tokenReference: Data?
    /// For a token key: the context given (`kSecUseAuthenticationContext`) when the key was made or found, whose
    /// proofs of presence its private operations use.
    let authenticationContext: LAContext?

    init(
        _ material: KeyMaterial, attributes: [String: PlistValue] = [:], tokenReference: Data? = nil,
        authenticationContext: LAContext? = nil
    ) {
        self.material = material
        self.extraAttributes = attributes
        self.tokenReference = tokenReference
        self.authenticationContext = authenticationContext
    }

    /// Whether this is a private key (a token key always is).
    var isPrivate: Bool { tokenReference != nil || material.keyClass == .privateKey }

    /// Type, class and size; never the key's bytes.
    public var description: String {
        "<SecKey algorithm id: \(material.type == .ec ? 3 : 1), key type: \(isPrivate ? "PrivateKey" : "PublicKey"), block size: \(material.sizeInBits) bits\(tokenReference == nil ? "" : ", token")>"
    }
}

/// Keys compare as CoreFoundation compares them (`CFEqual`): equal when they are the same key, of the same class.
extension SecKey: Hashable {
    /// Whether both are the same key.
    public static func == (left: SecKey, right: SecKey) -> Bool {
        left === right || (left.material == right.material && left.tokenReference == right.tokenReference)
    }

    /// Hashes the key's type, class and size and its token reference: equal keys hash alike.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(material.type)
        hasher.combine(material.keyClass)
        hasher.combine(material.sizeInBits)
        hasher.combine(tokenReference)
    }
}

/// An algorithm for a key operation (`SecKeyAlgorithm`): its raw value is Apple's identifier string.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, @unchecked Sendable {
    /// Apple's identifier, such as `"algid:sign:ECDSA:message-X962:SHA256"`.
    public let rawValue: CFString

    /// An algorithm from its identifier.
    public init(rawValue: CFString) { self.rawValue = rawValue }

    /// An algorithm from its identifier.
    public init(_ rawValue: CFString) { self.rawValue = rawValue }

    /// `algid:sign:RSA:raw`: the input, a big-endian number below the modulus, raised to the private exponent.
    public static let rsaSignatureRaw = SecKeyAlgorithm("algid:sign:RSA:raw")
    /// `algid:sign:RSA:digest-PKCS1v15`: PKCS#1 v1.5 padding around the input as given (no DigestInfo).
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15")
    /// `algid:sign:RSA:message-PKCS1v15:SHA1`.
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA1")
    /// `algid:sign:RSA:message-PKCS1v15:SHA224`.
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA224")
    /// `algid:sign:RSA:message-PKCS1v15:SHA256`.
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA256")
    /// `algid:sign:RSA:message-PKCS1v15:SHA384`.
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA384")
    /// `algid:sign:RSA:message-PKCS1v15:SHA512`.
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA512")
    /// `algid:sign:RSA:digest-PKCS1v15:SHA1`.
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA1")
    /// `algid:sign:RSA:digest-PKCS1v15:SHA224`.
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA224")
    /// `algid:sign:RSA:digest-PKCS1v15:SHA256`.
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA256")
    /// `algid:sign:RSA:digest-PKCS1v15:SHA384`.
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA384")
    /// `algid:sign:RSA:digest-PKCS1v15:SHA512`.
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA512")
    /// `algid:sign:RSA:message-PSS:SHA1:SHA1:20`.
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    /// `algid:sign:RSA:message-PSS:SHA224:SHA224:24`.
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    /// `algid:sign:RSA:message-PSS:SHA256:SHA256:32`.
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    /// `algid:sign:RSA:message-PSS:SHA384:SHA384:48`.
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    /// `algid:sign:RSA:message-PSS:SHA512:SHA512:64`.
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    /// `algid:sign:RSA:digest-PSS:SHA1:SHA1:20`.
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    /// `algid:sign:RSA:digest-PSS:SHA224:SHA224:24` (Apple's spelling; the salt is 28 bytes, the digest's length).
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    /// `algid:sign:RSA:digest-PSS:SHA256:SHA256:32`.
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    /// `algid:sign:RSA:digest-PSS:SHA384:SHA384:48`.
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    /// `algid:sign:RSA:digest-PSS:SHA512:SHA512:64`.
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    /// `algid:sign:ECDSA:RFC4754`.
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:RFC4754")
    /// `algid:sign:ECDSA:digest-X962`.
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962")
    /// `algid:sign:ECDSA:digest-X962:SHA1`.
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA1")
    /// `algid:sign:ECDSA:digest-X962:SHA224`.
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA224")
    /// `algid:sign:ECDSA:digest-X962:SHA256`.
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA256")
    /// `algid:sign:ECDSA:digest-X962:SHA384`.
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA384")
    /// `algid:sign:ECDSA:digest-X962:SHA512`.
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA512")
    /// `algid:sign:ECDSA:message-X962:SHA1`.
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA1")
    /// `algid:sign:ECDSA:message-X962:SHA224`.
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA224")
    /// `algid:sign:ECDSA:message-X962:SHA256`.
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA256")
    /// `algid:sign:ECDSA:message-X962:SHA384`.
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA384")
    /// `algid:sign:ECDSA:message-X962:SHA512`.
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA512")
    /// `algid:sign:ECDSA:digest-RFC4754`.
    public static let ecdsaSignatureDigestRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754")
    /// `algid:sign:ECDSA:digest-RFC4754:SHA1`.
    public static let ecdsaSignatureDigestRFC4754SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA1")
    /// `algid:sign:ECDSA:digest-RFC4754:SHA224`.
    public static let ecdsaSignatureDigestRFC4754SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA224")
    /// `algid:sign:ECDSA:digest-RFC4754:SHA256`.
    public static let ecdsaSignatureDigestRFC4754SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA256")
    /// `algid:sign:ECDSA:digest-RFC4754:SHA384`.
    public static let ecdsaSignatureDigestRFC4754SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA384")
    /// `algid:sign:ECDSA:digest-RFC4754:SHA512`.
    public static let ecdsaSignatureDigestRFC4754SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA512")
    /// `algid:sign:ECDSA:message-RFC4754:SHA1`.
    public static let ecdsaSignatureMessageRFC4754SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA1")
    /// `algid:sign:ECDSA:message-RFC4754:SHA224`.
    public static let ecdsaSignatureMessageRFC4754SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA224")
    /// `algid:sign:ECDSA:message-RFC4754:SHA256`.
    public static let ecdsaSignatureMessageRFC4754SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA256")
    /// `algid:sign:ECDSA:message-RFC4754:SHA384`.
    public static let ecdsaSignatureMessageRFC4754SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA384")
    /// `algid:sign:ECDSA:message-RFC4754:SHA512`.
    public static let ecdsaSignatureMessageRFC4754SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA512")
    /// `algid:encrypt:RSA:raw`.
    public static let rsaEncryptionRaw = SecKeyAlgorithm("algid:encrypt:RSA:raw")
    /// `algid:encrypt:RSA:PKCS1`.
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm("algid:encrypt:RSA:PKCS1")
    /// `algid:encrypt:RSA:OAEP:SHA1`.
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1")
    /// `algid:encrypt:RSA:OAEP:SHA224`.
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224")
    /// `algid:encrypt:RSA:OAEP:SHA256`.
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256")
    /// `algid:encrypt:RSA:OAEP:SHA384`.
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384")
    /// `algid:encrypt:RSA:OAEP:SHA512`.
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512")
    /// `algid:encrypt:RSA:OAEP:SHA1:AESGCM`.
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    /// `algid:encrypt:RSA:OAEP:SHA224:AESGCM`.
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    /// `algid:encrypt:RSA:OAEP:SHA256:AESGCM`.
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    /// `algid:encrypt:RSA:OAEP:SHA384:AESGCM`.
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    /// `algid:encrypt:RSA:OAEP:SHA512:AESGCM`.
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM`.
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM`.
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM`.
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM`.
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM`.
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV`.
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV`.
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV`.
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV`.
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM`.
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM`.
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM`.
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM`.
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM`.
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV`.
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV`.
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV`.
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    /// `algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV`.
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
    /// `algid:keyexchange:ECDH`.
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm("algid:keyexchange:ECDH")
    /// `algid:keyexchange:ECDH:KDFX963:SHA1`.
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA1")
    /// `algid:keyexchange:ECDH:KDFX963:SHA224`.
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA224")
    /// `algid:keyexchange:ECDH:KDFX963:SHA256`.
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA256")
    /// `algid:keyexchange:ECDH:KDFX963:SHA384`.
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA384")
    /// `algid:keyexchange:ECDH:KDFX963:SHA512`.
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA512")
    /// `algid:keyexchange:ECDHC`.
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm("algid:keyexchange:ECDHC")
    /// `algid:keyexchange:ECDHC:KDFX963:SHA1`.
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA1")
    /// `algid:keyexchange:ECDHC:KDFX963:SHA224`.
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA224")
    /// `algid:keyexchange:ECDHC:KDFX963:SHA256`.
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA256")
    /// `algid:keyexchange:ECDHC:KDFX963:SHA384`.
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA384")
    /// `algid:keyexchange:ECDHC:KDFX963:SHA512`.
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA512")
}

/// The kind of operation `SecKeyIsAlgorithmSupported` asks about.
public enum SecKeyOperationType: CFIndex, Sendable {
    /// `SecKeyCreateSignature`.
    case sign = 0
    /// `SecKeyVerifySignature`.
    case verify = 1
    /// `SecKeyCreateEncryptedData`.
    case encrypt = 2
    /// `SecKeyCreateDecryptedData`.
    case decrypt = 3
    /// `SecKeyCopyKeyExchangeResult`.
    case keyExchange = 4
}

/// The attributes of the private key in `SecKeyCreateRandomKey`'s parameters.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// The attributes of the public key in `SecKeyCreateRandomKey`'s parameters.
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
/// The number of bytes a key exchange with a KDF returns (`SecKeyCopyKeyExchangeResult`).
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterRequestedSize: CFString = "requestedSize"
/// The shared info a key exchange with a KDF mixes in (`SecKeyCopyKeyExchangeResult`).
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterSharedInfo: CFString = "sharedInfo"

/// The keys of `SecKeyCopyKeyExchangeResult`'s parameters, as Swift on Apple's platforms names them:
/// `[SecKeyKeyExchangeParameter.requestedSize.rawValue: 32]`.
public struct SecKeyKeyExchangeParameter: RawRepresentable, Hashable, @unchecked Sendable {
    /// The key, such as `kSecKeyKeyExchangeParameterRequestedSize`.
    public let rawValue: CFString

    /// A parameter from its key.
    public init(rawValue: CFString) { self.rawValue = rawValue }

    /// The number of bytes a key exchange with a KDF returns (`kSecKeyKeyExchangeParameterRequestedSize`).
    public static let requestedSize = SecKeyKeyExchangeParameter(rawValue: kSecKeyKeyExchangeParameterRequestedSize)
    /// The shared info a key exchange with a KDF mixes in (`kSecKeyKeyExchangeParameterSharedInfo`).
    public static let sharedInfo = SecKeyKeyExchangeParameter(rawValue: kSecKeyKeyExchangeParameterSharedInfo)
}

/// The type identifier of keys, to compare with `CFGetTypeID` of an object a call returned
/// (`CFGetTypeID(item) == SecKeyGetTypeID()` before `item as! SecKey`).
public func SecKeyGetTypeID() -> CFTypeID { CoreFoundationTypeID.secKey }

/// Generates a new private key (and so its public key); stores it in the keychain when `kSecAttrIsPermanent` is
/// true in the parameters or in `kSecPrivateKeyAttrs`.
///
/// - Parameters:
///   - parameters: `kSecAttrKeyType` (`kSecAttrKeyTypeECSECPrimeRandom` or `kSecAttrKeyTypeRSA`),
///     `kSecAttrKeySizeInBits`, and optionally `kSecAttrIsPermanent`, `kSecAttrApplicationTag`, `kSecAttrLabel`,
///     `kSecAttrAccessGroup`, `kSecAttrAccessible`, `kSecPrivateKeyAttrs` and `kSecPublicKeyAttrs`.
///   - error: On failure, the error (`errSecParam` for an unknown type or size).
/// - Returns: The private key, or `nil` on failure.
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    SecKeyBackend.createRandomKey(parameters, error)
}

/// Generates a key pair (Apple's older call, deprecated there in favour of `SecKeyCreateRandomKey` and
/// `SecKeyCopyPublicKey`, which it is made of here).
///
/// `kSecAttrIsPermanent` true in `parameters` stores both keys in the keychain; in `kSecPrivateKeyAttrs` or
/// `kSecPublicKeyAttrs` it stores that key only (those dictionaries' other attributes, such as
/// `kSecAttrApplicationTag`, apply to their key).
///
/// - Parameters:
///   - parameters: `kSecAttrKeyType`, `kSecAttrKeySizeInBits`, and the attributes `SecKeyCreateRandomKey` takes.
///   - publicKey: On success, the public key; pass `nil` when you don't need it.
///   - privateKey: On success, the private key; pass `nil` when you don't need it.
/// - Returns: `errSecSuccess`, or the `OSStatus` of the failure (`errSecParam` for an unknown type or size,
///   `errSecDuplicateItem` when a permanent key is already stored).
public func SecKeyGeneratePair(_ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?, _ privateKey: UnsafeMutablePointer<SecKey?>?) -> OSStatus {
    SecKeyBackend.generatePair(parameters, publicKey, privateKey)
}

/// Creates a key from its external representation (ANSI X9.63 for EC, PKCS#1 for RSA).
///
/// - Parameters:
///   - keyData: The key's bytes, as `SecKeyCopyExternalRepresentation` gives them.
///   - attributes: `kSecAttrKeyType` and `kSecAttrKeyClass` (`kSecAttrKeyClassPublic` or `…Private`).
///   - error: On failure, the error (`errSecParam` when the bytes are not such a key).
public func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    SecKeyBackend.createWithData(keyData, attributes, error)
}

/// The public key of a private key (or the key itself, when it is public).
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    SecKeyBackend.copyPublicKey(key)
}

/// The key's external representation: ANSI X9.63 (`04‖X‖Y`, and `‖K` for a private key) for EC, PKCS#1 DER for RSA.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyBackend.copyExternalRepresentation(key, error)
}

/// The key's attributes: class, type, size, application label (the public key's SHA-1), capabilities, and the
/// key's data (`kSecValueData`).
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    SecKeyBackend.copyAttributes(key)
}

/// The block size: the modulus length in bytes for RSA, the coordinate length for EC.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int {
    key.material.blockSize
}

/// Signs data (or a digest, for the `…Digest…` algorithms) with a private key.
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyBackend.createSignature(key, algorithm, dataToSign, error)
}

/// Checks a signature with a public key; `false` with `errSecVerifyFailed` when it does not match.
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    SecKeyBackend.verifySignature(key, algorithm, signedData, signature, error)
}

/// Encrypts data with a public key.
public func SecKeyCreateEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyBackend.createEncryptedData(key, algorithm, plaintext, error)
}

/// Decrypts data with a private key.
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    SecKeyBackend.createDecryptedData(key, algorithm, ciphertext, error)
}

/// Performs an ECDH key exchange between a private key and another party's public key.
///
/// - Parameters:
///   - privateKey: This party's private key (a key in the keychain's token is used where it is kept).
///   - algorithm: `kSecKeyAlgorithmECDHKeyExchangeStandard`, `…Cofactor`, or one of their `…X963SHA…` forms.
///   - publicKey: The other party's public key, on the same curve.
///   - parameters: For the `…X963SHA…` algorithms, `kSecKeyKeyExchangeParameterRequestedSize` and optionally
///     `kSecKeyKeyExchangeParameterSharedInfo`.
///   - error: Set to a `CFError` with the `OSStatus` when the exchange fails.
public func SecKeyCopyKeyExchangeResult(
    _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    SecKeyBackend.copyKeyExchangeResult(privateKey, algorithm, publicKey, parameters, error)
}

/// Whether the key can perform `operation` with `algorithm`.
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    SecKeyBackend.isAlgorithmSupported(key, operation, algorithm)
}
#endif
