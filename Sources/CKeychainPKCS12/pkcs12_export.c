#include "CKeychainPKCS12.h"

#include "libcrypto.h"

#include <stdio.h>

#define crypto ckeychain_crypto

/// Iterations of PBKDF2 (keys and certificates) and of the MAC key derivation: OpenSSL's PKCS12_DEFAULT_ITER.
enum { pkcs12_iterations = 2048 };

// Adds the identity's certificate to `certificate_bags` and its key to `key_bags`, both with the friendly name and
// the local key ID (the certificate's SHA-1) that pair them.
static int add_identity(const ckeychain_pkcs12_identity *identity, const char *password, const EVP_MD *sha1,
                        STACK_OF(PKCS12_SAFEBAG) **certificate_bags, STACK_OF(PKCS12_SAFEBAG) **key_bags,
                        char *error, size_t error_length) {
    const unsigned char *cursor = identity->certificate;
    X509 *certificate = crypto.d2i_X509(NULL, &cursor, (long)identity->certificate_length);
    cursor = identity->key;
    EVP_PKEY *key = crypto.d2i_AutoPrivateKey(NULL, &cursor, (long)identity->key_length);
    int status = -2;
    unsigned char key_id[EVP_MAX_MD_SIZE];
    unsigned int key_id_length = 0;
    PKCS12_SAFEBAG *bag;
    if (certificate == NULL) {
        ckeychain_crypto_reason(error, error_length, "An identity's certificate does not parse.");
    } else if (key == NULL) {
        ckeychain_crypto_reason(error, error_length, "An identity's private key does not parse.");
    } else if (!crypto.X509_check_private_key(certificate, key)) {
        ckeychain_crypto_reason(error, error_length, "An identity's private key is not its certificate's.");
    } else if (!crypto.X509_digest(certificate, sha1, key_id, &key_id_length)) {
        ckeychain_crypto_reason(error, error_length, "The certificate's SHA-1 could not be computed.");
    } else if ((bag = crypto.PKCS12_add_cert(certificate_bags, certificate)) == NULL
               || (identity->friendly_name != NULL && !crypto.PKCS12_add_friendlyname_utf8(bag, identity->friendly_name, -1))
               || !crypto.PKCS12_add_localkeyid(bag, key_id, (int)key_id_length)) {
        status = -3;
        ckeychain_crypto_reason(error, error_length, "The certificate could not be added to the PKCS#12 file.");
    } else if ((bag = crypto.PKCS12_add_key(key_bags, key, 0, pkcs12_iterations, NID_aes_256_cbc, password)) == NULL
               || (identity->friendly_name != NULL && !crypto.PKCS12_add_friendlyname_utf8(bag, identity->friendly_name, -1))
               || !crypto.PKCS12_add_localkeyid(bag, key_id, (int)key_id_length)) {
        status = -3;
        ckeychain_crypto_reason(error, error_length, "The private key could not be added to the PKCS#12 file.");
    } else {
        status = 0;
    }
    crypto.EVP_PKEY_free(key);
    crypto.X509_free(certificate);
    return status;
}

int ckeychain_pkcs12_create(const ckeychain_pkcs12_identity *identities, int identity_count,
                            const unsigned char *const *certificates, const size_t *certificate_lengths, int certificate_count,
                            const char *password, unsigned char **out, size_t *out_length, char *error, size_t error_length) {
    *out = NULL;
    *out_length = 0;
    if (error != NULL && error_length > 0) error[0] = 0;
    if (!ckeychain_crypto_load()) {
        ckeychain_crypto_unavailable(error, error_length);
        return -1;
    }
    crypto.ERR_clear_error();
    const EVP_MD *sha1 = crypto.EVP_get_digestbyname("SHA1");
    const EVP_MD *sha256 = crypto.EVP_get_digestbyname("SHA256");
    if (sha1 == NULL || sha256 == NULL) {
        ckeychain_crypto_reason(error, error_length, "libcrypto has no SHA-1 or SHA-256.");
        return -3;
    }
    STACK_OF(PKCS12_SAFEBAG) *certificate_bags = NULL, *key_bags = NULL;
    STACK_OF(PKCS7) *safes = NULL;
    PKCS12 *p12 = NULL;
    int status = 0;
    for (int i = 0; i < identity_count && status == 0; i++) {
        status = add_identity(&identities[i], password, sha1, &certificate_bags, &key_bags, error, error_length);
    }
    for (int i = 0; i < certificate_count && status == 0; i++) {
        const unsigned char *cursor = certificates[i];
        X509 *certificate = crypto.d2i_X509(NULL, &cursor, (long)certificate_lengths[i]);
        if (certificate == NULL) {
            status = -2;
            ckeychain_crypto_reason(error, error_length, "A chain certificate does not parse.");
        } else if (crypto.PKCS12_add_cert(&certificate_bags, certificate) == NULL) {
            status = -3;
            ckeychain_crypto_reason(error, error_length, "A chain certificate could not be added to the PKCS#12 file.");
        }
        crypto.X509_free(certificate);
    }
    if (status == 0) {
        // Certificates in an encrypted safe; keys, already shrouded, in a plain one (as PKCS12_create does).
        if ((certificate_bags != NULL && !crypto.PKCS12_add_safe(&safes, certificate_bags, NID_aes_256_cbc, pkcs12_iterations, password))
            || (key_bags != NULL && !crypto.PKCS12_add_safe(&safes, key_bags, -1, 0, NULL))
            || (p12 = crypto.PKCS12_add_safes(safes, 0)) == NULL
            || !crypto.PKCS12_set_mac(p12, password, -1, NULL, 0, pkcs12_iterations, sha256)) {
            status = -3;
            ckeychain_crypto_reason(error, error_length, "The PKCS#12 file could not be assembled.");
        } else {
            int length = crypto.i2d_PKCS12(p12, out);
            if (length <= 0) {
                *out = NULL;
                status = -3;
                ckeychain_crypto_reason(error, error_length, "The PKCS#12 file could not be encoded.");
            } else {
                *out_length = (size_t)length;
            }
        }
    }
    crypto.PKCS12_free(p12);
    crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)safes, (OPENSSL_sk_freefunc)crypto.PKCS7_free);
    crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)key_bags, (OPENSSL_sk_freefunc)crypto.PKCS12_SAFEBAG_free);
    crypto.OPENSSL_sk_pop_free((OPENSSL_STACK *)certificate_bags, (OPENSSL_sk_freefunc)crypto.PKCS12_SAFEBAG_free);
    crypto.ERR_clear_error();
    return status;
}

void ckeychain_crypto_buffer_free(unsigned char *buffer, size_t length) {
    if (buffer != NULL && ckeychain_crypto_loaded()) crypto.CRYPTO_clear_free(buffer, length, OPENSSL_FILE, OPENSSL_LINE);
}
