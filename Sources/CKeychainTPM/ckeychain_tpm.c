// Sealing a small secret to a TPM 2.0 with tpm2-tss (ESAPI + the TCTI loader). The primary key is re-created
// on every call from the owner hierarchy's seed with a fixed template, so nothing but the sealed object's two
// blobs needs storing; another TPM has another seed, derives another primary key, and cannot load the blobs.
// The same primary key (same template, same seed) is the parent of the P-256 keys that never leave the TPM
// (ckeychain_tpm_key_*), through a context that keeps it loaded between calls.
#include "CKeychainTPM.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

// tpm2-tss is opened on the first TPM call, not when the program starts: loading and relocating its four libraries
// (and the libcrypto they bring) took about a tenth of every tool's start, and only a keychain sealed to a TPM uses
// them. The headers still give every function's type, so a call through the table is checked as a direct call is.
#define CKEYCHAIN_TSS_LIBRARIES(L) \
    L(esys, "libtss2-esys.so.0") L(tctildr, "libtss2-tctildr.so.0") L(mu, "libtss2-mu.so.0") L(rc, "libtss2-rc.so.0")
#define CKEYCHAIN_TSS_FUNCTIONS(F) \
    F(esys, Esys_Initialize) F(esys, Esys_Finalize) F(esys, Esys_Startup) F(esys, Esys_CreatePrimary) \
    F(esys, Esys_Create) F(esys, Esys_Load) F(esys, Esys_Unseal) F(esys, Esys_FlushContext) F(esys, Esys_Free) \
    F(esys, Esys_Sign) F(esys, Esys_ECDH_ZGen) \
    F(tctildr, Tss2_TctiLdr_Initialize) F(tctildr, Tss2_TctiLdr_Finalize) \
    F(mu, Tss2_MU_TPM2B_PUBLIC_Marshal) F(mu, Tss2_MU_TPM2B_PUBLIC_Unmarshal) \
    F(mu, Tss2_MU_TPM2B_PRIVATE_Marshal) F(mu, Tss2_MU_TPM2B_PRIVATE_Unmarshal) \
    F(rc, Tss2_RC_Decode)

static struct {
#define CKEYCHAIN_TSS_MEMBER(library, name) __typeof__(&name) name;
    CKEYCHAIN_TSS_FUNCTIONS(CKEYCHAIN_TSS_MEMBER)
#undef CKEYCHAIN_TSS_MEMBER
} tss;

static pthread_once_t tss_once = PTHREAD_ONCE_INIT;
static int tss_loaded;
static char tss_failure[200];

// Opens the four libraries (searched for as the dynamic linker would at start: LD_LIBRARY_PATH, the program's
// RUNPATH, the system's folders); they stay open for the life of the process.
static void load_tss(void) {
#define CKEYCHAIN_TSS_OPEN(library, soname) \
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL); \
    if (library == NULL) { \
        const char *why = dlerror(); \
        snprintf(tss_failure, sizeof tss_failure, "%s", why ? why : soname); \
        return; \
    }
    CKEYCHAIN_TSS_LIBRARIES(CKEYCHAIN_TSS_OPEN)
