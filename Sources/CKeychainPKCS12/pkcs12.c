#include "CKeychainPKCS12.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t providers_once = PTHREAD_ONCE_INIT;

// RC2 (legacy PKCS#12 files) lives in OpenSSL 3's legacy provider; loading it also requires loading the default one.
static void load_providers(void) {
    OSSL_PROVIDER_load(NULL, "legacy");
    OSSL_PROVIDER_load(NULL, "default");
}

static int fail(ckeychain_pkcs12 *out, int status, const char *what) {
    out->status = status;
    unsigned long code = ERR_peek_last_error();
    if (code != 0) {
        char reason[200];
        ERR_error_string_n(code, reason, sizeof reason);
        snprintf(out->message, sizeof out->message, "%s (%s)", what, reason);
    } else {
        snprintf(out->message, sizeof out->message, "%s", what);
    }
    ERR_clear_error();
    return status;
}

int ckeychain_pkcs12_parse(const unsigned char *data, long length, const char *password, ckeychain_pkcs12 *out) {
    memset(out, 0, sizeof *out);
    pthread_once(&providers_once, load_providers);
    ERR_clear_error();
    const unsigned char *cursor = data;
    PKCS12 *p12 = d2i_PKCS12(NULL, &cursor, length);
    if (p12 == NULL || cursor != data + length) {
        PKCS12_free(p12);
        return fail(out, 1, "The data is not a PKCS#12 file, or it is truncated.");
    }
    if (PKCS12_mac_present(p12) && !PKCS12_verify_mac(p12, password, -1)) {
        PKCS12_free(p12);
        return fail(out, 2, "The PKCS#12 file's integrity check failed: the password is wrong.");
    }
    EVP_PKEY *key = NULL;
    X509 *certificate = NULL;
    STACK_OF(X509) *chain = NULL;
    if (!PKCS12_parse(p12, password, &key, &certificate, &chain)) {
        PKCS12_free(p12);
        return fail(out, 3, "The PKCS#12 file's contents could not be decrypted: a wrong password or an unsupported encryption.");
    }
    PKCS12_free(p12);
    if (key != NULL) {
        int id = EVP_PKEY_get_base_id(key);
        out->key_type = id == EVP_PKEY_RSA ? 1 : (id == EVP_PKEY_EC ? 2 : 0);
        if (out->key_type != 0) {
            out->key_length = i2d_PrivateKey(key, &out->key);
            if (out->key_length <= 0) { out->key = NULL; out->key_length = 0; out->key_type = 0; }
        }
        EVP_PKEY_free(key);
    }
    if (certificate != NULL) {
        out->certificate_length = i2d_X509(certificate, &out->certificate);
        if (out->certificate_length <= 0) { out->certificate = NULL; out->certificate_length = 0; }
        int alias_length = 0;
        unsigned char *alias = X509_alias_get0(certificate, &alias_length);
        if (alias != NULL && alias_length > 0) {
            out->friendly_name = OPENSSL_zalloc((size_t)alias_length + 1);
            if (out->friendly_name != NULL) memcpy(out->friendly_name, alias, (size_t)alias_length);
        }
        X509_free(certificate);
    }
    if (chain != NULL) {
        int count = sk_X509_num(chain);
        for (int i = 0; i < count && out->chain_count < CKEYCHAIN_PKCS12_MAX_CHAIN; i++) {
            unsigned char *der = NULL;
            long der_length = i2d_X509(sk_X509_value(chain, i), &der);
            if (der_length > 0) {
                out->chain[out->chain_count] = der;
                out->chain_length[out->chain_count] = der_length;
                out->chain_count++;
            }
        }
        sk_X509_pop_free(chain, X509_free);
    }
    ERR_clear_error();
    return 0;
}

void ckeychain_pkcs12_free(ckeychain_pkcs12 *result) {
    if (result->key != NULL) OPENSSL_clear_free(result->key, (size_t)result->key_length);
    OPENSSL_free(result->certificate);
    for (int i = 0; i < result->chain_count; i++) OPENSSL_free(result->chain[i]);
    OPENSSL_free(result->friendly_name);
    memset(result, 0, sizeof *result);
}
