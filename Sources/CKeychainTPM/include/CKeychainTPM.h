#ifndef CKEYCHAIN_TPM_H
#define CKEYCHAIN_TPM_H

#include <stddef.h>
#include <stdint.h>

/// The largest secret `ckeychain_tpm_seal` seals (a TPM's keyed-hash object holds up to 128 bytes).
#define CKEYCHAIN_TPM_MAX_SECRET 128
/// Room for a marshalled TPM2B_PUBLIC or TPM2B_PRIVATE.
#define CKEYCHAIN_TPM_MAX_BLOB 1024

/// The outcome of a TPM call.
typedef struct {
    /// 0 success; 1 tpm2-tss's libraries (opened on first use) or the TCTI could not be loaded, or the TPM did not
    /// answer (no TPM here);
    /// 2 the TPM refused to load or unseal the sealed object (it was sealed by another TPM, or the blobs were altered);
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

#endif
