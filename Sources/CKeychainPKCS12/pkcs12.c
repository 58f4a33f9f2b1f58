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

/// A copy of `bytes` in libcrypto's allocator (freed by `ckeychain_pkcs12_free`), or NULL.
static unsigned char *copy_bytes(const unsigned char *bytes, long length) {
    if (bytes == NULL || length <= 0) return NULL;
    unsigned char *copy = crypto.CRYPTO_zalloc((size_t)length, OPENSSL_FILE, OPENSSL_LINE);
    if (copy != NULL) memcpy(copy, bytes, (size_t)length);
    return copy;
}

/// The bag's localKeyID attribute, copied (NULL when it has none).
static unsigned char *local_key_id(const PKCS12_SAFEBAG *bag, long *length) {
    *length = 0;
    const ASN1_TYPE *attribute = crypto.PKCS12_SAFEBAG_get0_attr(bag, NID_localKeyID);
    if (attribute == NULL || attribute->type != V_ASN1_OCTET_STRING) return NULL;
    const ASN1_STRING *value = attribute->value.octet_string;
    unsigned char *copy = copy_bytes(crypto.ASN1_STRING_get0_data(value), crypto.ASN1_STRING_length(value));
    if (copy != NULL) *length = crypto.ASN1_STRING_length(value);
    return copy;
}

/// Adds a key bag's key to `out`: 0, or the status to fail with.
static int add_key(ckeychain_pkcs12 *out, const PKCS12_SAFEBAG *bag, const PKCS8_PRIV_KEY_INFO *info) {
    EVP_PKEY *key = crypto.EVP_PKCS82PKEY(info);
    if (key == NULL) return fail(out, 3, "A private key of the PKCS#12 file could not be read.");
    int id = crypto.EVP_PKEY_get_base_id(key);
    int type = id == EVP_PKEY_RSA ? 1 : (id == EVP_PKEY_EC ? 2 : 0);
    if (type == 0) {
        const char *name = crypto.OBJ_nid2sn(id);
        crypto.EVP_PKEY_free(key);
        char what[160];
        snprintf(what, sizeof what, "A private key of the PKCS#12 file is %s; the keychain holds RSA and elliptic-curve keys only.",
                 name ? name : "of another type");
        return fail(out, 5, what);
    }
    if (out->key_count == CKEYCHAIN_PKCS12_MAX_KEYS) {
        crypto.EVP_PKEY_free(key);
        return fail(out, 6, "The PKCS#12 file holds more private keys than the keychain reads from one file (32).");
    }
    ckeychain_pkcs12_key *slot = &out->keys[out->key_count];
    unsigned char *der = NULL;
    long length = crypto.i2d_PrivateKey(key, &der);
    crypto.EVP_PKEY_free(key);
    if (length <= 0) return fail(out, 3, "A private key of the PKCS#12 file could not be encoded.");
    slot->type = type;
    slot->der = der;
    slot->length = length;
    slot->local_key_id = local_key_id(bag, &slot->local_key_id_length);
    slot->friendly_name = crypto.PKCS12_get_friendlyname((PKCS12_SAFEBAG *)bag);
    out->key_count++;
    return 0;
}

/// Adds a certificate bag's X.509 certificate to `out` (other certificate kinds are not X.509: skipped, as
/// OpenSSL's own reader skips them): 0, or the status to fail with.
static int add_certificate(ckeychain_pkcs12 *out, const PKCS12_SAFEBAG *bag) {
    if (crypto.PKCS12_SAFEBAG_get_bag_nid(bag) != NID_x509Certificate) return 0;
    X509 *certificate = crypto.PKCS12_SAFEBAG_get1_cert(bag);
    if (certificate == NULL) return fail(out, 3, "A certificate of the PKCS#12 file could not be read.");
    if (out->certificate_count == CKEYCHAIN_PKCS12_MAX_CERTIFICATES) {
        crypto.X509_free(certificate);
        return fail(out, 6, "The PKCS#12 file holds more certificates than the keychain reads from one file (64).");
    }
    ckeychain_pkcs12_certificate *slot = &out->certificates[out->certificate_count];
    unsigned char *der = NULL;
    long length = crypto.i2d_X509(certificate, &der);
    crypto.X509_free(certificate);
    if (length <= 0) return fail(out, 3, "A certificate of the PKCS#12 file could not be encoded.");
    slot->der = der;
    slot->length = length;
    slot->local_key_id = local_key_id(bag, &slot->local_key_id_length);
    slot->friendly_name = crypto.PKCS12_get_friendlyname((PKCS12_SAFEBAG *)bag);
    out->certificate_count++;
    return 0;
}

