import CKeychainPKCS11
import Foundation

// PKCS#11 tokens (smart cards, YubiKeys, SoftHSM) as typed values, through p11-kit's module registry
// (CKeychainPKCS11): the layer under the keys and certificates that SecItem shows with kSecAttrTokenID.

/// A token present in a reader or slot of a PKCS#11 module that p11-kit loads.
package struct PKCS11Token: Sendable, Hashable {
    /// The module's name in p11-kit's registry: its config file's name (`softhsm2`, `opensc-pkcs11`).
    package var module: String
    /// The slot the token was in when listed (slot numbers can change when readers come and go; a token is found
    /// again by ``module`` and ``serial``).
    package var slot: UInt64
    /// The token's label (`CK_TOKEN_INFO.label`, padding removed).
    package var label: String
    /// Who made it (`manufacturerID`).
    package var manufacturer: String
    /// Its model.
    package var model: String
    /// Its serial number (empty when the token has none).
    package var serial: String
    /// What `CK_TOKEN_INFO.flags` says.
    package var flags: Flags

    /// Token flags from `CK_TOKEN_INFO.flags`.
    package struct Flags: OptionSet, Sendable, Hashable {
        /// The `CKEYCHAIN_PKCS11_TOKEN_…` bits.
        package let rawValue: UInt32
        /// Creates flags from their bits.
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        /// `CKF_LOGIN_REQUIRED`: private keys are used (and usually seen) only after login with the PIN.
        package static let loginRequired = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_LOGIN_REQUIRED))
        /// `CKF_PROTECTED_AUTHENTICATION_PATH`: the PIN is entered on the reader's PIN pad (pass an empty PIN).
        package static let protectedAuthenticationPath = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_PROTECTED_AUTHENTICATION_PATH))
        /// `CKF_WRITE_PROTECTED`: no key can be generated on it.
        package static let writeProtected = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_WRITE_PROTECTED))
        /// `CKF_TOKEN_INITIALIZED`.
        package static let initialized = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_INITIALIZED))
        /// `CKF_USER_PIN_INITIALIZED`.
        package static let userPINInitialized = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_USER_PIN_INITIALIZED))
        /// `CKF_USER_PIN_COUNT_LOW`: a wrong PIN was entered since the last right one.
        package static let userPINCountLow = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_USER_PIN_COUNT_LOW))
        /// `CKF_USER_PIN_FINAL_TRY`: one more wrong PIN locks the token.
        package static let userPINFinalTry = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_USER_PIN_FINAL_TRY))
        /// `CKF_USER_PIN_LOCKED`.
        package static let userPINLocked = Flags(rawValue: UInt32(CKEYCHAIN_PKCS11_TOKEN_USER_PIN_LOCKED))
    }

    /// Creates a token description (as listed, or to find one again: ``PKCS11Registry`` looks a token up by
    /// ``module`` and ``serial``, and by ``label`` too when the serial is empty).
    package init(
        module: String, slot: UInt64 = 0, label: String, manufacturer: String = "", model: String = "", serial: String,
        flags: Flags = []
    ) {
        self.module = module
        self.slot = slot
        self.label = label
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
        self.flags = flags
    }

    /// Whether private keys need the PIN (`CKF_LOGIN_REQUIRED`).
    package var loginRequired: Bool { flags.contains(.loginRequired) }

    /// The token's `kSecAttrTokenID`: `module:serial` (`softhsm2:7fed46e657923624`), or `module:label` for a token
    /// without a serial. Stable across reinsertion, reader changes and restarts, like Apple's
    /// `com.apple.pivtoken:<instance>`.
    package var identifier: String { "\(module):\(serial.isEmpty ? label : serial)" }
}

/// A module p11-kit's registry loaded.
package struct PKCS11Module: Sendable, Hashable {
    /// Its name (the config file's name in /usr/share/p11-kit/modules or /etc/pkcs11/modules).
    package var name: String
    /// What became of it.
    package var state: State

    /// Creates a module description.
    package init(name: String, state: State) {
        self.name = name
        self.state = state
    }

    /// A module's state.
    package enum State: Sendable, Hashable {
        /// Initialised: its tokens are listed.
        case usable
        /// A trust store (`trust-policy: yes`, p11-kit-trust): not a token module, left uninitialised.
        case trustStore
        /// Its `C_Initialize` failed (gnome-keyring's module without its daemon, say): skipped.
        case failed
    }
}

/// A key's type (`CKA_KEY_TYPE`).
package enum PKCS11KeyType: Sendable, Hashable {
    /// `CKK_RSA`.
    case rsa
    /// `CKK_EC`.
    case ec
    /// Any other `CKK_` value.
    case other(UInt64)

    /// The keychain's key type, for RSA and EC.
    package var keyType: KeyType? {
        switch self {
        case .rsa: .rsa
        case .ec: .ec
        case .other: nil
        }
    }
}

