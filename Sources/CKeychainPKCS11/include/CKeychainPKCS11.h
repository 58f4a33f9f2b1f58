#ifndef CKEYCHAIN_PKCS11_H
#define CKEYCHAIN_PKCS11_H

// PKCS#11 tokens (smart cards, YubiKeys, SoftHSM) through p11-kit's module registry: the modules configured in
// /usr/share/p11-kit/modules and /etc/pkcs11/modules, loaded and initialised by p11-kit (libp11-kit.so.0, opened
// with dlopen on the first call). This header does not include pkcs11.h: CK_RV, CK_SLOT_ID and the like travel as
// uint64_t.
//
// Threads: every function below takes one process-wide mutex for its whole run, so calls from any thread run one
// at a time. Each call that touches a token opens its own session and closes it before returning (logging in
// first when given a PIN and out again after), so no session, login state or operation outlives a call, and one
// call's login never serves another's operation.
//
// Bounds: every size a module reports is checked before it is used; attributes longer than the bounds below are
// treated as absent, and results longer than the caller's buffer fail with CKEYCHAIN_PKCS11_INVALID_ARGUMENT.
// Messages never contain a PIN, key material or a result.

#include <stddef.h>
#include <stdint.h>

/// The longest CKA_ID read or accepted, in bytes.
#define CKEYCHAIN_PKCS11_MAX_ID 255
/// The longest CKA_LABEL read or accepted, in bytes.
#define CKEYCHAIN_PKCS11_MAX_LABEL 255
/// The longest PIN accepted, in bytes.
#define CKEYCHAIN_PKCS11_MAX_PIN 255
/// The largest certificate (CKA_VALUE) read, in bytes.
#define CKEYCHAIN_PKCS11_MAX_CERTIFICATE (256 * 1024)
/// The largest key part read (CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_EC_PARAMS, CKA_EC_POINT), in bytes.
#define CKEYCHAIN_PKCS11_MAX_KEY_PART 1024
/// The largest input to sign or decrypt, and the largest signature, plaintext or shared secret, in bytes
/// (an RSA-8192 block).
#define CKEYCHAIN_PKCS11_MAX_DATA 1024
/// The most objects of one class listed from one token.
#define CKEYCHAIN_PKCS11_MAX_OBJECTS 1024
/// Room for a module's name (with its NUL).
#define CKEYCHAIN_PKCS11_NAME_SIZE 128

/// What a call's result says happened.
typedef enum {
    /// Success.
    CKEYCHAIN_PKCS11_OK = 0,
    /// libp11-kit.so.0 could not be opened, or p11-kit could not load its registry (a critical module failed).
    CKEYCHAIN_PKCS11_UNAVAILABLE = 1,
    /// No token with that module, serial and label is present (or it was removed during the call).
    CKEYCHAIN_PKCS11_TOKEN_NOT_FOUND = 2,
    /// No key with that CKA_ID on the token (private keys usually appear only after login).
    CKEYCHAIN_PKCS11_OBJECT_NOT_FOUND = 3,
    /// CKR_PIN_INCORRECT (also CKR_PIN_INVALID and CKR_PIN_LEN_RANGE: a PIN the token cannot accept).
    CKEYCHAIN_PKCS11_PIN_INCORRECT = 4,
    /// CKR_PIN_LOCKED: too many wrong PINs; the token needs its SO PIN or PUK.
    CKEYCHAIN_PKCS11_PIN_LOCKED = 5,
    /// CKR_USER_NOT_LOGGED_IN: the operation needs the PIN and none was given (also: no private key with the
    /// CKA_ID is visible without login on a token with CKF_LOGIN_REQUIRED).
    CKEYCHAIN_PKCS11_NOT_LOGGED_IN = 6,
    /// A bad argument: an input over its bound, a result larger than the buffer, input the token rejects as
    /// malformed (CKR_DATA_INVALID, CKR_ENCRYPTED_DATA_INVALID, …).
    CKEYCHAIN_PKCS11_INVALID_ARGUMENT = 7,
    /// The token or key does not do this (CKR_MECHANISM_INVALID, CKR_KEY_TYPE_INCONSISTENT,
    /// CKR_KEY_FUNCTION_NOT_PERMITTED, CKR_FUNCTION_NOT_SUPPORTED, …).
    CKEYCHAIN_PKCS11_UNSUPPORTED = 8,
    /// A key with that CKA_ID already exists (generating a key pair).
    CKEYCHAIN_PKCS11_DUPLICATE = 9,
    /// The person cancelled on the reader's PIN pad (CKR_FUNCTION_CANCELED).
    CKEYCHAIN_PKCS11_CANCELED = 10,
    /// Any other failure; `rv` says which.
    CKEYCHAIN_PKCS11_FAILED = 11,
} ckeychain_pkcs11_status;