/// Reads a list of bags (recursing once per nesting level into safe-contents bags, at most `depth` deep).
static int add_bags(ckeychain_pkcs12 *out, const STACK_OF(PKCS12_SAFEBAG) *bags, const char *password, int depth) {
    int count = crypto.OPENSSL_sk_num((const OPENSSL_STACK *)bags);
    for (int i = 0; i < count; i++) {
        const PKCS12_SAFEBAG *bag = crypto.OPENSSL_sk_value((const OPENSSL_STACK *)bags, i);
        int status = 0;
        switch (crypto.PKCS12_SAFEBAG_get_nid(bag)) {
        case NID_keyBag:
            status = add_key(out, bag, crypto.PKCS12_SAFEBAG_get0_p8inf(bag));
            break;
        case NID_pkcs8ShroudedKeyBag: {
            PKCS8_PRIV_KEY_INFO *info = crypto.PKCS12_decrypt_skey(bag, password, password ? -1 : 0);
            if (info == NULL) return fail(out, 3, "A private key of the PKCS#12 file could not be decrypted: a wrong password or an unsupported encryption.");
            status = add_key(out, bag, info);
            crypto.PKCS8_PRIV_KEY_INFO_free(info);
            break;
        }
        case NID_certBag:
            status = add_certificate(out, bag);
            break;
        case NID_safeContentsBag:
            if (depth == 0) return fail(out, 1, "The PKCS#12 file nests its bags too deeply.");
            status = add_bags(out, crypto.PKCS12_SAFEBAG_get0_safes(bag), password, depth - 1);
            break;
        default:
            break; // CRL and secret bags hold nothing the keychain imports.
        }
        if (status != 0) return status;
    }
    return 0;
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
    // As OpenSSL's PKCS12_parse does: an empty password also opens a file sealed with no password at all.
    if (password != NULL && password[0] == '\0' && (!crypto.PKCS12_mac_present(p12) || crypto.PKCS12_verify_mac(p12, NULL, 0))) {
        password = NULL;
    }
    if (crypto.PKCS12_mac_present(p12) && !crypto.PKCS12_verify_mac(p12, password, password ? -1 : 0)) {
        crypto.PKCS12_free(p12);
        return fail(out, 2, "The PKCS#12 file's integrity check failed: the password is wrong.");
    }
    STACK_OF(PKCS7) *safes = crypto.PKCS12_unpack_authsafes(p12);
    crypto.PKCS12_free(p12);
    if (safes == NULL) return fail(out, 3, "The PKCS#12 file's contents could not be read.");
    int status = 0;
    int count = crypto.OPENSSL_sk_num((const OPENSSL_STACK *)safes);
    for (int i = 0; i < count && status == 0; i++) {
        PKCS7 *safe = crypto.OPENSSL_sk_value((const OPENSSL_STACK *)safes, i);
        STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
        switch (crypto.OBJ_obj2nid(safe->type)) {
        case NID_pkcs7_data:
            bags = crypto.PKCS12_unpack_p7data(safe);
            break;
        case NID_pkcs7_encrypted:
            bags = crypto.PKCS12_unpack_p7encdata(safe, password, password ? -1 : 0);
            break;
        default:
            continue; // Public-key-sealed contents (enveloped data) are not a password-protected file's.
        }
        if (bags == NULL) {
            status = fail(out, 3, "The PKCS#12 file's contents could not be decrypted: a wrong password or an unsupported encryption.");
            break;
        }
        status = add_bags(out, bags, password, 4);
        crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)bags, (OPENSSL_sk_freefunc)crypto.PKCS12_SAFEBAG_free);
    }
    crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)safes, (OPENSSL_sk_freefunc)crypto.PKCS7_free);
    crypto.ERR_clear_error();
    if (status != 0) {
        // Nothing half-read is handed back: the message stays, the buffers go.
        char message[sizeof out->message];
        memcpy(message, out->message, sizeof message);
        ckeychain_pkcs12_free(out);
        out->status = status;
        memcpy(out->message, message, sizeof message);
    }
    return status;
}

void ckeychain_pkcs12_free(ckeychain_pkcs12 *result) {
    // Only a parse that loaded libcrypto leaves buffers to free.
    if (ckeychain_crypto_loaded()) {
        for (int i = 0; i < result->key_count; i++) {
            ckeychain_pkcs12_key *key = &result->keys[i];
            if (key->der != NULL) crypto.CRYPTO_clear_free(key->der, (size_t)key->length, OPENSSL_FILE, OPENSSL_LINE);
            crypto.CRYPTO_free(key->local_key_id, OPENSSL_FILE, OPENSSL_LINE);
            crypto.CRYPTO_free(key->friendly_name, OPENSSL_FILE, OPENSSL_LINE);
        }
        for (int i = 0; i < result->certificate_count; i++) {
            ckeychain_pkcs12_certificate *certificate = &result->certificates[i];
            crypto.CRYPTO_free(certificate->der, OPENSSL_FILE, OPENSSL_LINE);
            crypto.CRYPTO_free(certificate->local_key_id, OPENSSL_FILE, OPENSSL_LINE);
            crypto.CRYPTO_free(certificate->friendly_name, OPENSSL_FILE, OPENSSL_LINE);
        }
    }
    memset(result, 0, sizeof *result);
}

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
