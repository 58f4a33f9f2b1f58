#ifndef CKEYCHAIN_PKCS12_H
#define CKEYCHAIN_PKCS12_H

#include <stddef.h>
#include <stdint.h>

/// The most private keys one PKCS#12 file may hold (a file with more is refused, never cut short).
#define CKEYCHAIN_PKCS12_MAX_KEYS 32
/// The most certificates one PKCS#12 file may hold (a file with more is refused, never cut short).
#define CKEYCHAIN_PKCS12_MAX_CERTIFICATES 64

/// A private key bag of a PKCS#12 file.
typedef struct {
    /// 1 RSA (PKCS#1 DER), 2 EC (SEC1 DER).
    int type;
    unsigned char *der;
    long length;
    /// The bag's localKeyID attribute (the certificate of the key carries the same one), or NULL.
    unsigned char *local_key_id;
    long local_key_id_length;
    /// The bag's friendlyName, NUL-terminated UTF-8, or NULL.
    char *friendly_name;
} ckeychain_pkcs12_key;

/// An X.509 certificate bag of a PKCS#12 file.
typedef struct {
    unsigned char *der;
    long length;
    /// The bag's localKeyID attribute, or NULL.
    unsigned char *local_key_id;
    long local_key_id_length;
    /// The bag's friendlyName, NUL-terminated UTF-8, or NULL.
    char *friendly_name;
} ckeychain_pkcs12_certificate;

/// What `ckeychain_pkcs12_parse` found: every key bag and every certificate bag, in the file's order. Buffers are
/// owned by the result: release them with `ckeychain_pkcs12_free`.
typedef struct {
    /// 0 success; 1 not a PKCS#12 file (or truncated); 2 the MAC does not verify (wrong password);
    /// 3 the contents could not be decrypted or read (wrong password, or an unsupported profile).
    /// 4 OpenSSL's libcrypto could not be loaded (it is opened on first use, not when the program starts).
    /// 5 a key of a type the keychain cannot hold (message names it); 6 more keys or certificates than the limits.
    int status;
    /// What went wrong, for status != 0 (OpenSSL's reason, never the password).
    char message[256];
    ckeychain_pkcs12_key keys[CKEYCHAIN_PKCS12_MAX_KEYS];
    int key_count;
    ckeychain_pkcs12_certificate certificates[CKEYCHAIN_PKCS12_MAX_CERTIFICATES];
    int certificate_count;
} ckeychain_pkcs12;

/// Opens a password-protected PKCS#12 file with OpenSSL's libcrypto (PBES2/AES and the legacy 3DES/RC2 profiles),
/// reading every bag rather than the first identity alone. An empty password also opens a file sealed with none.
/// Returns `out->status`.
int ckeychain_pkcs12_parse(const unsigned char *data, long length, const char *password, ckeychain_pkcs12 *out);

/// Releases what a parse allocated (and wipes the key buffers first).
void ckeychain_pkcs12_free(ckeychain_pkcs12 *result);

/// `base ^ exponent mod modulus` with OpenSSL's `BN_mod_exp_mont_consttime` (constant-time in the exponent, which is
/// the secret: a Diffie-Hellman private key). Operands are unsigned big-endian; the modulus must be odd and non-empty.
/// The result goes to `out` as exactly `modulus_length` bytes, left-padded with zeros.
/// Returns 0 on success; -1 when libcrypto could not be loaded; -2 when the computation failed. On failure `error`
/// (`error_length` bytes, may be NULL) holds a NUL-terminated reason.
int ckeychain_dh_modexp(const uint8_t *base, size_t base_length, const uint8_t *exponent, size_t exponent_length,
                        const uint8_t *modulus, size_t modulus_length, uint8_t *out, char *error, size_t error_length);