/// What a key may do (its `CKA_SIGN`, `CKA_DECRYPT`, … that are true) and how it is held.
package struct PKCS11KeyUsage: OptionSet, Sendable, Hashable {
    /// The `CKEYCHAIN_PKCS11_KEY_…` bits.
    package let rawValue: UInt32
    /// Creates usage from its bits.
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `CKA_SIGN`.
    package static let sign = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_SIGN))
    /// `CKA_DECRYPT`.
    package static let decrypt = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_DECRYPT))
    /// `CKA_DERIVE` (ECDH).
    package static let derive = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_DERIVE))
    /// `CKA_UNWRAP`.
    package static let unwrap = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_UNWRAP))
    /// `CKA_VERIFY`.
    package static let verify = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_VERIFY))
    /// `CKA_ENCRYPT`.
    package static let encrypt = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_ENCRYPT))
    /// `CKA_WRAP`.
    package static let wrap = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_WRAP))
    /// `CKA_PRIVATE`: seen only after login.
    package static let `private` = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_PRIVATE))
    /// `CKA_ALWAYS_AUTHENTICATE`: each use needs the PIN again (the registry's calls log in for it).
    package static let alwaysAuthenticate = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_ALWAYS_AUTHENTICATE))
    /// `CKA_SENSITIVE`.
    package static let sensitive = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_SENSITIVE))
    /// `CKA_EXTRACTABLE`.
    package static let extractable = PKCS11KeyUsage(rawValue: UInt32(CKEYCHAIN_PKCS11_KEY_EXTRACTABLE))
}

/// An X.509 certificate on a token.
package struct PKCS11Certificate: Sendable, Hashable {
    /// `CKA_ID`: the same as its key's, by convention.
    package var id: Data
    /// `CKA_LABEL`.
    package var label: String
    /// `CKA_VALUE`: the DER certificate.
    package var der: Data

    /// Creates a certificate description.
    package init(id: Data, label: String, der: Data) {
        self.id = id
        self.label = label
        self.der = der
    }
}

/// A private or public key on a token.
package struct PKCS11Key: Sendable, Hashable {
    /// `CKA_ID`: what the registry's operations name the key by.
    package var id: Data
    /// `CKA_LABEL`.
    package var label: String
    /// `CKA_KEY_TYPE`.
    package var type: PKCS11KeyType
    /// What it may do, and how it is held.
    package var usage: PKCS11KeyUsage
    /// The public key in Apple's external representation (RSA: PKCS#1 RSAPublicKey DER; EC: X9.63 `04‖X‖Y`), with
    /// its size in bits. For a private key, from its own attributes when the token shows them (RSA modulus), else
    /// from the public key or certificate with the same `CKA_ID`; nil when none says it, or for a key type or
    /// curve the keychain does not model (EC keys are P-256, P-384 or P-521).
    package var publicKey: KeyMaterial?

    /// Creates a key description.
    package init(id: Data, label: String, type: PKCS11KeyType, usage: PKCS11KeyUsage, publicKey: KeyMaterial?) {
        self.id = id
        self.label = label
        self.type = type
        self.usage = usage
        self.publicKey = publicKey
    }

    /// The key's size in bits (the modulus for RSA, the curve for EC), when its public key is known.
    package var sizeInBits: Int? { publicKey?.sizeInBits }
}

/// An object on a token.
package enum PKCS11Object: Sendable, Hashable {
    /// An X.509 certificate.
    case certificate(PKCS11Certificate)
    /// A private key.
    case privateKey(PKCS11Key)
    /// A public key.
    case publicKey(PKCS11Key)

    /// `CKA_ID`.
    package var id: Data {
        switch self {
        case .certificate(let certificate): certificate.id
        case .privateKey(let key), .publicKey(let key): key.id
        }
    }

    /// `CKA_LABEL`.
    package var label: String {
        switch self {
        case .certificate(let certificate): certificate.label
        case .privateKey(let key), .publicKey(let key): key.label
        }
    }
}

/// A hash named by a PSS or OAEP mechanism.
package enum PKCS11Hash: Sendable, Hashable {
    /// SHA-1.
    case sha1
    /// SHA-224.
    case sha224
    /// SHA-256.
    case sha256
    /// SHA-384.
    case sha384
    /// SHA-512.
    case sha512

    var raw: Int32 {
        switch self {
        case .sha1: Int32(CKEYCHAIN_PKCS11_SHA1.rawValue)
        case .sha224: Int32(CKEYCHAIN_PKCS11_SHA224.rawValue)
        case .sha256: Int32(CKEYCHAIN_PKCS11_SHA256.rawValue)
        case .sha384: Int32(CKEYCHAIN_PKCS11_SHA384.rawValue)
        case .sha512: Int32(CKEYCHAIN_PKCS11_SHA512.rawValue)
        }
    }
}

