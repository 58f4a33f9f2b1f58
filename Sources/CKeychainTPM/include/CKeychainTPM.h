#ifndef CKEYCHAIN_TPM_H
#define CKEYCHAIN_TPM_H

#include <stddef.h>
#include <stdint.h>

/// The largest secret `ckeychain_tpm_seal` seals (a TPM's keyed-hash object holds up to 128 bytes).
#define CKEYCHAIN_TPM_MAX_SECRET 128
/// Room for a marshalled TPM2B_PUBLIC or TPM2B_PRIVATE.
#define CKEYCHAIN_TPM_MAX_BLOB 1024
/// The size of a P-256 coordinate, of an ECDSA signature's r and s, and of an ECDH shared secret.
#define CKEYCHAIN_TPM_P256_SIZE 32
/// The TPMA_OBJECT attributes of every key `ckeychain_tpm_key_create` makes: fixedTPM | fixedParent |
/// sensitiveDataOrigin | userWithAuth | noDA | decrypt | sign. Blobs whose public part has others are refused.
#define CKEYCHAIN_TPM_KEY_ATTRIBUTES 0x00060472u

/// The outcome of a TPM call.
typedef struct {
    /// 0 success; 1 tpm2-tss's libraries (opened on first use) or the TCTI could not be loaded, or the TPM did not
    /// answer (no TPM here);
    /// 2 the TPM refused to load or unseal the sealed object or key (it was made by another TPM, or the blobs were
    /// altered, or they are not one);
    /// 3 another TPM failure (owner hierarchy locked by a password, out of memory, bad arguments).
    int status;
    /// The TSS2 response code of the failing call (0 when none).
    uint32_t rc;
    /// The failing step, and the TSS2 decoding of `rc` (never secret material).
    char message[256];
} ckeychain_tpm_result;

/// Seals `secret` (at most CKEYCHAIN_TPM_MAX_SECRET bytes) under a primary storage key of the owner
/// hierarchy (ECC P-256, the fixed template of ckeychain_tpm.c) of the TPM reached through `tcti`
/// (a Tss2_TctiLdr_Initialize configuration such as "device:/dev/tpmrm0" or "swtpm:host=127.0.0.1,port=2321").
/// Writes the marshalled TPM2B_PUBLIC and TPM2B_PRIVATE of the sealed object into `public_blob`/`private_blob`
/// (each CKEYCHAIN_TPM_MAX_BLOB bytes) and their sizes into `*public_size`/`*private_size`.
ckeychain_tpm_result ckeychain_tpm_seal(const char *tcti, const uint8_t *secret, size_t secret_size,
                                        uint8_t *public_blob, size_t *public_size,
                                        uint8_t *private_blob, size_t *private_size);

/// Loads a sealed object made by `ckeychain_tpm_seal` under the same primary key and unseals it into `secret`
/// (CKEYCHAIN_TPM_MAX_SECRET bytes), its size into `*secret_size`.
ckeychain_tpm_result ckeychain_tpm_unseal(const char *tcti, const uint8_t *public_blob, size_t public_size,
                                          const uint8_t *private_blob, size_t private_size,
                                          uint8_t *secret, size_t *secret_size);

/// An open connection to a TPM with the owner hierarchy's primary storage key loaded, for P-256 keys whose private
/// part never leaves the TPM. The primary key is the one `ckeychain_tpm_seal` uses (the same template on the same
/// seed derives the same key), created once when the context opens rather than on every call: deriving it from the
/// seed is the costliest step of a call on a hardware TPM. Each key operation loads its key from the blobs and
/// flushes it after.
///
/// Not thread-safe: one call at a time on a context (the Swift side holds a lock around each); separate contexts
/// are independent. On a TPM reached without a resource manager (a simulator on a socket) the primary key takes
/// one of the TPM's few object slots (three for all connections) for as long as the context is open.
typedef struct ckeychain_tpm_context ckeychain_tpm_context;

/// Connects to the TPM reached through `tcti` (as `ckeychain_tpm_seal`) and creates the primary key. Returns NULL
/// on failure, with the reason in `*out` (which also says success otherwise; `out` may be NULL).
ckeychain_tpm_context *ckeychain_tpm_open(const char *tcti, ckeychain_tpm_result *out);

/// Flushes the context's primary key from the TPM, disconnects, and frees the context. NULL does nothing.
void ckeychain_tpm_close(ckeychain_tpm_context *ctx);

/// Creates an ECC NIST P-256 key under the primary key: made by the TPM and never exported (fixedTPM, fixedParent,
/// sensitiveDataOrigin), unrestricted, for both ECDSA signatures and ECDH (sign and decrypt, scheme chosen per call),
/// with an empty authorization value and no dictionary-attack protection (noDA: there is nothing to guess).
/// On entry `*public_size`/`*private_size` are the room in `public_blob`/`private_blob` (CKEYCHAIN_TPM_MAX_BLOB is
/// always enough); on success they are the sizes of the marshalled TPM2B_PUBLIC and TPM2B_PRIVATE written there
/// (the private part is wrapped by the primary key: only this TPM can load it), and `x`/`y` the public point.
ckeychain_tpm_result ckeychain_tpm_key_create(ckeychain_tpm_context *ctx, uint8_t *public_blob, size_t *public_size,
                                              uint8_t *private_blob, size_t *private_size,
                                              uint8_t x[CKEYCHAIN_TPM_P256_SIZE], uint8_t y[CKEYCHAIN_TPM_P256_SIZE]);

/// Signs the SHA-256 `digest` with the key the blobs of `ckeychain_tpm_key_create` describe: ECDSA, `r` and `s`
/// big-endian, left-padded to 32 bytes. Status 2 when the TPM refuses the blobs.
ckeychain_tpm_result ckeychain_tpm_key_sign(ckeychain_tpm_context *ctx, const uint8_t *public_blob, size_t public_size,
                                            const uint8_t *private_blob, size_t private_size,
                                            const uint8_t digest[CKEYCHAIN_TPM_P256_SIZE],
                                            uint8_t r[CKEYCHAIN_TPM_P256_SIZE], uint8_t s[CKEYCHAIN_TPM_P256_SIZE]);

/// ECDH with the key the blobs describe and the peer's public point (`peer_x`, `peer_y`, big-endian): writes the
/// shared point's x coordinate, left-padded to 32 bytes, into `z`. Status 2 when the TPM refuses the blobs, 3 when
/// the peer's point is not on the curve.
ckeychain_tpm_result ckeychain_tpm_key_ecdh(ckeychain_tpm_context *ctx, const uint8_t *public_blob, size_t public_size,
                                            const uint8_t *private_blob, size_t private_size,
                                            const uint8_t peer_x[CKEYCHAIN_TPM_P256_SIZE],
                                            const uint8_t peer_y[CKEYCHAIN_TPM_P256_SIZE], uint8_t z[CKEYCHAIN_TPM_P256_SIZE]);

#endif
