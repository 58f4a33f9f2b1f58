#include "CKeychainPKCS12.h"

#include <dlfcn.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/x509.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// libcrypto is opened on the first PKCS#12 file (or Secret Service Diffie-Hellman exchange), not when the program starts: loading and relocating it took
// about a tenth of every tool's start, and only `security import` of a .p12 uses it. The headers still give every
// function's type, so a call through the table is checked as a direct call would be.
#define CKEYCHAIN_CRYPTO_FUNCTIONS(F) \
    F(OSSL_PROVIDER_load) F(ERR_peek_last_error) F(ERR_error_string_n) F(ERR_clear_error) \
    F(d2i_PKCS12) F(PKCS12_free) F(PKCS12_mac_present) F(PKCS12_verify_mac) F(PKCS12_parse) \
    F(EVP_PKEY_get_base_id) F(EVP_PKEY_free) F(i2d_PrivateKey) F(i2d_X509) F(X509_alias_get0) F(X509_free) \
    F(OPENSSL_sk_num) F(OPENSSL_sk_value) F(OPENSSL_sk_pop_free) F(CRYPTO_zalloc) F(CRYPTO_free) F(CRYPTO_clear_free) \
    F(BN_CTX_new) F(BN_CTX_free) F(BN_new) F(BN_bin2bn) F(BN_bn2binpad) F(BN_is_odd) F(BN_set_flags) \
    F(BN_mod_exp_mont_consttime) F(BN_clear_free)

static struct {
#define CKEYCHAIN_CRYPTO_MEMBER(name) __typeof__(&name) name;
    CKEYCHAIN_CRYPTO_FUNCTIONS(CKEYCHAIN_CRYPTO_MEMBER)
#undef CKEYCHAIN_CRYPTO_MEMBER
} crypto;

#define CKEYCHAIN_STRING(x) #x
#define CKEYCHAIN_EXPAND_STRING(x) CKEYCHAIN_STRING(x)
/// The libcrypto this file was compiled against ("libcrypto.so.3" for OpenSSL 3).
#define CKEYCHAIN_LIBCRYPTO "libcrypto.so." CKEYCHAIN_EXPAND_STRING(OPENSSL_SHLIB_VERSION)

static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static int crypto_loaded;
static char crypto_failure[200];

