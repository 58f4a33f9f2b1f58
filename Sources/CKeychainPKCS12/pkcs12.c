#include "CKeychainPKCS12.h"

#include "libcrypto.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define crypto ckeychain_crypto

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
    if (!ckeychain_crypto_load()) {
        out->status = 4;
        ckeychain_crypto_unavailable(out->message, sizeof out->message);
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
    if (ckeychain_crypto_loaded()) {
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
    if (!ckeychain_crypto_load()) {
        ckeychain_crypto_unavailable(error, error_length);
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