/// The outcome of a call.
typedef struct {
    /// A ckeychain_pkcs11_status.
    int status;
    /// The CK_RV of the failing PKCS#11 call (0, CKR_OK, when none).
    uint64_t rv;
    /// The failing step and the CK_RV's name, e.g. "C_Login: CKR_PIN_INCORRECT (0xa0)". Never a PIN or a secret.
    char message[256];
} ckeychain_pkcs11_result;

/// The loaded registry: the usable modules, initialised.
typedef struct ckeychain_pkcs11_registry ckeychain_pkcs11_registry;

/// Loads p11-kit's configured modules (p11_kit_modules_load: in managed mode, so they are shared safely with any
/// other p11-kit user in the process), drops those that are trust stores (`trust-policy: yes`, p11-kit-trust),
/// and initialises the rest (p11_kit_modules_initialize); a module that fails to initialise (gnome-keyring's
/// without its daemon) is skipped, not fatal. SoftHSM reads SOFTHSM2_CONF in its C_Initialize, the first time
/// any registry in the process initialises it. On success `*registry` is set; free it with ckeychain_pkcs11_close.
ckeychain_pkcs11_result ckeychain_pkcs11_open(ckeychain_pkcs11_registry **registry);

/// Finalises the registry's modules (p11-kit finalises a module when its last user does) and frees it. NULL is
/// allowed.
void ckeychain_pkcs11_close(ckeychain_pkcs11_registry *registry);

/// A module's state in the registry.
typedef enum {
    /// Initialised: its tokens are listed.
    CKEYCHAIN_PKCS11_MODULE_USABLE = 0,
    /// A trust store (p11-kit-trust): not a token module, never initialised.
    CKEYCHAIN_PKCS11_MODULE_TRUST_STORE = 1,
    /// Its C_Initialize failed; skipped.
    CKEYCHAIN_PKCS11_MODULE_FAILED = 2,
} ckeychain_pkcs11_module_state;

/// Calls `callback` with each module p11-kit loaded: its name (p11_kit_module_get_name: the config file's name,
/// e.g. "softhsm2", "opensc-pkcs11") and its ckeychain_pkcs11_module_state.
void ckeychain_pkcs11_modules(ckeychain_pkcs11_registry *registry,
                              void (*callback)(void *context, const char *name, int state), void *context);

/// Token flags (ckeychain_pkcs11_token.flags), decoded from CK_TOKEN_INFO.flags.
enum {
    /// CKF_LOGIN_REQUIRED: operations on private keys need the PIN.
    CKEYCHAIN_PKCS11_TOKEN_LOGIN_REQUIRED = 1 << 0,
    /// CKF_PROTECTED_AUTHENTICATION_PATH: the PIN is entered on the reader (pass an empty PIN).
    CKEYCHAIN_PKCS11_TOKEN_PROTECTED_AUTHENTICATION_PATH = 1 << 1,
    /// CKF_WRITE_PROTECTED: no objects can be created (no key generation).
    CKEYCHAIN_PKCS11_TOKEN_WRITE_PROTECTED = 1 << 2,
    /// CKF_TOKEN_INITIALIZED.
    CKEYCHAIN_PKCS11_TOKEN_INITIALIZED = 1 << 3,
    /// CKF_USER_PIN_INITIALIZED.
    CKEYCHAIN_PKCS11_TOKEN_USER_PIN_INITIALIZED = 1 << 4,
    /// CKF_USER_PIN_COUNT_LOW: a wrong PIN was entered since the last right one.
    CKEYCHAIN_PKCS11_TOKEN_USER_PIN_COUNT_LOW = 1 << 5,
    /// CKF_USER_PIN_FINAL_TRY: one more wrong PIN locks it.
    CKEYCHAIN_PKCS11_TOKEN_USER_PIN_FINAL_TRY = 1 << 6,
    /// CKF_USER_PIN_LOCKED.
    CKEYCHAIN_PKCS11_TOKEN_USER_PIN_LOCKED = 1 << 7,
};

