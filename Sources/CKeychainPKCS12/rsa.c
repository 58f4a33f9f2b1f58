#include "CKeychainPKCS12.h"

#include "libcrypto.h"

#include <stdio.h>
#include <string.h>

#define crypto ckeychain_crypto

// Sets the padding, and the digests it uses, on a context for `operation`.
static int configure(EVP_PKEY_CTX *context, int operation, int padding, const EVP_MD *md) {
    if (crypto.EVP_PKEY_CTX_set_rsa_padding(context, padding) <= 0) return 0;
    if (md == NULL) return 1;
    switch (padding) {
    case CKEYCHAIN_RSA_PADDING_OAEP:
        return crypto.EVP_PKEY_CTX_set_rsa_oaep_md(context, md) > 0 && crypto.EVP_PKEY_CTX_set_rsa_mgf1_md(context, md) > 0;
    case CKEYCHAIN_RSA_PADDING_PSS:
        // Apple's PSS: MGF1 with the signature's digest, and a salt as long as the digest.
        return crypto.EVP_PKEY_CTX_set_signature_md(context, md) > 0 && crypto.EVP_PKEY_CTX_set_rsa_mgf1_md(context, md) > 0
            && crypto.EVP_PKEY_CTX_set_rsa_pss_saltlen(context, RSA_PSS_SALTLEN_DIGEST) > 0;
    default:
        return operation == CKEYCHAIN_RSA_ENCRYPT || operation == CKEYCHAIN_RSA_DECRYPT
            || crypto.EVP_PKEY_CTX_set_signature_md(context, md) > 0;
    }
}

int ckeychain_rsa(int operation, int padding, const char *digest, const unsigned char *key, size_t key_length,
                  const unsigned char *input, size_t input_length, const unsigned char *signature, size_t signature_length,
                  unsigned char *out, size_t *out_length, char *error, size_t error_length) {
    if (error != NULL && error_length > 0) error[0] = 0;
    if (!ckeychain_crypto_load()) {
        ckeychain_crypto_unavailable(error, error_length);
        return -1;
    }
    crypto.ERR_clear_error();
    const EVP_MD *md = NULL;
    if (digest != NULL && (md = crypto.EVP_get_digestbyname(digest)) == NULL) {
        ckeychain_crypto_reason(error, error_length, "libcrypto does not know the digest.");
        return -2;
    }
    const unsigned char *cursor = key;
    int private_key = operation == CKEYCHAIN_RSA_SIGN || operation == CKEYCHAIN_RSA_DECRYPT;
    EVP_PKEY *pkey = private_key ? crypto.d2i_AutoPrivateKey(NULL, &cursor, (long)key_length)
                                 : crypto.d2i_PublicKey(EVP_PKEY_RSA, NULL, &cursor, (long)key_length);
    if (pkey == NULL) {
        ckeychain_crypto_reason(error, error_length, "The RSA key does not parse.");
        return -2;
    }
    EVP_PKEY_CTX *context = crypto.EVP_PKEY_CTX_new(pkey, NULL);
    int status = -2, ready = 0;
    if (context != NULL) {
        switch (operation) {
        case CKEYCHAIN_RSA_SIGN: ready = crypto.EVP_PKEY_sign_init(context) > 0; break;
        case CKEYCHAIN_RSA_VERIFY: ready = crypto.EVP_PKEY_verify_init(context) > 0; break;
        case CKEYCHAIN_RSA_RECOVER: ready = crypto.EVP_PKEY_verify_recover_init(context) > 0; break;
        case CKEYCHAIN_RSA_ENCRYPT: ready = crypto.EVP_PKEY_encrypt_init(context) > 0; break;
        case CKEYCHAIN_RSA_DECRYPT: ready = crypto.EVP_PKEY_decrypt_init(context) > 0; break;
        default: break;
        }
    }
    if (!ready || !configure(context, operation, padding, md)) {
        ckeychain_crypto_reason(error, error_length, "The RSA operation could not be set up with this padding and digest.");
    } else {
        int result = 0;
        switch (operation) {
        case CKEYCHAIN_RSA_SIGN: result = crypto.EVP_PKEY_sign(context, out, out_length, input, input_length); break;
        case CKEYCHAIN_RSA_VERIFY: result = crypto.EVP_PKEY_verify(context, signature, signature_length, input, input_length); break;
        case CKEYCHAIN_RSA_RECOVER: result = crypto.EVP_PKEY_verify_recover(context, out, out_length, signature, signature_length); break;
        case CKEYCHAIN_RSA_ENCRYPT: result = crypto.EVP_PKEY_encrypt(context, out, out_length, input, input_length); break;
        case CKEYCHAIN_RSA_DECRYPT: result = crypto.EVP_PKEY_decrypt(context, out, out_length, input, input_length); break;
        default: break;
        }
        if (result > 0) {
            status = 0;
        } else if (operation == CKEYCHAIN_RSA_VERIFY) {
            status = -3;
            ckeychain_crypto_reason(error, error_length, "The signature does not match.");
        } else {
            ckeychain_crypto_reason(error, error_length, "libcrypto refused the input for this key.");
        }
    }
    crypto.EVP_PKEY_CTX_free(context);
    crypto.EVP_PKEY_free(pkey);
    crypto.ERR_clear_error();
    return status;
}

int ckeychain_digest(const char *name, const unsigned char *data, size_t length, unsigned char *out, size_t *out_length,
                     char *error, size_t error_length) {
    if (error != NULL && error_length > 0) error[0] = 0;
    if (!ckeychain_crypto_load()) {
        ckeychain_crypto_unavailable(error, error_length);
        return -1;
    }
    const EVP_MD *md = crypto.EVP_get_digestbyname(name);
    unsigned int size = 0;
    if (md == NULL || crypto.EVP_MD_get_size(md) > EVP_MAX_MD_SIZE || !crypto.EVP_Digest(data, length, out, &size, md, NULL)) {
        ckeychain_crypto_reason(error, error_length, "libcrypto could not compute the digest.");
        return -2;
    }
    *out_length = size;
    return 0;
}
