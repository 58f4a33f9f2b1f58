// Sealing a small secret to a TPM 2.0 with tpm2-tss (ESAPI + the TCTI loader). The primary key is re-created
// on every call from the owner hierarchy's seed with a fixed template, so nothing but the sealed object's two
// blobs needs storing; another TPM has another seed, derives another primary key, and cannot load the blobs.
#include "CKeychainTPM.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
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
    memset(&in_public, 0, sizeof in_public);
    TPM2B_PRIVATE in_private;
    memset(&in_private, 0, sizeof in_private);
    size_t offset = 0;
    if (tss.Tss2_MU_TPM2B_PUBLIC_Unmarshal(public_blob, public_size, &offset, &in_public) != TSS2_RC_SUCCESS || offset != public_size) {
        return fail(2, 0, "the sealed object's public part is malformed");
    }
    offset = 0;
    if (tss.Tss2_MU_TPM2B_PRIVATE_Unmarshal(private_blob, private_size, &offset, &in_private) != TSS2_RC_SUCCESS || offset != private_size) {
        return fail(2, 0, "the sealed object's private part is malformed");
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