/// A token present in a slot. Strings are NUL-terminated, with CK_TOKEN_INFO's blank padding removed.
typedef struct {
    /// The module's name (see ckeychain_pkcs11_modules).
    char module[CKEYCHAIN_PKCS11_NAME_SIZE];
    /// The CK_SLOT_ID (may change when readers come and go; tokens are found again by module and serial).
    uint64_t slot;
    char label[33];
    char manufacturer[33];
    char model[17];
    char serial[17];
    /// CKEYCHAIN_PKCS11_TOKEN_… bits.
    uint32_t flags;
} ckeychain_pkcs11_token;

/// Calls `callback` with each token present in a slot of a usable module. A module whose slots cannot be listed
/// is passed over.
ckeychain_pkcs11_result ckeychain_pkcs11_tokens(ckeychain_pkcs11_registry *registry,
                                                void (*callback)(void *context, const ckeychain_pkcs11_token *token),
                                                void *context);

/// Which token, and the PIN to log in with.
typedef struct {
    /// The module's name, as listed.
    const char *module;
    /// The token's serial, as listed (empty when the token has none).
    const char *serial;
    /// The token's label, as listed, or NULL not to compare labels.
    const char *label;
    /// The user PIN (CKU_USER), `pin_size` bytes, or NULL not to log in. An empty PIN logs in through the reader's
    /// PIN pad (C_Login with no PIN), for tokens with CKEYCHAIN_PKCS11_TOKEN_PROTECTED_AUTHENTICATION_PATH.
    const uint8_t *pin;
    size_t pin_size;
} ckeychain_pkcs11_token_ref;

/// An object's class.
typedef enum {
    CKEYCHAIN_PKCS11_CERTIFICATE = 1,
    CKEYCHAIN_PKCS11_PRIVATE_KEY = 2,
    CKEYCHAIN_PKCS11_PUBLIC_KEY = 3,
} ckeychain_pkcs11_object_class;

/// A key's type.
typedef enum {
    /// Any type but the two below (raw_key_type says which).
    CKEYCHAIN_PKCS11_KEY_OTHER = 0,
    CKEYCHAIN_PKCS11_KEY_RSA = 1,
    CKEYCHAIN_PKCS11_KEY_EC = 2,
} ckeychain_pkcs11_key_type;

/// Key flags (ckeychain_pkcs11_object.key_flags): the CK_BBOOL attributes that are true.
enum {
    CKEYCHAIN_PKCS11_KEY_SIGN = 1 << 0,
    CKEYCHAIN_PKCS11_KEY_DECRYPT = 1 << 1,
    CKEYCHAIN_PKCS11_KEY_DERIVE = 1 << 2,
    CKEYCHAIN_PKCS11_KEY_UNWRAP = 1 << 3,
    CKEYCHAIN_PKCS11_KEY_VERIFY = 1 << 4,
    CKEYCHAIN_PKCS11_KEY_ENCRYPT = 1 << 5,
    CKEYCHAIN_PKCS11_KEY_WRAP = 1 << 6,
    /// CKA_PRIVATE: visible only after login.
    CKEYCHAIN_PKCS11_KEY_PRIVATE = 1 << 7,
    /// CKA_ALWAYS_AUTHENTICATE: every use needs the PIN again (CKU_CONTEXT_SPECIFIC; done by the calls below).
    CKEYCHAIN_PKCS11_KEY_ALWAYS_AUTHENTICATE = 1 << 8,
    /// CKA_SENSITIVE.
    CKEYCHAIN_PKCS11_KEY_SENSITIVE = 1 << 9,
    /// CKA_EXTRACTABLE.
    CKEYCHAIN_PKCS11_KEY_EXTRACTABLE = 1 << 10,
};