/// How a token key signs.
package enum PKCS11SignMechanism: Sendable, Hashable {
    /// `CKM_RSA_PKCS`: PKCS#1 v1.5 padding around the input, which the caller makes a DigestInfo (the digest's
    /// algorithm identifier and the digest) for kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA256 and the like.
    case rsaPKCS1
    /// `CKM_RSA_PKCS_PSS`: the input is the digest of `hash` (MGF1 with the same hash), with a salt of
    /// `saltLength` bytes.
    case rsaPSS(hash: PKCS11Hash, saltLength: Int)
    /// `CKM_ECDSA`: the input is the digest; the signature is raw `r‖s` (each as long as the curve's order), not
    /// the DER that kSecKeyAlgorithmECDSASignatureDigestX962 returns.
    case ecdsa
    /// `CKM_RSA_X_509`: raw RSA on an input as long as the modulus.
    case rsaRaw

    var raw: ckeychain_pkcs11_mechanism {
        switch self {
        case .rsaPKCS1: ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_PKCS.rawValue), hash: 0, salt_size: 0)
        case .rsaPSS(let hash, let salt): ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_PKCS_PSS.rawValue), hash: hash.raw, salt_size: max(0, salt))
        case .ecdsa: ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_ECDSA.rawValue), hash: 0, salt_size: 0)
        case .rsaRaw: ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_X_509.rawValue), hash: 0, salt_size: 0)
        }
    }
}

/// How a token key decrypts.
package enum PKCS11DecryptMechanism: Sendable, Hashable {
    /// `CKM_RSA_PKCS`: PKCS#1 v1.5 encryption padding.
    case rsaPKCS1
    /// `CKM_RSA_PKCS_OAEP` with `hash` (and MGF1 with it), no label. Tokens differ in the hashes they take:
    /// SoftHSM 2.6 takes only SHA-1 and refuses others (`errSecParam`).
    case rsaOAEP(PKCS11Hash)
    /// `CKM_RSA_X_509`: raw RSA.
    case rsaRaw

    var raw: ckeychain_pkcs11_mechanism {
        switch self {
        case .rsaPKCS1: ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_PKCS.rawValue), hash: 0, salt_size: 0)
        case .rsaOAEP(let hash): ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_PKCS_OAEP.rawValue), hash: hash.raw, salt_size: 0)
        case .rsaRaw: ckeychain_pkcs11_mechanism(type: Int32(CKEYCHAIN_PKCS11_RSA_X_509.rawValue), hash: 0, salt_size: 0)
        }
    }
}

