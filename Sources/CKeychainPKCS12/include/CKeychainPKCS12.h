#ifndef CKEYCHAIN_PKCS12_H
#define CKEYCHAIN_PKCS12_H

#include <stddef.h>
#include <stdint.h>

/// The most CA certificates a PKCS#12 file's chain may hand back.
#define CKEYCHAIN_PKCS12_MAX_CHAIN 16

/// What `ckeychain_pkcs12_parse` found. Buffers are owned by the result: release them with `ckeychain_pkcs12_free`.
typedef struct {
    /// 0 success; 1 not a PKCS#12 file (or truncated); 2 the MAC does not verify (wrong password);
    /// 3 the contents could not be decrypted or read (wrong password, or an unsupported profile).
    /// 4 OpenSSL's libcrypto could not be loaded (it is opened on first use, not when the program starts).
    int status;
    /// What went wrong, for status != 0 (OpenSSL's reason, never the password).
    char message[256];
    /// The private key: 1 RSA (PKCS#1 DER), 2 EC (SEC1 DER), 0 none or another type.
    int key_type;
    unsigned char *key;
    long key_length;
    /// The certificate that goes with the key (DER).
    unsigned char *certificate;
    long certificate_length;
    /// Further certificates (DER).
    unsigned char *chain[CKEYCHAIN_PKCS12_MAX_CHAIN];
    long chain_length[CKEYCHAIN_PKCS12_MAX_CHAIN];
    int chain_count;
    /// The certificate's friendly name, NUL-terminated, or NULL.
    char *friendly_name;
} ckeychain_pkcs12;

/// Opens a password-protected PKCS#12 file with OpenSSL's libcrypto (PBES2/AES and the legacy 3DES/RC2 profiles).
/// Returns `out->status`.
int ckeychain_pkcs12_parse(const unsigned char *data, long length, const char *password, ckeychain_pkcs12 *out);

/// Releases what a parse allocated (and wipes the key buffer first).
void ckeychain_pkcs12_free(ckeychain_pkcs12 *result);

/// `base ^ exponent mod modulus` with OpenSSL's `BN_mod_exp_mont_consttime` (constant-time in the exponent, which is
/// the secret: a Diffie-Hellman private key). Operands are unsigned big-endian; the modulus must be odd and non-empty.
/// The result goes to `out` as exactly `modulus_length` bytes, left-padded with zeros.
/// Returns 0 on success; -1 when libcrypto could not be loaded; -2 when the computation failed. On failure `error`
/// (`error_length` bytes, may be NULL) holds a NUL-terminated reason.
int ckeychain_dh_modexp(const uint8_t *base, size_t base_length, const uint8_t *exponent, size_t exponent_length,
                        const uint8_t *modulus, size_t modulus_length, uint8_t *out, char *error, size_t error_length);

#endif