// Opens libcrypto (searched for as the dynamic linker would at start: LD_LIBRARY_PATH, the program's RUNPATH, the
// system's folders) and loads OpenSSL 3's legacy provider for RC2 (legacy PKCS#12 files), which also requires
// loading the default one. The library stays open for the life of the process.
static void load_crypto(void) {
    void *library = dlopen(CKEYCHAIN_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(crypto_failure, sizeof crypto_failure, "%s", why ? why : "dlopen failed");
        return;
    }
#define CKEYCHAIN_CRYPTO_LOAD(name) \
    if ((crypto.name = (__typeof__(crypto.name))dlsym(library, #name)) == NULL) { \
        snprintf(crypto_failure, sizeof crypto_failure, "%s has no %s", CKEYCHAIN_LIBCRYPTO, #name); \
        return; \
    }
    CKEYCHAIN_CRYPTO_FUNCTIONS(CKEYCHAIN_CRYPTO_LOAD)
#undef CKEYCHAIN_CRYPTO_LOAD
    crypto.OSSL_PROVIDER_load(NULL, "legacy");
    crypto.OSSL_PROVIDER_load(NULL, "default");
    crypto_loaded = 1;
}

static int fail(ckeychain_pkcs12 *out, int status, const char *what) {
    out->status = status;
    unsigned long code = crypto.ERR_peek_last_error();
    if (code != 0) {
        char reason[200];
        crypto.ERR_error_string_n(code, reason, sizeof reason);
        snprintf(out->message, sizeof out->message, "%s (%s)", what, reason);
    } else {
        snprintf(out->message, sizeof out->message, "%s", what);
    }
    crypto.ERR_clear_error();
    return status;
}

int ckeychain_pkcs12_parse(const unsigned char *data, long length, const char *password, ckeychain_pkcs12 *out) {
    memset(out, 0, sizeof *out);
    pthread_once(&crypto_once, load_crypto);
    if (!crypto_loaded) {
        out->status = 4;
        snprintf(out->message, sizeof out->message,
                 "OpenSSL's libcrypto (%s), which opens PKCS#12 files, could not be loaded: %s. Install OpenSSL 3 (Debian: libssl3).",
                 CKEYCHAIN_LIBCRYPTO, crypto_failure);
        return out->status;
    }
    crypto.ERR_clear_error();
    const unsigned char *cursor = data;
    PKCS12 *p12 = crypto.d2i_PKCS12(NULL, &cursor, length);
    if (p12 == NULL || cursor != data + length) {
        crypto.PKCS12_free(p12);
        return fail(out, 1, "The data is not a PKCS#12 file, or it is truncated.");
    }
    if (crypto.PKCS12_mac_present(p12) && !crypto.PKCS12_verify_mac(p12, password, -1)) {
        crypto.PKCS12_free(p12);
        return fail(out, 2, "The PKCS#12 file's integrity check failed: the password is wrong.");
    }
    EVP_PKEY *key = NULL;
    X509 *certificate = NULL;
    STACK_OF(X509) *chain = NULL;
    if (!crypto.PKCS12_parse(p12, password, &key, &certificate, &chain)) {
        crypto.PKCS12_free(p12);
        return fail(out, 3, "The PKCS#12 file's contents could not be decrypted: a wrong password or an unsupported encryption.");
    }
    crypto.PKCS12_free(p12);
    if (key != NULL) {
        int id = crypto.EVP_PKEY_get_base_id(key);
        out->key_type = id == EVP_PKEY_RSA ? 1 : (id == EVP_PKEY_EC ? 2 : 0);
        if (out->key_type != 0) {
            out->key_length = crypto.i2d_PrivateKey(key, &out->key);
            if (out->key_length <= 0) { out->key = NULL; out->key_length = 0; out->key_type = 0; }
        }
        crypto.EVP_PKEY_free(key);
    }
    if (certificate != NULL) {
        out->certificate_length = crypto.i2d_X509(certificate, &out->certificate);
        if (out->certificate_length <= 0) { out->certificate = NULL; out->certificate_length = 0; }
        int alias_length = 0;
        unsigned char *alias = crypto.X509_alias_get0(certificate, &alias_length);
        if (alias != NULL && alias_length > 0) {
            out->friendly_name = crypto.CRYPTO_zalloc((size_t)alias_length + 1, OPENSSL_FILE, OPENSSL_LINE);
            if (out->friendly_name != NULL) memcpy(out->friendly_name, alias, (size_t)alias_length);
        }
        crypto.X509_free(certificate);
    }
    if (chain != NULL) {
        int count = crypto.OPENSSL_sk_num((const OPENSSL_STACK *)chain);
        for (int i = 0; i < count && out->chain_count < CKEYCHAIN_PKCS12_MAX_CHAIN; i++) {
            unsigned char *der = NULL;
            long der_length = crypto.i2d_X509((const X509 *)crypto.OPENSSL_sk_value((const OPENSSL_STACK *)chain, i), &der);
            if (der_length > 0) {
                out->chain[out->chain_count] = der;
                out->chain_length[out->chain_count] = der_length;
                out->chain_count++;
            }
        }
        crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)chain, (OPENSSL_sk_freefunc)crypto.X509_free);
    }
    crypto.ERR_clear_error();
    return 0;
}

void ckeychain_pkcs12_free(ckeychain_pkcs12 *result) {
    // Only a successful parse, which loaded libcrypto, leaves buffers to free.
    if (crypto_loaded) {
        if (result->key != NULL) crypto.CRYPTO_clear_free(result->key, (size_t)result->key_length, OPENSSL_FILE, OPENSSL_LINE);
        crypto.CRYPTO_free(result->certificate, OPENSSL_FILE, OPENSSL_LINE);
        for (int i = 0; i < result->chain_count; i++) crypto.CRYPTO_free(result->chain[i], OPENSSL_FILE, OPENSSL_LINE);
        crypto.CRYPTO_free(result->friendly_name, OPENSSL_FILE, OPENSSL_LINE);
    }
    memset(result, 0, sizeof *result);
}

// Records why the exponentiation failed: `what`, and OpenSSL's reason when it left one.
static int modexp_fail(char *error, size_t error_length, int status, const char *what) {
    if (error != NULL && error_length > 0) {
        unsigned long code = crypto.ERR_peek_last_error();
        if (code != 0) {
            char reason[200];
            crypto.ERR_error_string_n(code, reason, sizeof reason);
            snprintf(error, error_length, "%s (%s)", what, reason);
        } else {
            snprintf(error, error_length, "%s", what);
        }
    }
    crypto.ERR_clear_error();
    return status;
}

int ckeychain_dh_modexp(const uint8_t *base, size_t base_length, const uint8_t *exponent, size_t exponent_length,
                        const uint8_t *modulus, size_t modulus_length, uint8_t *out, char *error, size_t error_length) {
    if (error != NULL && error_length > 0) error[0] = 0;
    pthread_once(&crypto_once, load_crypto);
    if (!crypto_loaded) {
        if (error != NULL && error_length > 0) {
            snprintf(error, error_length, "OpenSSL's libcrypto (%s) could not be loaded: %s. Install OpenSSL 3 (Debian: libssl3).",
                     CKEYCHAIN_LIBCRYPTO, crypto_failure);
        }
        return -1;
    }
    if (base_length > INT_MAX || exponent_length > INT_MAX || modulus_length == 0 || modulus_length > INT_MAX) {
        if (error != NULL && error_length > 0) snprintf(error, error_length, "an operand is too long, or the modulus is empty");
        return -2;
    }
    crypto.ERR_clear_error();
    int status = -2;
    const char *what = "the exponentiation failed";
    BN_CTX *context = crypto.BN_CTX_new();
    BIGNUM *b = crypto.BN_bin2bn(base, (int)base_length, NULL);
    // A fresh BIGNUM marked constant-time before the secret is read into it (BN_bin2bn keeps the flag).
    BIGNUM *e = crypto.BN_new();
    if (e != NULL) {
        crypto.BN_set_flags(e, BN_FLG_CONSTTIME);
        if (crypto.BN_bin2bn(exponent, (int)exponent_length, e) == NULL) {
            crypto.BN_clear_free(e);
            e = NULL;
        }
    }
    BIGNUM *m = crypto.BN_bin2bn(modulus, (int)modulus_length, NULL);
    BIGNUM *result = crypto.BN_new();
    if (context == NULL || b == NULL || e == NULL || m == NULL || result == NULL) {
        what = "out of memory";
    } else if (!crypto.BN_is_odd(m)) {
        // Montgomery multiplication, and so the constant-time exponentiation, needs an odd modulus.
        what = "the modulus is even";
    } else if (!crypto.BN_mod_exp_mont_consttime(result, b, e, m, context, NULL)) {
        what = "BN_mod_exp_mont_consttime failed";
    } else if (crypto.BN_bn2binpad(result, out, (int)modulus_length) != (int)modulus_length) {
        what = "the result does not fit the modulus length";
    } else {
        status = 0;
    }
    if (status != 0) modexp_fail(error, error_length, status, what);
    crypto.BN_clear_free(result);
    crypto.BN_clear_free(m);
    crypto.BN_clear_free(e);
    crypto.BN_clear_free(b);
    crypto.BN_CTX_free(context);
    crypto.ERR_clear_error();
    return status;
}
