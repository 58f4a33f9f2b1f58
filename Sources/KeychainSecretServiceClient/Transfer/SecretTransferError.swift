/// Why a Secret Service session could not be opened, or a secret a client sent could not be read.
///
/// Each case maps to the D-Bus error the Secret Service answers with (``dbusErrorName``) and a ``message`` that
/// tells the client what to send instead. Messages never contain key material or secrets.
package enum SecretTransferError: Error, Sendable, Hashable {
    /// What is wrong with the Diffie-Hellman public key a client sent to `OpenSession`.
    package enum PublicKeyProblem: Sendable, Hashable {
        /// No byte array came with `OpenSession` (the input was another type, or absent).
        case missing
        /// The key is longer than the group's 128 bytes, even without its leading zero bytes (`byteCount` is its
        /// length without them).
        case tooLong(byteCount: Int)
        /// The key is 0, 1, p − 1, or not below the prime p: values that leave the shared secret guessable.
        case outOfRange
    }

    /// `OpenSession` named an algorithm this Secret Service does not implement (the name as the client sent it).
    case unsupportedAlgorithm(String)
    /// The client's Diffie-Hellman public key cannot be used.
    case invalidPublicKey(PublicKeyProblem)
    /// A secret's parameters do not fit the session's algorithm: not 16 bytes (the AES-CBC IV) for
    /// `dh-ietf1024-sha256-aes128-cbc-pkcs7`, not empty for `plain`. `byteCount` is what the client sent.
    case malformedParameters(algorithm: SecretTransferAlgorithm, byteCount: Int)
    /// A secret's value is not AES-CBC ciphertext: empty, or not a multiple of the 16-byte block (`byteCount` bytes).
    case malformedCiphertext(byteCount: Int)
    /// A secret decrypted to invalid PKCS#7 padding: it was encrypted under another key, or damaged.
    case badPadding
    /// OpenSSL's libcrypto, which computes the Diffie-Hellman exponentiation, could not be opened (the loader's
    /// reason: dlopen's error, or the missing symbol).
    case cryptoLibraryUnavailable(String)
    /// A cryptographic operation failed on this side for another reason (libcrypto's or swift-crypto's text).
    case cryptoFailed(String)

    /// The D-Bus error name the Secret Service replies with: `org.freedesktop.DBus.Error.NotSupported` for an
    /// unsupported algorithm (libsecret and secretstorage then retry with `plain`),
    /// `org.freedesktop.DBus.Error.Failed` for a failure on this side that is not the client's doing
    /// (``cryptoFailed(_:)``), `org.freedesktop.DBus.Error.InvalidArgs` for the rest.
    package var dbusErrorName: String {
        switch self {
        case .unsupportedAlgorithm:
            return "org.freedesktop.DBus.Error.NotSupported"
        case .cryptoFailed:
            return "org.freedesktop.DBus.Error.Failed"
        case .invalidPublicKey, .malformedParameters, .malformedCiphertext, .badPadding, .cryptoLibraryUnavailable:
            return "org.freedesktop.DBus.Error.InvalidArgs"
        }
    }

    /// The D-Bus error's message: what was wrong and what the client should do instead.
    package var message: String {
        let dh = SecretTransferAlgorithm.dhIETF1024SHA256AES128CBCPKCS7.rawValue
        switch self {
        case .unsupportedAlgorithm(let name):
            return "The transfer algorithm '\(name)' is not supported. Open the session with '\(dh)' or 'plain'."
        case .invalidPublicKey(.missing):
            return "OpenSession with '\(dh)' needs the client's Diffie-Hellman public key as a byte array (ay): "
                + "2^x mod p in the RFC 2409 1024-bit group, big-endian."
        case .invalidPublicKey(.tooLong(let count)):
            return "The client's Diffie-Hellman public key is \(count) bytes without its leading zeros; in the "
                + "1024-bit group it has at most 128. Send 2^x mod p, big-endian."
        case .invalidPublicKey(.outOfRange):
            return "The client's Diffie-Hellman public key is 0, 1, p-1 or not below the group's prime p. "
                + "Choose a new random private key x and send 2^x mod p, big-endian."
        case .malformedParameters(.plain, let count):
            return "A secret in a 'plain' session has empty parameters; these are \(count) bytes. "
                + "Send the secret as it is with empty parameters, or open an encrypted session."
        case .malformedParameters(.dhIETF1024SHA256AES128CBCPKCS7, let count):
            return "A secret in a '\(dh)' session has the 16-byte AES-CBC initialization vector as its parameters; "
                + "these are \(count) bytes. Send a fresh random 16-byte IV with each secret."
        case .malformedCiphertext(let count):
            return "The secret's value is \(count) bytes, which is not AES-128-CBC ciphertext (a non-empty multiple "
                + "of 16 bytes). Encrypt the secret with the session's key and PKCS#7 padding."
        case .badPadding:
            return "The secret did not decrypt to valid PKCS#7 padding: it was encrypted under another key than this "
                + "session's, or damaged. Derive the key with HKDF-SHA256 from the shared secret left-padded to "
                + "128 bytes, and encrypt with AES-128-CBC and PKCS#7 padding."
        case .cryptoLibraryUnavailable(let reason):
            return "The Secret Service cannot compute the Diffie-Hellman exchange: \(reason) "
                + "Open the session with 'plain' instead."
        case .cryptoFailed(let reason):
            return "The Secret Service's cryptography failed (\(reason)). Open a new session and try again."
        }
    }
}
