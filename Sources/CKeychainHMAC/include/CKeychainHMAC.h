#ifndef CKEYCHAIN_HMAC_H
#define CKEYCHAIN_HMAC_H

#include <stddef.h>
#include <stdint.h>

/// SHA-256's running state, opaque to Swift: large enough for OpenSSL's `SHA256_CTX` (112 bytes), checked at
/// compile time in hmac.c.
typedef struct {
    uint64_t words[16];
} ckeychain_sha256_state;

/// An HMAC-SHA256 key made ready for use: the states after hashing the inner and outer pads. Each MAC starts
/// from a copy of them, so the pads are hashed once per key rather than once per MAC.
typedef struct {
    ckeychain_sha256_state inner;
    ckeychain_sha256_state outer;
} ckeychain_hmac_key;

/// Prepares `key` (`length` ≤ 64 bytes, as the index key's 32 are) for HMAC-SHA256. Returns 0, or -1 for a
/// longer key.
int ckeychain_hmac_key_init(ckeychain_hmac_key *out, const uint8_t *key, size_t length);

/// Starts a MAC under `key` in `state`.
void ckeychain_hmac_start(const ckeychain_hmac_key *key, ckeychain_sha256_state *state);

/// Adds `length` bytes of the message.
void ckeychain_hmac_update(ckeychain_sha256_state *state, const void *bytes, size_t length);

/// Finishes the MAC into `out` (32 bytes).
void ckeychain_hmac_finish(const ckeychain_hmac_key *key, ckeychain_sha256_state *state, uint8_t out[32]);

#endif
