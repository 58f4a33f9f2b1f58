// HMAC-SHA256 (RFC 2104) over OpenSSL's SHA-256, with the key's pads hashed once: the keychain's blind
// indexes compute one MAC per searched attribute, and this keeps each to SHA-256's two compressions and two
// copies of a state. swift-crypto's HMAC gives the same results (the tests compare them) but allocates on
// every copy of its state.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CKeychainHMAC.h"

#include <openssl/sha.h>
#include <string.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(ckeychain_sha256_state), "ckeychain_sha256_state is too small for SHA256_CTX");

static SHA256_CTX *ctx(ckeychain_sha256_state *state) { return (SHA256_CTX *)(void *)state; }

int ckeychain_hmac_key_init(ckeychain_hmac_key *out, const uint8_t *key, size_t length) {
    if (length > SHA256_CBLOCK) return -1;
    uint8_t pad[SHA256_CBLOCK];
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = (uint8_t)((i < length ? key[i] : 0) ^ 0x36);
    SHA256_Init(ctx(&out->inner));
    SHA256_Update(ctx(&out->inner), pad, sizeof(pad));
    for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = (uint8_t)((i < length ? key[i] : 0) ^ 0x5c);
    SHA256_Init(ctx(&out->outer));
    SHA256_Update(ctx(&out->outer), pad, sizeof(pad));
    memset(pad, 0, sizeof(pad));
    return 0;
}

void ckeychain_hmac_start(const ckeychain_hmac_key *key, ckeychain_sha256_state *state) {
    memcpy(state, &key->inner, sizeof(*state));
}

void ckeychain_hmac_update(ckeychain_sha256_state *state, const void *bytes, size_t length) {
    if (length > 0) SHA256_Update(ctx(state), bytes, length);
}

void ckeychain_hmac_finish(const ckeychain_hmac_key *key, ckeychain_sha256_state *state, uint8_t out[32]) {
    uint8_t inner[SHA256_DIGEST_LENGTH];
    SHA256_Final(inner, ctx(state));
    ckeychain_sha256_state outer;
    memcpy(&outer, &key->outer, sizeof(outer));
    SHA256_Update(ctx(&outer), inner, sizeof(inner));
    SHA256_Final(out, ctx(&outer));
    memset(inner, 0, sizeof(inner));
    memset(state, 0, sizeof(*state));
}
