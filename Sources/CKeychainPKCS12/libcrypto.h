#ifndef CKEYCHAIN_LIBCRYPTO_H
#define CKEYCHAIN_LIBCRYPTO_H

// The system's OpenSSL libcrypto, opened (dlopen) on first use and called through a table of its functions. The
// headers still give every function's type, so a call through the table is checked as a direct call would be.
// Internal to this target: PKCS#12 files, RSA operations, digests, and the Secret Service Diffie-Hellman exchange.

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stddef.h>

#define CKEYCHAIN_CRYPTO_FUNCTIONS(F) \
    F(OSSL_PROVIDER_load) F(ERR_peek_last_error) F(ERR_error_string_n) F(ERR_clear_error) \
    F(d2i_PKCS12) F(PKCS12_free) F(PKCS12_mac_present) F(PKCS12_verify_mac) \
    F(PKCS12_unpack_authsafes) F(PKCS12_unpack_p7data) F(PKCS12_unpack_p7encdata) F(PKCS12_SAFEBAG_get_nid) \
    F(PKCS12_SAFEBAG_get_bag_nid) F(PKCS12_SAFEBAG_get0_p8inf) F(PKCS12_SAFEBAG_get0_safes) F(PKCS12_SAFEBAG_get0_attr) \
    F(PKCS12_SAFEBAG_get1_cert) F(PKCS12_decrypt_skey) F(PKCS12_get_friendlyname) F(EVP_PKCS82PKEY) \
    F(PKCS8_PRIV_KEY_INFO_free) F(OBJ_obj2nid) F(OBJ_nid2sn) F(ASN1_STRING_get0_data) F(ASN1_STRING_length) \
    F(EVP_PKEY_get_base_id) F(EVP_PKEY_free) F(i2d_PrivateKey) F(i2d_X509) F(X509_free) \
    F(OPENSSL_sk_num) F(OPENSSL_sk_value) F(OPENSSL_sk_pop_free) F(CRYPTO_zalloc) F(CRYPTO_free) F(CRYPTO_clear_free) \
    F(BN_CTX_new) F(BN_CTX_free) F(BN_new) F(BN_bin2bn) F(BN_bn2binpad) F(BN_is_odd) F(BN_set_flags) \
    F(BN_mod_exp_mont_consttime) F(BN_clear_free) \
    F(d2i_AutoPrivateKey) F(d2i_PublicKey) F(d2i_X509) F(X509_check_private_key) F(X509_digest) \
    F(PKCS12_add_cert) F(PKCS12_add_key) F(PKCS12_add_friendlyname_utf8) F(PKCS12_add_localkeyid) \
    F(PKCS12_add_safe) F(PKCS12_add_safes) F(PKCS12_set_mac) F(i2d_PKCS12) F(PKCS12_SAFEBAG_free) F(PKCS7_free) \
    F(EVP_get_digestbyname) F(EVP_Digest) F(EVP_MD_get_size) \
    F(EVP_PKEY_CTX_new) F(EVP_PKEY_CTX_free) F(EVP_PKEY_get_size) \
    F(EVP_PKEY_sign_init) F(EVP_PKEY_sign) F(EVP_PKEY_verify_init) F(EVP_PKEY_verify) \
    F(EVP_PKEY_verify_recover_init) F(EVP_PKEY_verify_recover) \
    F(EVP_PKEY_encrypt_init) F(EVP_PKEY_encrypt) F(EVP_PKEY_decrypt_init) F(EVP_PKEY_decrypt) \
    F(EVP_PKEY_CTX_set_rsa_padding) F(EVP_PKEY_CTX_set_signature_md) F(EVP_PKEY_CTX_set_rsa_pss_saltlen) \
    F(EVP_PKEY_CTX_set_rsa_mgf1_md) F(EVP_PKEY_CTX_set_rsa_oaep_md)

/// libcrypto's functions, filled in by `ckeychain_crypto_load`.
struct ckeychain_crypto_table {
#define CKEYCHAIN_CRYPTO_MEMBER(name) __typeof__(&name) name;
    CKEYCHAIN_CRYPTO_FUNCTIONS(CKEYCHAIN_CRYPTO_MEMBER)
#undef CKEYCHAIN_CRYPTO_MEMBER
};

__attribute__((visibility("hidden"))) extern struct ckeychain_crypto_table ckeychain_crypto;

/// Opens libcrypto once (later calls return at once); 1 when its functions are ready, else 0.
__attribute__((visibility("hidden"))) int ckeychain_crypto_load(void);

/// Whether libcrypto was opened (without trying to open it).
__attribute__((visibility("hidden"))) int ckeychain_crypto_loaded(void);

/// Writes why libcrypto could not be opened, and what to install, to `error` (NUL-terminated).
__attribute__((visibility("hidden"))) void ckeychain_crypto_unavailable(char *error, size_t error_length);

/// Writes `what` and OpenSSL's last reason (when it left one) to `error`, and clears OpenSSL's error queue.
__attribute__((visibility("hidden"))) void ckeychain_crypto_reason(char *error, size_t error_length, const char *what);

#endif