/// An object as listed. Pointers are valid only during the callback; an absent attribute has a NULL pointer and
/// size 0 (an empty one a non-NULL pointer and size 0).
typedef struct {
    /// A ckeychain_pkcs11_object_class.
    int object_class;
    /// CKA_ID.
    const uint8_t *id;
    size_t id_size;
    /// CKA_LABEL (UTF-8 by the standard; not NUL-terminated).
    const uint8_t *label;
    size_t label_size;
    /// Certificates (X.509 only): CKA_VALUE, the DER certificate.
    const uint8_t *certificate;
    size_t certificate_size;
    /// Keys: a ckeychain_pkcs11_key_type, and CKA_KEY_TYPE itself.
    int key_type;
    uint64_t raw_key_type;
    /// Keys: CKEYCHAIN_PKCS11_KEY_… bits.
    uint32_t key_flags;
    /// RSA keys: CKA_MODULUS and CKA_PUBLIC_EXPONENT, big-endian (private keys: when the token shows them).
    const uint8_t *modulus;
    size_t modulus_size;
    const uint8_t *public_exponent;
    size_t public_exponent_size;
    /// EC keys: CKA_EC_PARAMS (DER, usually the curve's OID) and, public keys, CKA_EC_POINT as the token gives it
    /// (usually a DER OCTET STRING around 04‖X‖Y, sometimes 04‖X‖Y itself).
    const uint8_t *ec_params;
    size_t ec_params_size;
    const uint8_t *ec_point;
    size_t ec_point_size;
} ckeychain_pkcs11_object;

/// Calls `callback` with each X.509 certificate, private key and public key on the token (after logging in when
/// `token->pin` is set: then CKA_PRIVATE objects appear too).
ckeychain_pkcs11_result ckeychain_pkcs11_objects(ckeychain_pkcs11_registry *registry,
                                                 const ckeychain_pkcs11_token_ref *token,
                                                 void (*callback)(void *context, const ckeychain_pkcs11_object *object),
                                                 void *context);

/// Logs in with `token->pin` (which must be set) and out again: checks the PIN.
ckeychain_pkcs11_result ckeychain_pkcs11_login(ckeychain_pkcs11_registry *registry,
                                               const ckeychain_pkcs11_token_ref *token);

/// A mechanism for ckeychain_pkcs11_sign and ckeychain_pkcs11_decrypt.
typedef enum {
    /// CKM_RSA_PKCS. Sign: the input is what gets PKCS#1 v1.5 padding, normally a DigestInfo the caller builds.
    /// Decrypt: PKCS#1 v1.5 encryption padding.
    CKEYCHAIN_PKCS11_RSA_PKCS = 1,
    /// CKM_RSA_PKCS_PSS (sign): the input is the digest; `hash` names its hash (and MGF1's), `salt_size` the salt.
    CKEYCHAIN_PKCS11_RSA_PKCS_PSS = 2,
    /// CKM_ECDSA (sign): the input is the digest; the signature is r‖s, each as long as the curve's order.
    CKEYCHAIN_PKCS11_ECDSA = 3,
    /// CKM_RSA_PKCS_OAEP (decrypt): `hash` names the hash and MGF1's; no label. Tokens differ in the hashes they
    /// take: SoftHSM 2.6 only SHA-1 (others: CKEYCHAIN_PKCS11_UNSUPPORTED).
    CKEYCHAIN_PKCS11_RSA_PKCS_OAEP = 4,
    /// CKM_RSA_X_509: raw RSA, no padding (sign and decrypt).
    CKEYCHAIN_PKCS11_RSA_X_509 = 5,
} ckeychain_pkcs11_mechanism_type;

/// A hash for PSS and OAEP.
typedef enum {
    CKEYCHAIN_PKCS11_SHA1 = 1,
    CKEYCHAIN_PKCS11_SHA224 = 2,
    CKEYCHAIN_PKCS11_SHA256 = 3,
    CKEYCHAIN_PKCS11_SHA384 = 4,
    CKEYCHAIN_PKCS11_SHA512 = 5,
} ckeychain_pkcs11_hash;