/// Why a PKCS#11 call failed: the ``KeychainError/cause`` of the errors ``PKCS11Registry`` throws, for callers
/// that need more than the error's code (a locked PIN and a wrong one are both `errSecAuthFailed`).
package struct PKCS11Failure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure.
    package enum Kind: Sendable, Hashable {
        /// p11-kit could not be loaded.
        case unavailable
        /// The token is not present.
        case tokenNotFound
        /// No key with that `CKA_ID`.
        case objectNotFound
        /// `CKR_PIN_INCORRECT` (or a PIN the token cannot take: `CKR_PIN_INVALID`, `CKR_PIN_LEN_RANGE`).
        case pinIncorrect
        /// `CKR_PIN_LOCKED`.
        case pinLocked
        /// `CKR_USER_NOT_LOGGED_IN`, or a private key not visible without the PIN.
        case notLoggedIn
        /// A malformed input or one over its bound.
        case invalidArgument
        /// The token or key does not do this.
        case unsupported
        /// A key with that `CKA_ID` exists.
        case duplicate
        /// Cancelled on the reader's PIN pad.
        case canceled
        /// Any other failure.
        case failed
    }

    /// What kind of failure.
    package var kind: Kind
    /// The `CK_RV` of the failing PKCS#11 call (0 when none failed).
    package var returnValue: UInt64
    /// The failing step and the `CK_RV`'s name; never a PIN or a secret.
    package var message: String

    /// The message.
    package var description: String { message }

    init(_ result: ckeychain_pkcs11_result) {
        var result = result
        message = withUnsafeBytes(of: &result.message) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
        returnValue = result.rv
        kind =
            switch UInt32(bitPattern: result.status) {
            case CKEYCHAIN_PKCS11_UNAVAILABLE.rawValue: .unavailable
            case CKEYCHAIN_PKCS11_TOKEN_NOT_FOUND.rawValue: .tokenNotFound
            case CKEYCHAIN_PKCS11_OBJECT_NOT_FOUND.rawValue: .objectNotFound
            case CKEYCHAIN_PKCS11_PIN_INCORRECT.rawValue: .pinIncorrect
            case CKEYCHAIN_PKCS11_PIN_LOCKED.rawValue: .pinLocked
            case CKEYCHAIN_PKCS11_NOT_LOGGED_IN.rawValue: .notLoggedIn
            case CKEYCHAIN_PKCS11_INVALID_ARGUMENT.rawValue: .invalidArgument
            case CKEYCHAIN_PKCS11_UNSUPPORTED.rawValue: .unsupported
            case CKEYCHAIN_PKCS11_DUPLICATE.rawValue: .duplicate
            case CKEYCHAIN_PKCS11_CANCELED.rawValue: .canceled
            default: .failed
            }
    }

    /// The keychain error for this failure on `token` (nil: the registry itself).
    func keychainError(token: PKCS11Token?) -> KeychainError {
        let name = token.map { "The token \($0.identifier) (\($0.label))" } ?? "The PKCS#11 registry"
        let (code, text): (KeychainError.Code, String) =
            switch kind {
            case .unavailable:
                (
                    .notAvailable,
                    "Smart cards and other PKCS#11 tokens are reached through p11-kit, which could not be loaded (\(message)). Install p11-kit (Debian and Ubuntu: libp11-kit0 and p11-kit-modules) and the token's PKCS#11 module (opensc-pkcs11 for smart cards and YubiKeys, softhsm2 for SoftHSM)."
                )
            case .tokenNotFound:
                (.itemNotFound, "\(name) is not present. Insert it, or check that `p11-kit list-modules` lists it (\(message)).")
            case .objectNotFound: (.itemNotFound, "\(name) has no such key (\(message)).")
            case .pinIncorrect: (.authenticationFailed, "\(name) refused the PIN: it is wrong (\(message)).")
            case .pinLocked:
                (.authenticationFailed, "\(name) is locked after too many wrong PINs; unblock it with its PUK or SO PIN (\(message)).")
            case .notLoggedIn: (.interactionNotAllowed, "\(name) needs its PIN for this (\(message)).")
            case .invalidArgument: (.invalidParameter, "\(name) cannot take this input (\(message)).")
            case .unsupported: (.invalidParameter, "\(name) does not support this operation with this key (\(message)).")
            case .duplicate: (.duplicateItem, "\(name) already has a key with this ID (\(message)).")
            case .canceled: (.userCanceled, "The PIN entry on the reader of \(name) was cancelled (\(message)).")
            case .failed: (.internal, "\(name) failed (\(message)).")
            }
        return KeychainError(code: code, message: text, cause: self)
    }
}