#undef CKEYCHAIN_TSS_OPEN
#define CKEYCHAIN_TSS_LOAD(library, name) \
    if ((tss.name = (__typeof__(tss.name))dlsym(library, #name)) == NULL) { \
        snprintf(tss_failure, sizeof tss_failure, "tpm2-tss has no %s", #name); \
        return; \
    }
    CKEYCHAIN_TSS_FUNCTIONS(CKEYCHAIN_TSS_LOAD)
#undef CKEYCHAIN_TSS_LOAD
    tss_loaded = 1;
}

typedef struct {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary;
} session;

static ckeychain_tpm_result fail(int status, uint32_t rc, const char *step) {
    ckeychain_tpm_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    r.rc = rc;
    if (rc != 0) {
        snprintf(r.message, sizeof r.message, "%s: %s", step, tss.Tss2_RC_Decode(rc));
    } else {
        snprintf(r.message, sizeof r.message, "%s", step);
    }
    return r;
}

static ckeychain_tpm_result ok(void) { return fail(0, 0, ""); }

static void close_session(session *s) {
    if (s->esys) {
        if (s->primary != ESYS_TR_NONE) tss.Esys_FlushContext(s->esys, s->primary);
        tss.Esys_Finalize(&s->esys);
    }
    if (s->tcti) tss.Tss2_TctiLdr_Finalize(&s->tcti);
}

// Connects, starts the TPM if nothing has (a simulator; the kernel starts a real one), and creates the primary key.
static ckeychain_tpm_result open_session(const char *tcti, session *s) {
    s->tcti = NULL;
    s->esys = NULL;
    s->primary = ESYS_TR_NONE;
    pthread_once(&tss_once, load_tss);
    if (!tss_loaded) {
        char why[240];
        snprintf(why, sizeof why, "loading tpm2-tss (%s)", tss_failure);
        return fail(1, 0, why);
    }
    TSS2_RC rc = tss.Tss2_TctiLdr_Initialize(tcti, &s->tcti);
    if (rc != TSS2_RC_SUCCESS) return fail(1, rc, "loading the TCTI");
    rc = tss.Esys_Initialize(&s->esys, s->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) return fail(1, rc, "connecting to the TPM");
    rc = tss.Esys_Startup(s->esys, TPM2_SU_CLEAR);
    if (rc != TSS2_RC_SUCCESS && rc != TPM2_RC_INITIALIZE) return fail(1, rc, "starting the TPM");

    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
        TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED |
        TPMA_OBJECT_DECRYPT | TPMA_OBJECT_NODA;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION pcrs;
    memset(&pcrs, 0, sizeof pcrs);
    rc = tss.Esys_CreatePrimary(s->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                            &sensitive, &template, &outside, &pcrs, &s->primary, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        s->primary = ESYS_TR_NONE;
        return fail(3, rc, "creating the primary key under the owner hierarchy");
    }
    return ok();
}

ckeychain_tpm_result ckeychain_tpm_seal(const char *tcti, const uint8_t *secret, size_t secret_size,
                                        uint8_t *public_blob, size_t *public_size,
                                        uint8_t *private_blob, size_t *private_size) {
    if (secret_size == 0 || secret_size > CKEYCHAIN_TPM_MAX_SECRET) return fail(3, 0, "the secret has a size a TPM cannot seal");
    session s;
    ckeychain_tpm_result r = open_session(tcti, &s);
    if (r.status != 0) {
        close_session(&s);
        return r;
    }
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    sensitive.sensitive.data.size = (UINT16)secret_size;
    memcpy(sensitive.sensitive.data.buffer, secret, secret_size);
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_KEYEDHASH;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
        TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;
    template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION pcrs;
    memset(&pcrs, 0, sizeof pcrs);
    TPM2B_PRIVATE *out_private = NULL;
    TPM2B_PUBLIC *out_public = NULL;
    TSS2_RC rc = tss.Esys_Create(s.esys, s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                             &sensitive, &template, &outside, &pcrs, &out_private, &out_public, NULL, NULL, NULL);
    memset(&sensitive, 0, sizeof sensitive);
    if (rc != TSS2_RC_SUCCESS) {
        close_session(&s);
        return fail(3, rc, "sealing under the primary key");
    }
    size_t offset = 0;
    rc = tss.Tss2_MU_TPM2B_PUBLIC_Marshal(out_public, public_blob, CKEYCHAIN_TPM_MAX_BLOB, &offset);
    *public_size = offset;
    if (rc == TSS2_RC_SUCCESS) {
        offset = 0;
        rc = tss.Tss2_MU_TPM2B_PRIVATE_Marshal(out_private, private_blob, CKEYCHAIN_TPM_MAX_BLOB, &offset);
        *private_size = offset;
    }
    tss.Esys_Free(out_private);
    tss.Esys_Free(out_public);
    close_session(&s);
    if (rc != TSS2_RC_SUCCESS) return fail(3, rc, "marshalling the sealed object");
    return ok();
}

// Reads a sealed object's or key's two marshalled blobs, each whole; `what` names the object in the message.
// Malformed blobs are 2 (refused), as the TPM's own refusal of altered blobs is.
static ckeychain_tpm_result unmarshal_blobs(const uint8_t *public_blob, size_t public_size, const uint8_t *private_blob,
                                            size_t private_size, TPM2B_PUBLIC *in_public, TPM2B_PRIVATE *in_private,
                                            const char *what) {
    char why[120];
    memset(in_public, 0, sizeof *in_public);
    memset(in_private, 0, sizeof *in_private);
    size_t offset = 0;
    if (tss.Tss2_MU_TPM2B_PUBLIC_Unmarshal(public_blob, public_size, &offset, in_public) != TSS2_RC_SUCCESS || offset != public_size) {
        snprintf(why, sizeof why, "%s's public part is malformed", what);
        return fail(2, 0, why);
    }
    offset = 0;
    if (tss.Tss2_MU_TPM2B_PRIVATE_Unmarshal(private_blob, private_size, &offset, in_private) != TSS2_RC_SUCCESS || offset != private_size) {
        snprintf(why, sizeof why, "%s's private part is malformed", what);
        return fail(2, 0, why);
    }
    return ok();
}

ckeychain_tpm_result ckeychain_tpm_unseal(const char *tcti, const uint8_t *public_blob, size_t public_size,
                                          const uint8_t *private_blob, size_t private_size,
                                          uint8_t *secret, size_t *secret_size) {
    pthread_once(&tss_once, load_tss);
    if (!tss_loaded) {
        char why[240];
        snprintf(why, sizeof why, "loading tpm2-tss (%s)", tss_failure);
        return fail(1, 0, why);
    }
    TPM2B_PUBLIC in_public;
    TPM2B_PRIVATE in_private;
    ckeychain_tpm_result parsed = unmarshal_blobs(public_blob, public_size, private_blob, private_size, &in_public, &in_private, "the sealed object");
    if (parsed.status != 0) {
        return parsed;
    }
    session s;
    ckeychain_tpm_result r = open_session(tcti, &s);
    if (r.status != 0) {
        close_session(&s);
        return r;
    }
    ESYS_TR object = ESYS_TR_NONE;
    TSS2_RC rc = tss.Esys_Load(s.esys, s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in_private, &in_public, &object);
    if (rc != TSS2_RC_SUCCESS) {
        close_session(&s);
        return fail(2, rc, "loading the sealed object");
    }
    TPM2B_SENSITIVE_DATA *out = NULL;
    rc = tss.Esys_Unseal(s.esys, object, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &out);
    tss.Esys_FlushContext(s.esys, object);
    close_session(&s);
    if (rc != TSS2_RC_SUCCESS) return fail(2, rc, "unsealing");
    if (out->size > CKEYCHAIN_TPM_MAX_SECRET) {
        tss.Esys_Free(out);
        return fail(2, 0, "the unsealed secret is too large");
    }
    memcpy(secret, out->buffer, out->size);
    *secret_size = out->size;
    memset(out->buffer, 0, out->size);
    tss.Esys_Free(out);
    return ok();
}

// ---- P-256 keys inside the TPM ----

// Each operation loads its key and flushes it after, and keeps no key loaded in between. Keeping some would save
// little where it matters: behind a resource manager (the kernel's /dev/tpmrm0) every loaded object is saved out
// of the TPM after each command and loaded back in before the next anyway. And a TPM reached without one (a
// simulator on a socket) has three object slots for all its connections together: an idle context holds one (its
// primary key), which leaves another caller the two a seal or unseal needs; keys kept loaded would take them.
struct ckeychain_tpm_context {
    session s;
};

ckeychain_tpm_context *ckeychain_tpm_open(const char *tcti, ckeychain_tpm_result *out) {
    ckeychain_tpm_result r;
    ckeychain_tpm_result *result = out ? out : &r;
    ckeychain_tpm_context *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        *result = fail(3, 0, "out of memory for a TPM context");
        return NULL;
    }
    *result = open_session(tcti, &ctx->s);
    if (result->status != 0) {
        close_session(&ctx->s);
        free(ctx);
        return NULL;
    }
    return ctx;
}

void ckeychain_tpm_close(ckeychain_tpm_context *ctx) {
    if (ctx == NULL) return;
    // Flushes the primary key: a TPM reached without a resource manager keeps transient objects after the
    // connection closes.
    close_session(&ctx->s);
    free(ctx);
}

// What a failed call says about the TPM: a broken connection is one that no longer answers (1), anything else
// another failure (3).
static int call_failure_status(TSS2_RC rc) { return (rc & TSS2_RC_LAYER_MASK) == TSS2_TCTI_RC_LAYER ? 1 : 3; }

// Which Load failures mean "these blobs are not for this TPM" (2): the TPM's own errors about the object (its
// integrity check, its sensitive area, its parameters; another TPM's blobs fail the integrity check, as altered
// ones do), not its warnings (no room for the object, retry), its failure mode, nor a broken connection.
static int load_failure_status(TSS2_RC rc) {
    if ((rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return call_failure_status(rc);
    if (rc & TPM2_RC_FMT1) return 2;
    if ((rc & TPM2_RC_WARN) == TPM2_RC_WARN || rc == TPM2_RC_FAILURE || rc == TPM2_RC_INITIALIZE) return 3;
    return 2;
}

// The template of every key: ECC NIST P-256, not restricted, for signing (ECDSA) and decryption (ECDH ZGen),
// either scheme chosen per call (TPM2_ALG_NULL); made by the TPM (sensitiveDataOrigin), never exported
// (fixedTPM, fixedParent), with an empty authorization value (userWithAuth: a password session with the empty
// password). noDA, as the sealed object: with nothing to guess, dictionary-attack lockout (set off by failures
// elsewhere) would only make the keys unusable for its duration.
// The header spells the attributes as a number (it does without tpm2-tss's headers, and Swift reads it too).
_Static_assert(CKEYCHAIN_TPM_KEY_ATTRIBUTES ==
                   (TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
                    TPMA_OBJECT_NODA | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_DECRYPT),
               "CKEYCHAIN_TPM_KEY_ATTRIBUTES names the key template's attributes");

static void key_template(TPM2B_PUBLIC *template) {
    memset(template, 0, sizeof *template);
    template->publicArea.type = TPM2_ALG_ECC;
    template->publicArea.nameAlg = TPM2_ALG_SHA256;
    template->publicArea.objectAttributes = CKEYCHAIN_TPM_KEY_ATTRIBUTES;
    template->publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    template->publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template->publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template->publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

// Copies a TPM's ECC parameter (big-endian, possibly without its leading zero bytes) into 32 bytes; false when
// it is longer.
static int left_pad(const TPM2B_ECC_PARAMETER *parameter, uint8_t out[CKEYCHAIN_TPM_P256_SIZE]) {
    if (parameter->size > CKEYCHAIN_TPM_P256_SIZE) return 0;
    size_t pad = CKEYCHAIN_TPM_P256_SIZE - parameter->size;
    memset(out, 0, pad);
    memcpy(out + pad, parameter->buffer, parameter->size);
    return 1;
}

ckeychain_tpm_result ckeychain_tpm_key_create(ckeychain_tpm_context *ctx, uint8_t *public_blob, size_t *public_size,
                                              uint8_t *private_blob, size_t *private_size,
                                              uint8_t x[CKEYCHAIN_TPM_P256_SIZE], uint8_t y[CKEYCHAIN_TPM_P256_SIZE]) {
    if (ctx == NULL || public_blob == NULL || public_size == NULL || private_blob == NULL || private_size == NULL ||
        x == NULL || y == NULL) {
        return fail(3, 0, "creating a key: missing argument");
    }
    size_t public_room = *public_size;
    size_t private_room = *private_size;
    *public_size = 0;
    *private_size = 0;
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_PUBLIC template;
    key_template(&template);
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION pcrs;
    memset(&pcrs, 0, sizeof pcrs);
    TPM2B_PRIVATE *out_private = NULL;
    TPM2B_PUBLIC *out_public = NULL;
    TSS2_RC rc = tss.Esys_Create(ctx->s.esys, ctx->s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                 &sensitive, &template, &outside, &pcrs, &out_private, &out_public, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) return fail(call_failure_status(rc), rc, "creating a P-256 key under the primary key");
    size_t public_offset = 0;
    size_t private_offset = 0;
    ckeychain_tpm_result r = ok();
    // The sizes are written only once both blobs are: a failure leaves them 0, never a partly written blob's size.
    if (!left_pad(&out_public->publicArea.unique.ecc.x, x) || !left_pad(&out_public->publicArea.unique.ecc.y, y)) {
        r = fail(3, 0, "the TPM returned a public key that is not a P-256 point");
    } else if ((rc = tss.Tss2_MU_TPM2B_PUBLIC_Marshal(out_public, public_blob, public_room, &public_offset)) != TSS2_RC_SUCCESS ||
               (rc = tss.Tss2_MU_TPM2B_PRIVATE_Marshal(out_private, private_blob, private_room, &private_offset)) != TSS2_RC_SUCCESS) {
        r = fail(3, rc, "marshalling the key");
    } else {
        *public_size = public_offset;
        *private_size = private_offset;
    }
    tss.Esys_Free(out_private);
    tss.Esys_Free(out_public);
    return r;
}

// Loads the key the two blobs describe under the primary key; the caller flushes `*handle` once done with it.
// Blobs that do not unmarshal, that are not a key ckeychain_tpm_key_create makes, or that the TPM refuses are 2.
static ckeychain_tpm_result load_key(ckeychain_tpm_context *ctx, const uint8_t *public_blob, size_t public_size,
                                     const uint8_t *private_blob, size_t private_size, ESYS_TR *handle) {
    *handle = ESYS_TR_NONE;
    if (public_blob == NULL || private_blob == NULL || public_size == 0 || private_size == 0 ||
        public_size > CKEYCHAIN_TPM_MAX_BLOB || private_size > CKEYCHAIN_TPM_MAX_BLOB) {
        return fail(2, 0, "the key's blobs have sizes no key has");
    }
    TPM2B_PUBLIC in_public;
    TPM2B_PRIVATE in_private;
    ckeychain_tpm_result parsed = unmarshal_blobs(public_blob, public_size, private_blob, private_size, &in_public, &in_private, "the key");
    if (parsed.status != 0) {
        return parsed;
    }
    // Only what ckeychain_tpm_key_create makes: a sealed object's blobs (or a restricted key's) would load, and then
    // fail at the operation with a less telling error.
    const TPMT_PUBLIC *area = &in_public.publicArea;
    if (area->type != TPM2_ALG_ECC || area->nameAlg != TPM2_ALG_SHA256 || area->objectAttributes != CKEYCHAIN_TPM_KEY_ATTRIBUTES ||
        area->parameters.eccDetail.curveID != TPM2_ECC_NIST_P256 || area->parameters.eccDetail.scheme.scheme != TPM2_ALG_NULL) {
        return fail(2, 0, "the blobs are not a P-256 key of this keychain");
    }
    TSS2_RC rc = tss.Esys_Load(ctx->s.esys, ctx->s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in_private, &in_public, handle);
    if (rc != TSS2_RC_SUCCESS) {
        *handle = ESYS_TR_NONE;
        return fail(load_failure_status(rc), rc, "loading the key");
    }
    return ok();
}

ckeychain_tpm_result ckeychain_tpm_key_sign(ckeychain_tpm_context *ctx, const uint8_t *public_blob, size_t public_size,
                                            const uint8_t *private_blob, size_t private_size,
                                            const uint8_t digest[CKEYCHAIN_TPM_P256_SIZE],
                                            uint8_t r_out[CKEYCHAIN_TPM_P256_SIZE], uint8_t s_out[CKEYCHAIN_TPM_P256_SIZE]) {
    if (ctx == NULL || digest == NULL || r_out == NULL || s_out == NULL) return fail(3, 0, "signing: missing argument");
    ESYS_TR key;
    ckeychain_tpm_result r = load_key(ctx, public_blob, public_size, private_blob, private_size, &key);
    if (r.status != 0) return r;
    TPM2B_DIGEST in_digest;
    memset(&in_digest, 0, sizeof in_digest);
    in_digest.size = CKEYCHAIN_TPM_P256_SIZE;
    memcpy(in_digest.buffer, digest, CKEYCHAIN_TPM_P256_SIZE);
    TPMT_SIG_SCHEME scheme;
    memset(&scheme, 0, sizeof scheme);
    scheme.scheme = TPM2_ALG_ECDSA;
    scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    // The null ticket: the TPM did not hash the data itself, which only a restricted key asks for.
    TPMT_TK_HASHCHECK validation;
    memset(&validation, 0, sizeof validation);
    validation.tag = TPM2_ST_HASHCHECK;
    validation.hierarchy = TPM2_RH_NULL;
    TPMT_SIGNATURE *signature = NULL;
    TSS2_RC rc = tss.Esys_Sign(ctx->s.esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in_digest, &scheme, &validation, &signature);
    tss.Esys_FlushContext(ctx->s.esys, key);
    if (rc != TSS2_RC_SUCCESS) return fail(call_failure_status(rc), rc, "signing with the key");
    if (signature->sigAlg != TPM2_ALG_ECDSA || !left_pad(&signature->signature.ecdsa.signatureR, r_out) ||
        !left_pad(&signature->signature.ecdsa.signatureS, s_out)) {
        r = fail(3, 0, "the TPM returned a signature that is not a P-256 ECDSA signature");
    }
    tss.Esys_Free(signature);
    return r;
}

ckeychain_tpm_result ckeychain_tpm_key_ecdh(ckeychain_tpm_context *ctx, const uint8_t *public_blob, size_t public_size,
                                            const uint8_t *private_blob, size_t private_size,
                                            const uint8_t peer_x[CKEYCHAIN_TPM_P256_SIZE], const uint8_t peer_y[CKEYCHAIN_TPM_P256_SIZE],
                                            uint8_t z[CKEYCHAIN_TPM_P256_SIZE]) {
    if (ctx == NULL || peer_x == NULL || peer_y == NULL || z == NULL) return fail(3, 0, "key agreement: missing argument");
    ESYS_TR key;
    ckeychain_tpm_result r = load_key(ctx, public_blob, public_size, private_blob, private_size, &key);
    if (r.status != 0) return r;
    TPM2B_ECC_POINT peer;
    memset(&peer, 0, sizeof peer);
    peer.point.x.size = CKEYCHAIN_TPM_P256_SIZE;
    memcpy(peer.point.x.buffer, peer_x, CKEYCHAIN_TPM_P256_SIZE);
    peer.point.y.size = CKEYCHAIN_TPM_P256_SIZE;
    memcpy(peer.point.y.buffer, peer_y, CKEYCHAIN_TPM_P256_SIZE);
    TPM2B_ECC_POINT *shared = NULL;
    // The TPM checks that the peer's point is on the curve (TPM2_RC_ECC_POINT otherwise: 3, bad arguments).
    TSS2_RC rc = tss.Esys_ECDH_ZGen(ctx->s.esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &peer, &shared);
    tss.Esys_FlushContext(ctx->s.esys, key);
    if (rc != TSS2_RC_SUCCESS) return fail(call_failure_status(rc), rc, "key agreement with the key");
    if (!left_pad(&shared->point.x, z)) r = fail(3, 0, "the TPM returned a shared point that is not on P-256");
    // The shared point is the secret: wiped before ESAPI's buffer is freed.
    memset(shared, 0, sizeof *shared);
    tss.Esys_Free(shared);
    return r;
}