/// A mechanism and its parameters.
typedef struct {
    /// A ckeychain_pkcs11_mechanism_type.
    int type;
    /// PSS and OAEP: a ckeychain_pkcs11_hash.
    int hash;
    /// PSS: the salt's length in bytes.
    size_t salt_size;
} ckeychain_pkcs11_mechanism;

/// Signs `input` (at most CKEYCHAIN_PKCS11_MAX_DATA bytes) with the private key whose CKA_ID is `key_id`, writing
/// the signature into `output` (`output_capacity` bytes) and its size into `*output_size`.
ckeychain_pkcs11_result ckeychain_pkcs11_sign(ckeychain_pkcs11_registry *registry,
                                              const ckeychain_pkcs11_token_ref *token,
                                              const uint8_t *key_id, size_t key_id_size,
                                              const ckeychain_pkcs11_mechanism *mechanism,
                                              const uint8_t *input, size_t input_size,
                                              uint8_t *output, size_t output_capacity, size_t *output_size);

/// Decrypts `input` with the private key whose CKA_ID is `key_id` (CKEYCHAIN_PKCS11_RSA_PKCS, _RSA_PKCS_OAEP or
/// _RSA_X_509), as ckeychain_pkcs11_sign writes its output.
ckeychain_pkcs11_result ckeychain_pkcs11_decrypt(ckeychain_pkcs11_registry *registry,
                                                 const ckeychain_pkcs11_token_ref *token,
                                                 const uint8_t *key_id, size_t key_id_size,
                                                 const ckeychain_pkcs11_mechanism *mechanism,
                                                 const uint8_t *input, size_t input_size,
                                                 uint8_t *output, size_t output_capacity, size_t *output_size);

/// ECDH (CKM_ECDH1_DERIVE, CKD_NULL, no shared data) between the EC private key whose CKA_ID is `key_id` and the
/// other party's public point `peer_point` (04‖X‖Y): the shared secret, the X coordinate of the product, is
/// read from CKA_VALUE of a derived generic-secret session key made with CKA_SENSITIVE false and CKA_EXTRACTABLE
/// true, then destroyed. A token that refuses such a key fails with its CK_RV (UNSUPPORTED or FAILED).
ckeychain_pkcs11_result ckeychain_pkcs11_derive_ecdh(ckeychain_pkcs11_registry *registry,
                                                     const ckeychain_pkcs11_token_ref *token,
                                                     const uint8_t *key_id, size_t key_id_size,
                                                     const uint8_t *peer_point, size_t peer_point_size,
                                                     uint8_t *output, size_t output_capacity, size_t *output_size);

/// What key pair to generate.
typedef struct {
    /// CKEYCHAIN_PKCS11_KEY_RSA or CKEYCHAIN_PKCS11_KEY_EC.
    int key_type;
    /// RSA: the modulus size (1024 to 8192 bits, public exponent 65537). EC: 256, 384 or 521 (P-256, P-384,
    /// P-521).
    size_t bits;
    /// CKA_LABEL of both keys (UTF-8, at most CKEYCHAIN_PKCS11_MAX_LABEL bytes).
    const uint8_t *label;
    size_t label_size;
    /// CKA_ID of both keys (1 to CKEYCHAIN_PKCS11_MAX_ID bytes); no private key on the token may have it yet.
    const uint8_t *id;
    size_t id_size;
} ckeychain_pkcs11_key_spec;

/// Generates a key pair on the token (CKM_RSA_PKCS_KEY_PAIR_GEN or CKM_EC_KEY_PAIR_GEN; the token must be logged
/// into: `token->pin` must be set). The private key is CKA_PRIVATE, CKA_SENSITIVE and not CKA_EXTRACTABLE, and
/// signs and decrypts (RSA) or signs and derives (EC); the public key verifies (and encrypts, RSA). Calls
/// `callback` with the new private key, then the new public key, read back from the token.
ckeychain_pkcs11_result ckeychain_pkcs11_generate_key_pair(ckeychain_pkcs11_registry *registry,
                                                           const ckeychain_pkcs11_token_ref *token,
                                                           const ckeychain_pkcs11_key_spec *spec,
                                                           void (*callback)(void *context, const ckeychain_pkcs11_object *object),
                                                           void *context);

#endif