/// The PKCS#11 modules p11-kit configures (smart cards through OpenSC, YubiKeys, SoftHSM, …) and their tokens.
///
/// The registry is loaded on first use (libp11-kit is opened then too) and kept until ``reload()`` or the
/// registry's end; every call is serialised by a lock, and each one that touches a token opens a session, logs in
/// when given a PIN, works, logs out and closes the session, so no login outlives a call. PINs are passed to the
/// token and kept nowhere; no error message contains one.
///
/// One registry per process is the rule (``shared``): SoftHSM reads `SOFTHSM2_CONF` at its first `C_Initialize` in
/// the process, and p11-kit initialises a module once for all its users, so a second registry sees the same
/// modules in the same state (tests set `SOFTHSM2_CONF` before any registry loads).
package final class PKCS11Registry: @unchecked Sendable {
    /// The process's registry.
    package static let shared = PKCS11Registry()

    private let lock = NSLock()
    /// The C registry once loaded (guarded by `lock`).
    private var handle: OpaquePointer?

    /// A registry that loads p11-kit's modules on its first call.
    package init() {}

    deinit {
        ckeychain_pkcs11_close(handle)
    }

    // MARK: The registry

    /// Finalises the modules and loads p11-kit's configuration again, for modules configured since.
    package func reload() throws(KeychainError) {
        lock.lock()
        defer { lock.unlock() }
        ckeychain_pkcs11_close(handle)
        handle = nil
        _ = try loadedHandle()
    }

    /// The modules p11-kit loaded, usable first.
    package func modules() throws(KeychainError) -> [PKCS11Module] {
        try withHandle { handle throws(KeychainError) in
            var modules: [PKCS11Module] = []
            withUnsafeMutablePointer(to: &modules) { pointer in
                ckeychain_pkcs11_modules(
                    handle,
                    { context, name, state in
                        guard let context, let name else { return }
                        let state: PKCS11Module.State =
                            switch UInt32(bitPattern: state) {
                            case CKEYCHAIN_PKCS11_MODULE_USABLE.rawValue: .usable
                            case CKEYCHAIN_PKCS11_MODULE_TRUST_STORE.rawValue: .trustStore
                            default: .failed
                            }
                        context.assumingMemoryBound(to: [PKCS11Module].self).pointee.append(PKCS11Module(name: String(cString: name), state: state))
                    }, pointer)
            }
            return modules
        }
    }

    /// The initialised tokens present in the usable modules' slots (an empty slot's uninitialised token, like the
    /// free slot SoftHSM always offers, is left out).
    package func tokens() throws(KeychainError) -> [PKCS11Token] {
        try withHandle { handle throws(KeychainError) in
            var tokens: [PKCS11Token] = []
            let result = withUnsafeMutablePointer(to: &tokens) { pointer in
                ckeychain_pkcs11_tokens(
                    handle,
                    { context, token in
                        guard let context, let token else { return }
                        let listed = PKCS11Token(token.pointee)
                        guard listed.flags.contains(.initialized) else { return }
                        context.assumingMemoryBound(to: [PKCS11Token].self).pointee.append(listed)
                    }, pointer)
            }
            try Self.check(result, token: nil)
            return tokens
        }
    }

    /// The present token whose ``PKCS11Token/identifier`` is `identifier` (a `kSecAttrTokenID`);
    /// `errSecItemNotFound` when none is.
    package func token(identifier: String) throws(KeychainError) -> PKCS11Token {
        guard let token = try tokens().first(where: { $0.identifier == identifier }) else {
            throw KeychainError(code: .itemNotFound, message: "No token \(identifier) is present. Insert it, or check that `p11-kit list-modules` lists its module.")
        }
        return token
    }

    // MARK: Objects

    /// The token's X.509 certificates, private keys and public keys: without `pin`, what it shows anyone
    /// (certificates and public keys, usually); with it, after login (private keys too). A private key's
    /// ``PKCS11Key/publicKey`` is completed from the public key or certificate with its `CKA_ID`.
    package func objects(on token: PKCS11Token, pin: String? = nil) throws(KeychainError) -> [PKCS11Object] {
        var objects: [PKCS11Object] = []
        try call(token, pin: pin) { registry, reference throws(KeychainError) in
            let result = withUnsafeMutablePointer(to: &objects) { pointer in
                ckeychain_pkcs11_objects(registry, reference, collectPKCS11Object, pointer)
            }
            try Self.check(result, token: token)
        }
        return Self.completingPublicKeys(objects)
    }

    /// Logs in with `pin` and out again: `errSecAuthFailed` when the token refuses it (the error's cause, a
    /// ``PKCS11Failure``, tells a wrong PIN from a locked token).
    package func verifyPIN(_ pin: String, on token: PKCS11Token) throws(KeychainError) {
        try call(token, pin: pin) { registry, reference throws(KeychainError) in
            try Self.check(ckeychain_pkcs11_login(registry, reference), token: token)
        }
    }

    // MARK: Operations

    /// Signs `input` with the private key whose `CKA_ID` is `keyID` (see ``PKCS11SignMechanism`` for what the input
    /// is), logging in with `pin` first when given.
    package func sign(
        _ input: Data, keyID: Data, on token: PKCS11Token, mechanism: PKCS11SignMechanism, pin: String?
    ) throws(KeychainError) -> Data {
        var raw = mechanism.raw
        return try output(token, pin: pin) { registry, reference, output, capacity, size in
            input.withUnsafeBytes { input in
                keyID.withUnsafeBytes { id in
                    ckeychain_pkcs11_sign(
                        registry, reference, id.bindMemory(to: UInt8.self).baseAddress, id.count, &raw,
                        input.bindMemory(to: UInt8.self).baseAddress, input.count, output, capacity, size)
                }
            }
        }
    }

    /// Decrypts `input` with the RSA private key whose `CKA_ID` is `keyID`, logging in with `pin` first when given.
    package func decrypt(
        _ input: Data, keyID: Data, on token: PKCS11Token, mechanism: PKCS11DecryptMechanism, pin: String?
    ) throws(KeychainError) -> Data {
        var raw = mechanism.raw
        return try output(token, pin: pin) { registry, reference, output, capacity, size in
            input.withUnsafeBytes { input in
                keyID.withUnsafeBytes { id in
                    ckeychain_pkcs11_decrypt(
                        registry, reference, id.bindMemory(to: UInt8.self).baseAddress, id.count, &raw,
                        input.bindMemory(to: UInt8.self).baseAddress, input.count, output, capacity, size)
                }
            }
        }
    }

    /// ECDH between the EC private key whose `CKA_ID` is `keyID` and `peerPublicKey` (X9.63, `04‖X‖Y`): the shared
    /// secret (the X coordinate), as kSecKeyAlgorithmECDHKeyExchangeStandard gives it. The token derives a
    /// non-sensitive, extractable session key (`CKM_ECDH1_DERIVE`, `CKD_NULL`) and the secret is read from it; a
    /// token that refuses such keys fails with `errSecParam`.
    package func deriveECDH(keyID: Data, on token: PKCS11Token, peerPublicKey: Data, pin: String?) throws(KeychainError) -> Data {
        try output(token, pin: pin) { registry, reference, output, capacity, size in
            peerPublicKey.withUnsafeBytes { peer in
                keyID.withUnsafeBytes { id in
                    ckeychain_pkcs11_derive_ecdh(
                        registry, reference, id.bindMemory(to: UInt8.self).baseAddress, id.count,
                        peer.bindMemory(to: UInt8.self).baseAddress, peer.count, output, capacity, size)
                }
            }
        }
    }

    /// Generates a key pair on the token, logged in with `pin` (macOS's `security create-keypair` on a token): RSA
    /// of `sizeInBits` (1024 to 8192, exponent 65537) or EC P-256, P-384 or P-521, both keys labelled `label` with
    /// `CKA_ID` `id`. The private key is sensitive and never extractable, and signs and decrypts (RSA) or signs and
    /// derives (EC). Returns both keys as read back from the token; `errSecDuplicateItem` when a private key with
    /// `id` exists.
    package func generateKeyPair(
        type: KeyType, sizeInBits: Int, label: String, id: Data, on token: PKCS11Token, pin: String
    ) throws(KeychainError) -> (privateKey: PKCS11Key, publicKey: PKCS11Key) {
        var objects: [PKCS11Object] = []
        let labelBytes = Array(label.utf8)
        guard sizeInBits > 0 else { throw KeychainError(code: .invalidParameter, message: "A key's size in bits must be positive.") }
        try call(token, pin: pin) { registry, reference throws(KeychainError) in
            let result = labelBytes.withUnsafeBufferPointer { labelPointer in
                id.withUnsafeBytes { idPointer in
                    var spec = ckeychain_pkcs11_key_spec(
                        key_type: Int32(type == .rsa ? CKEYCHAIN_PKCS11_KEY_RSA.rawValue : CKEYCHAIN_PKCS11_KEY_EC.rawValue),
                        bits: sizeInBits, label: labelPointer.baseAddress, label_size: labelPointer.count,
                        id: idPointer.bindMemory(to: UInt8.self).baseAddress, id_size: idPointer.count)
                    return withUnsafeMutablePointer(to: &objects) { pointer in
                        ckeychain_pkcs11_generate_key_pair(registry, reference, &spec, collectPKCS11Object, pointer)
                    }
                }
            }
            try Self.check(result, token: token)
        }
        let completed = Self.completingPublicKeys(objects)
        guard completed.count == 2, case .privateKey(let privateKey) = completed[0], case .publicKey(let publicKey) = completed[1] else {
            throw KeychainError(code: .internal, message: "The token \(token.identifier) generated a key pair it did not show back.")
        }
        return (privateKey, publicKey)
    }

    // MARK: Calls

    /// Runs `body` with the loaded C registry, under the lock.
    private func withHandle<T>(_ body: (OpaquePointer) throws(KeychainError) -> T) throws(KeychainError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(try loadedHandle())
    }

    /// The C registry, loaded now if it is not yet (under the lock).
    private func loadedHandle() throws(KeychainError) -> OpaquePointer {
        if let handle { return handle }
        var opened: OpaquePointer?
        let result = ckeychain_pkcs11_open(&opened)
        try Self.check(result, token: nil)
        guard let opened else { throw KeychainError(code: .internal, message: "p11-kit's registry loaded without a handle.") }
        handle = opened
        return opened
    }

    /// Runs `body` with the C registry and a reference to `token` with `pin` (NUL-terminated C strings and the PIN's
    /// UTF-8 bytes, valid during `body`).
    private func call(
        _ token: PKCS11Token, pin: String?,
        _ body: (OpaquePointer, UnsafePointer<ckeychain_pkcs11_token_ref>) throws(KeychainError) -> Void
    ) throws(KeychainError) {
        // The PIN's UTF-8 and a NUL after it, so that even an empty PIN (the PIN pad's) has an address.
        var pinBytes = pin.map { Array($0.utf8) + [0] }
        defer {
            // This copy of the PIN is cleared (the String it came from is the caller's).
            pinBytes?.withUnsafeMutableBufferPointer { bytes in
                for i in bytes.indices { bytes[i] = 0 }
            }
        }
        try withHandle { handle throws(KeychainError) in
            let module = Array(token.module.utf8CString), serial = Array(token.serial.utf8CString)
            let label: [CChar]? = token.serial.isEmpty ? Array(token.label.utf8CString) : nil
            var failure: KeychainError?
            module.withUnsafeBufferPointer { module in
                serial.withUnsafeBufferPointer { serial in
                    Self.withOptionalBuffer(label) { label in
                        Self.withOptionalBuffer(pinBytes) { pin in
                            var reference = ckeychain_pkcs11_token_ref(
                                module: module.baseAddress, serial: serial.baseAddress, label: label?.baseAddress,
                                pin: pin?.baseAddress, pin_size: max(0, (pin?.count ?? 1) - 1))
                            do throws(KeychainError) {
                                try body(handle, &reference)
                            } catch {
                                failure = error
                            }
                        }
                    }
                }
            }
            if let failure { throw failure }
        }
    }

    private static func withOptionalBuffer<T, R>(_ array: [T]?, _ body: (UnsafeBufferPointer<T>?) -> R) -> R {
        guard let array else { return body(nil) }
        return array.withUnsafeBufferPointer { body($0) }
    }

    /// Runs an operation that writes at most `CKEYCHAIN_PKCS11_MAX_DATA` bytes, and returns them.
    private func output(
        _ token: PKCS11Token, pin: String?,
        _ operation: (OpaquePointer, UnsafePointer<ckeychain_pkcs11_token_ref>, UnsafeMutablePointer<UInt8>, Int, UnsafeMutablePointer<Int>) ->
            ckeychain_pkcs11_result
    ) throws(KeychainError) -> Data {
        var buffer = [UInt8](repeating: 0, count: Int(CKEYCHAIN_PKCS11_MAX_DATA))
        var size = 0
        defer {
            for i in buffer.indices { buffer[i] = 0 }
        }
        try call(token, pin: pin) { registry, reference throws(KeychainError) in
            let capacity = buffer.count
            let result = buffer.withUnsafeMutableBufferPointer { out in
                guard let base = out.baseAddress else {
                    var failed = ckeychain_pkcs11_result()
                    failed.status = Int32(CKEYCHAIN_PKCS11_FAILED.rawValue)
                    return failed
                }
                return operation(registry, reference, base, capacity, &size)
            }
            try Self.check(result, token: token)
        }
        guard size <= buffer.count else { throw KeychainError(code: .internal, message: "The token \(token.identifier) gave a result larger than its buffer.") }
        return Data(buffer.prefix(size))
    }

    private static func check(_ result: ckeychain_pkcs11_result, token: PKCS11Token?) throws(KeychainError) {
        guard UInt32(bitPattern: result.status) != CKEYCHAIN_PKCS11_OK.rawValue else { return }
        throw PKCS11Failure(result).keychainError(token: token)
    }

    // MARK: Objects from C

    /// `objects` with each private key's missing public key taken from the public key, else the certificate, with
    /// its `CKA_ID`.
    static func completingPublicKeys(_ objects: [PKCS11Object]) -> [PKCS11Object] {
        var known: [Data: KeyMaterial] = [:]
        for object in objects {
            if case .certificate(let certificate) = object, known[certificate.id] == nil,
                let key = try? CertificateData(der: certificate.der).publicKey
            {
                known[certificate.id] = key
            }
        }
        for object in objects {
            if case .publicKey(let key) = object, let publicKey = key.publicKey { known[key.id] = publicKey }
        }
        return objects.map { object in
            guard case .privateKey(var key) = object, key.publicKey == nil, let publicKey = known[key.id],
                publicKey.type == key.type.keyType
            else { return object }
            key.publicKey = publicKey
            return .privateKey(key)
        }
    }
}

