// Argon2 and gzip for the KeePass (KDBX) importer. libargon2 and zlib are opened with dlopen on first use rather than
// linked, so that a program that never imports a KeePass database does not load them, and so that the build needs
// neither library's development headers.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Success.
#define CKEYCHAIN_IMPORT_OK 0
/// The shared library (libargon2.so.1 or libz.so.1) could not be loaded; `error` says what to install.
#define CKEYCHAIN_IMPORT_UNAVAILABLE 1
/// The input is damaged (gzip) or the parameters were refused (Argon2); `error` says why.
#define CKEYCHAIN_IMPORT_BAD_INPUT 2
/// The decompressed data would exceed the caller's limit.
#define CKEYCHAIN_IMPORT_TOO_LARGE 3
/// Memory could not be allocated.
#define CKEYCHAIN_IMPORT_NO_MEMORY 4

/// Argon2 (`type` 0 = Argon2d, 2 = Argon2id; `version` 0x10 or 0x13) of `pwd` with `salt` into `hash` (`hashlen`
/// bytes), with `m_cost_kib` KiB of memory. Returns one of the CKEYCHAIN_IMPORT_ codes; on failure `error` holds a
/// sentence (NUL-terminated, truncated to `error_length`).
int ckeychain_argon2_hash(uint32_t t_cost, uint32_t m_cost_kib, uint32_t parallelism, const void *pwd, size_t pwdlen,
                          const void *salt, size_t saltlen, void *hash, size_t hashlen, int type, uint32_t version,
                          char *error, size_t error_length);

/// Inflates the gzip data `input` (`input_length` bytes). On success `*output` is a buffer from malloc holding
/// `*output_length` bytes, to be released with `ckeychain_import_free`; it never grows past `output_limit` bytes
/// (CKEYCHAIN_IMPORT_TOO_LARGE instead). Returns one of the CKEYCHAIN_IMPORT_ codes; on failure `*output` is NULL and
/// `error` holds a sentence.
int ckeychain_gunzip(const void *input, size_t input_length, size_t output_limit, void **output, size_t *output_length,
                     char *error, size_t error_length);

/// Releases a buffer returned by `ckeychain_gunzip`.
void ckeychain_import_free(void *buffer);

#ifdef __cplusplus
}
#endif
