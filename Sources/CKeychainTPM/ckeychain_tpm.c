// Sealing a small secret to a TPM 2.0 with tpm2-tss (ESAPI + the TCTI loader). The primary key is re-created
// on every call from the owner hierarchy's seed with a fixed template, so nothing but the sealed object's two
// blobs needs storing; another TPM has another seed, derives another primary key, and cannot load the blobs.
#include "CKeychainTPM.h"

#include <stdio.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

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
        snprintf(r.message, sizeof r.message, "%s: %s", step, Tss2_RC_Decode(rc));
    } else {
        snprintf(r.message, sizeof r.message, "%s", step);
    }
    return r;
}

static ckeychain_tpm_result ok(void) { return fail(0, 0, ""); }

static void close_session(session *s) {
    if (s->esys) {
        if (s->primary != ESYS_TR_NONE) Esys_FlushContext(s->esys, s->primary);
        Esys_Finalize(&s->esys);
    }
    if (s->tcti) Tss2_TctiLdr_Finalize(&s->tcti);
}

// Connects, starts the TPM if nothing has (a simulator; the kernel starts a real one), and creates the primary key.
static ckeychain_tpm_result open_session(const char *tcti, session *s) {
    s->tcti = NULL;
    s->esys = NULL;
    s->primary = ESYS_TR_NONE;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &s->tcti);
    if (rc != TSS2_RC_SUCCESS) return fail(1, rc, "loading the TCTI");
    rc = Esys_Initialize(&s->esys, s->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) return fail(1, rc, "connecting to the TPM");
    rc = Esys_Startup(s->esys, TPM2_SU_CLEAR);
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
    rc = Esys_CreatePrimary(s->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
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
    TSS2_RC rc = Esys_Create(s.esys, s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                             &sensitive, &template, &outside, &pcrs, &out_private, &out_public, NULL, NULL, NULL);
    memset(&sensitive, 0, sizeof sensitive);
    if (rc != TSS2_RC_SUCCESS) {
        close_session(&s);
        return fail(3, rc, "sealing under the primary key");
    }
    size_t offset = 0;
    rc = Tss2_MU_TPM2B_PUBLIC_Marshal(out_public, public_blob, CKEYCHAIN_TPM_MAX_BLOB, &offset);
    *public_size = offset;
    if (rc == TSS2_RC_SUCCESS) {
        offset = 0;
        rc = Tss2_MU_TPM2B_PRIVATE_Marshal(out_private, private_blob, CKEYCHAIN_TPM_MAX_BLOB, &offset);
        *private_size = offset;
    }
    Esys_Free(out_private);
    Esys_Free(out_public);
    close_session(&s);
    if (rc != TSS2_RC_SUCCESS) return fail(3, rc, "marshalling the sealed object");
    return ok();
}

ckeychain_tpm_result ckeychain_tpm_unseal(const char *tcti, const uint8_t *public_blob, size_t public_size,
                                          const uint8_t *private_blob, size_t private_size,
                                          uint8_t *secret, size_t *secret_size) {
    TPM2B_PUBLIC in_public;
    memset(&in_public, 0, sizeof in_public);
    TPM2B_PRIVATE in_private;
    memset(&in_private, 0, sizeof in_private);
    size_t offset = 0;
    if (Tss2_MU_TPM2B_PUBLIC_Unmarshal(public_blob, public_size, &offset, &in_public) != TSS2_RC_SUCCESS || offset != public_size) {
        return fail(2, 0, "the sealed object's public part is malformed");
    }
    offset = 0;
    if (Tss2_MU_TPM2B_PRIVATE_Unmarshal(private_blob, private_size, &offset, &in_private) != TSS2_RC_SUCCESS || offset != private_size) {
        return fail(2, 0, "the sealed object's private part is malformed");
    }
    session s;
    ckeychain_tpm_result r = open_session(tcti, &s);
    if (r.status != 0) {
        close_session(&s);
        return r;
    }
    ESYS_TR object = ESYS_TR_NONE;
    TSS2_RC rc = Esys_Load(s.esys, s.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in_private, &in_public, &object);
    if (rc != TSS2_RC_SUCCESS) {
        close_session(&s);
        return fail(2, rc, "loading the sealed object");
    }
    TPM2B_SENSITIVE_DATA *out = NULL;
    rc = Esys_Unseal(s.esys, object, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &out);
    Esys_FlushContext(s.esys, object);
    close_session(&s);
    if (rc != TSS2_RC_SUCCESS) return fail(2, rc, "unsealing");
    if (out->size > CKEYCHAIN_TPM_MAX_SECRET) {
        Esys_Free(out);
        return fail(2, 0, "the unsealed secret is too large");
    }
    memcpy(secret, out->buffer, out->size);
    *secret_size = out->size;
    memset(out->buffer, 0, out->size);
    Esys_Free(out);
    return ok();
}