/// The C callback that appends each listed object to the `[PKCS11Object]` its context points to.
private func collectPKCS11Object(_ context: UnsafeMutableRawPointer?, _ object: UnsafePointer<ckeychain_pkcs11_object>?) {
    guard let context, let object, let listed = PKCS11Object(object.pointee) else { return }
    context.assumingMemoryBound(to: [PKCS11Object].self).pointee.append(listed)
}

extension PKCS11Token {
    init(_ token: ckeychain_pkcs11_token) {
        var token = token
        func text<T>(_ field: inout T) -> String {
            withUnsafeBytes(of: &field) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        self.init(
            module: text(&token.module), slot: token.slot, label: text(&token.label), manufacturer: text(&token.manufacturer),
            model: text(&token.model), serial: text(&token.serial), flags: Flags(rawValue: token.flags))
    }
}

extension PKCS11Object {
    /// An object the C layer listed; nil for one the keychain cannot describe (no class it knows).
    init?(_ object: ckeychain_pkcs11_object) {
        func bytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> Data? {
            guard let pointer else { return nil }
            return Data(bytes: pointer, count: count)
        }
        let id = bytes(object.id, object.id_size) ?? Data()
        let label = String(decoding: bytes(object.label, object.label_size) ?? Data(), as: UTF8.self)
        switch UInt32(bitPattern: object.object_class) {
        case CKEYCHAIN_PKCS11_CERTIFICATE.rawValue:
            guard let der = bytes(object.certificate, object.certificate_size) else { return nil }
            self = .certificate(PKCS11Certificate(id: id, label: label, der: der))
        case CKEYCHAIN_PKCS11_PRIVATE_KEY.rawValue, CKEYCHAIN_PKCS11_PUBLIC_KEY.rawValue:
            let type: PKCS11KeyType =
                switch UInt32(bitPattern: object.key_type) {
                case CKEYCHAIN_PKCS11_KEY_RSA.rawValue: .rsa
                case CKEYCHAIN_PKCS11_KEY_EC.rawValue: .ec
                default: .other(object.raw_key_type)
                }
            var publicKey: KeyMaterial?
            switch type {
            case .rsa:
                if let modulus = bytes(object.modulus, object.modulus_size), let exponent = bytes(object.public_exponent, object.public_exponent_size) {
                    publicKey = PKCS11PublicKeyEncoding.rsa(modulus: modulus, exponent: exponent)
                }
            case .ec:
                if let parameters = bytes(object.ec_params, object.ec_params_size), let point = bytes(object.ec_point, object.ec_point_size) {
                    publicKey = PKCS11PublicKeyEncoding.ec(parameters: parameters, point: point)
                }
            case .other: break
            }
            let key = PKCS11Key(id: id, label: label, type: type, usage: PKCS11KeyUsage(rawValue: object.key_flags), publicKey: publicKey)
            self = UInt32(bitPattern: object.object_class) == CKEYCHAIN_PKCS11_PRIVATE_KEY.rawValue ? .privateKey(key) : .publicKey(key)
        default:
            return nil
        }
    }
}

/// Public keys from their PKCS#11 attributes to Apple's external representation.
package enum PKCS11PublicKeyEncoding {
    /// The DER `CKA_EC_PARAMS` of the curves the keychain models: the namedCurve OIDs of P-256, P-384 and P-521,
    /// with their sizes in bits.
    static let curves: [Data: Int] = [
        Data([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]): 256,
        Data([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22]): 384,
        Data([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23]): 521,
    ]

    /// An RSA public key from `CKA_MODULUS` and `CKA_PUBLIC_EXPONENT` (big-endian): PKCS#1 RSAPublicKey DER,
    /// checked by swift-crypto; nil when it is not a key the keychain can use.
    package static func rsa(modulus: Data, exponent: Data) -> KeyMaterial? {
        let body = derInteger(modulus) + derInteger(exponent)
        let der = [0x30] + derLength(body.count) + body
        return try? KeyMaterial(externalRepresentation: Data(der), type: .rsa, keyClass: .publicKey)
    }

    /// An EC public key from `CKA_EC_PARAMS` and `CKA_EC_POINT`: X9.63 `04‖X‖Y`, checked to be on the curve the
    /// parameters name. The point is usually a DER OCTET STRING around `04‖X‖Y` (PKCS#11 2.40), sometimes the bare
    /// point; both are read.
    package static func ec(parameters: Data, point: Data) -> KeyMaterial? {
        guard let bits = curves[Data(parameters)] else { return nil }
        for candidate in [unwrappedOctetString(point), Data(point)] {
            guard let candidate, let key = try? KeyMaterial(externalRepresentation: candidate, type: .ec, keyClass: .publicKey), key.sizeInBits == bits else {
                continue
            }
            return key
        }
        return nil
    }

    /// The content of a DER OCTET STRING that is all of `data`, or nil.
    static func unwrappedOctetString(_ data: Data) -> Data? {
        let bytes = [UInt8](data)
        guard bytes.count >= 2, bytes[0] == 0x04 else { return nil }
        var length = Int(bytes[1]), header = 2
        if bytes[1] & 0x80 != 0 {
            let count = Int(bytes[1] & 0x7f)
            guard (1...2).contains(count), bytes.count >= 2 + count else { return nil }
            length = bytes[2..<(2 + count)].reduce(0) { $0 << 8 | Int($1) }
            header = 2 + count
        }
        guard header + length == bytes.count else { return nil }
        return Data(bytes[header...])
    }

    /// A DER INTEGER holding the unsigned big-endian `value`.
    static func derInteger(_ value: Data) -> [UInt8] {
        var content = Array(value.drop(while: { $0 == 0 }))
        if content.isEmpty || content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return [0x02] + derLength(content.count) + content
    }

    /// A DER length.
    static func derLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xff), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