/// One identity for `ckeychain_pkcs12_create`: a private key (PKCS#8, PKCS#1 or SEC1 DER), its certificate (DER),
/// and the friendly name its bags carry (NUL-terminated UTF-8, or NULL).
typedef struct {
    const unsigned char *key;
    size_t key_length;
    const unsigned char *certificate;
    size_t certificate_length;
    const char *friendly_name;
} ckeychain_pkcs12_identity;

/// Writes a password-protected PKCS#12 file as OpenSSL 3 does by default: certificates in a PBES2 (PBKDF2 with
/// HMAC-SHA-256, AES-256-CBC) encrypted safe, each key in a shrouded key bag under the same scheme, 2048 iterations,
/// and an HMAC-SHA-256 integrity MAC. Each identity's key and certificate share a local key ID (the certificate's
/// SHA-1); `certificates` (DER) are added after them. On success (0) `*out` holds the file, to release with
/// `ckeychain_crypto_buffer_free`. Returns 0; -1 when libcrypto could not be loaded; -2 when a key or certificate
/// does not parse, or a key is not its certificate's; -3 when writing failed. `error` gets the reason.
int ckeychain_pkcs12_create(const ckeychain_pkcs12_identity *identities, int identity_count,
                            const unsigned char *const *certificates, const size_t *certificate_lengths, int certificate_count,
                            const char *password, unsigned char **out, size_t *out_length, char *error, size_t error_length);

/// Releases (and wipes) a buffer libcrypto allocated for a result.
void ckeychain_crypto_buffer_free(unsigned char *buffer, size_t length);

/// The RSA operations of `ckeychain_rsa`.
enum {
    /// Private-key operation on `input`: a signature.
    CKEYCHAIN_RSA_SIGN = 1,
    /// Public-key check of `signature` over `input`: 0 when it matches, -3 when not.
    CKEYCHAIN_RSA_VERIFY = 2,
    /// Public-key recovery of what `signature` signed (unpadded RSA: `signature ^ e mod n`), into `out`.
    CKEYCHAIN_RSA_RECOVER = 3,
    /// Public-key encryption of `input`.
    CKEYCHAIN_RSA_ENCRYPT = 4,
    /// Private-key decryption of `input`.
    CKEYCHAIN_RSA_DECRYPT = 5,
};

/// OpenSSL's RSA padding modes, as `ckeychain_rsa` takes them.
enum {
    CKEYCHAIN_RSA_PADDING_PKCS1 = 1,
    CKEYCHAIN_RSA_PADDING_NONE = 3,
    CKEYCHAIN_RSA_PADDING_OAEP = 4,
    CKEYCHAIN_RSA_PADDING_PSS = 6,
};

/// An RSA operation with OpenSSL's libcrypto. `key` is PKCS#1 DER: RSAPrivateKey for sign and decrypt,
/// RSAPublicKey for verify, recover and encrypt. `digest` (an OpenSSL digest name such as "SHA224", or NULL) is the
/// signature's digest (PKCS#1 v1.5 then adds its DigestInfo; PSS and OAEP use it for MGF1 as well); PSS's salt is
/// as long as the digest. `out` has room for `*out_length` bytes (the modulus length is enough) and gets the result's
/// length. Returns 0; -1 when libcrypto could not be loaded; -2 when the key or input was refused (`error` says
/// why); -3 when a signature does not verify.
int ckeychain_rsa(int operation, int padding, const char *digest, const unsigned char *key, size_t key_length,
                  const unsigned char *input, size_t input_length, const unsigned char *signature, size_t signature_length,
                  unsigned char *out, size_t *out_length, char *error, size_t error_length);

/// The digest `name` (an OpenSSL digest name such as "SHA224") of `data` into `out` (64 bytes of room), its length
/// in `*out_length`. Returns 0; -1 when libcrypto could not be loaded; -2 for an unknown digest.
int ckeychain_digest(const char *name, const unsigned char *data, size_t length, unsigned char *out, size_t *out_length,
                     char *error, size_t error_length);

#endif
