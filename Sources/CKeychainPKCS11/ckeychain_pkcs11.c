// PKCS#11 tokens through p11-kit's module registry: listing tokens and their objects, logging in, and signing,
// decrypting, ECDH and key-pair generation by CKA_ID. See CKeychainPKCS11.h for the contract (threads, bounds).
#include "CKeychainPKCS11.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// PKCS#11's types and constants, from the copy p11-kit ships (Debian's libp11-kit-dev), in its standard
// (CRYPTOKI_COMPAT) spelling. Its compatibility macros rename some lower-case words (value, count, params,
// reserved, slot_id, …): this file uses none of them as its own names.
#include <p11-kit-1/p11-kit/pkcs11.h>

// p11-kit's own functions, declared as p11-kit.h (0.23 and later) declares them: p11-kit.h includes
// "p11-kit/pkcs11.h", which only pkg-config's -I/usr/include/p11-kit-1 finds, and a SwiftPM target cannot add
// that path without unsafe flags. They are only called through the table below, never linked.
typedef void (*p11_kit_destroyer)(void *);
CK_FUNCTION_LIST **p11_kit_modules_load(const char *, int);
CK_RV p11_kit_modules_initialize(CK_FUNCTION_LIST **, p11_kit_destroyer);
void p11_kit_modules_finalize_and_release(CK_FUNCTION_LIST **);
void p11_kit_module_release(CK_FUNCTION_LIST *);
char *p11_kit_module_get_name(CK_FUNCTION_LIST *);
char *p11_kit_config_option(CK_FUNCTION_LIST *, const char *);
const char *p11_kit_message(void);

// libp11-kit is opened on the first call, not when the program starts, like tpm2-tss in CKeychainTPM: only
// programs that reach for a token pay for loading it. The declarations above still give every function's type,
// so a call through the table is checked as a direct call is.
#define CKEYCHAIN_P11_FUNCTIONS(F) \
    F(p11_kit_modules_load) F(p11_kit_modules_initialize) F(p11_kit_modules_finalize_and_release) \
    F(p11_kit_module_release) F(p11_kit_module_get_name) F(p11_kit_config_option) F(p11_kit_message)

static struct {
#define CKEYCHAIN_P11_MEMBER(name) __typeof__(&name) name;
    CKEYCHAIN_P11_FUNCTIONS(CKEYCHAIN_P11_MEMBER)
#undef CKEYCHAIN_P11_MEMBER
} p11;

static pthread_once_t p11_once = PTHREAD_ONCE_INIT;
static int p11_loaded;
static char p11_failure[200];

// Opened as the dynamic linker would at start (LD_LIBRARY_PATH, RUNPATH, the system's folders); it stays open.
static void load_p11_kit(void) {
    void *library = dlopen("libp11-kit.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(p11_failure, sizeof p11_failure, "%s", why ? why : "libp11-kit.so.0 cannot be opened");
        return;
    }
#define CKEYCHAIN_P11_LOAD(name) \
    if ((p11.name = (__typeof__(p11.name))dlsym(library, #name)) == NULL) { \
        snprintf(p11_failure, sizeof p11_failure, "libp11-kit.so.0 has no %s", #name); \
        return; \
    }
    CKEYCHAIN_P11_FUNCTIONS(CKEYCHAIN_P11_LOAD)
#undef CKEYCHAIN_P11_LOAD
    p11_loaded = 1;
}

// One lock for every call in the process: a token's login state is shared by all of the process's sessions on
// it, so one call's login and logout must not interleave with another's operation.
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_MODULES 64
#define MAX_SLOTS 256

struct ckeychain_pkcs11_registry {
    /// The usable modules, initialised, NULL-terminated (what p11-kit returned, trust stores and failures removed).
    CK_FUNCTION_LIST **modules;
    /// Their names, in the same order.
    char names[MAX_MODULES][CKEYCHAIN_PKCS11_NAME_SIZE];
    size_t usable;
    /// The modules left out, and why.
    char skipped[MAX_MODULES][CKEYCHAIN_PKCS11_NAME_SIZE];
    int skipped_state[MAX_MODULES];
    size_t skipped_count;
};

// ---- Results ----

static const char *rv_name(CK_RV rv) {
    switch (rv) {
#define CKEYCHAIN_RV(name) case name: return #name;
    CKEYCHAIN_RV(CKR_OK) CKEYCHAIN_RV(CKR_CANCEL) CKEYCHAIN_RV(CKR_HOST_MEMORY) CKEYCHAIN_RV(CKR_SLOT_ID_INVALID)
    CKEYCHAIN_RV(CKR_GENERAL_ERROR) CKEYCHAIN_RV(CKR_FUNCTION_FAILED) CKEYCHAIN_RV(CKR_ARGUMENTS_BAD)
    CKEYCHAIN_RV(CKR_ATTRIBUTE_READ_ONLY) CKEYCHAIN_RV(CKR_ATTRIBUTE_SENSITIVE) CKEYCHAIN_RV(CKR_ATTRIBUTE_TYPE_INVALID)
    CKEYCHAIN_RV(CKR_ATTRIBUTE_VALUE_INVALID) CKEYCHAIN_RV(CKR_DATA_INVALID) CKEYCHAIN_RV(CKR_DATA_LEN_RANGE)
    CKEYCHAIN_RV(CKR_DEVICE_ERROR) CKEYCHAIN_RV(CKR_DEVICE_MEMORY) CKEYCHAIN_RV(CKR_DEVICE_REMOVED)
    CKEYCHAIN_RV(CKR_ENCRYPTED_DATA_INVALID) CKEYCHAIN_RV(CKR_ENCRYPTED_DATA_LEN_RANGE)
    CKEYCHAIN_RV(CKR_FUNCTION_CANCELED) CKEYCHAIN_RV(CKR_FUNCTION_NOT_SUPPORTED) CKEYCHAIN_RV(CKR_KEY_HANDLE_INVALID)
    CKEYCHAIN_RV(CKR_KEY_SIZE_RANGE) CKEYCHAIN_RV(CKR_KEY_TYPE_INCONSISTENT) CKEYCHAIN_RV(CKR_KEY_FUNCTION_NOT_PERMITTED)
    CKEYCHAIN_RV(CKR_MECHANISM_INVALID) CKEYCHAIN_RV(CKR_MECHANISM_PARAM_INVALID) CKEYCHAIN_RV(CKR_OBJECT_HANDLE_INVALID)
    CKEYCHAIN_RV(CKR_OPERATION_ACTIVE) CKEYCHAIN_RV(CKR_OPERATION_NOT_INITIALIZED) CKEYCHAIN_RV(CKR_PIN_INCORRECT)
    CKEYCHAIN_RV(CKR_PIN_INVALID) CKEYCHAIN_RV(CKR_PIN_LEN_RANGE) CKEYCHAIN_RV(CKR_PIN_EXPIRED) CKEYCHAIN_RV(CKR_PIN_LOCKED)
    CKEYCHAIN_RV(CKR_SESSION_CLOSED) CKEYCHAIN_RV(CKR_SESSION_COUNT) CKEYCHAIN_RV(CKR_SESSION_HANDLE_INVALID)
    CKEYCHAIN_RV(CKR_SESSION_READ_ONLY) CKEYCHAIN_RV(CKR_SESSION_READ_ONLY_EXISTS) CKEYCHAIN_RV(CKR_TEMPLATE_INCOMPLETE)
    CKEYCHAIN_RV(CKR_TEMPLATE_INCONSISTENT) CKEYCHAIN_RV(CKR_TOKEN_NOT_PRESENT) CKEYCHAIN_RV(CKR_TOKEN_NOT_RECOGNIZED)
    CKEYCHAIN_RV(CKR_TOKEN_WRITE_PROTECTED) CKEYCHAIN_RV(CKR_USER_ALREADY_LOGGED_IN) CKEYCHAIN_RV(CKR_USER_NOT_LOGGED_IN)
    CKEYCHAIN_RV(CKR_USER_PIN_NOT_INITIALIZED) CKEYCHAIN_RV(CKR_USER_TYPE_INVALID)
    CKEYCHAIN_RV(CKR_USER_ANOTHER_ALREADY_LOGGED_IN) CKEYCHAIN_RV(CKR_BUFFER_TOO_SMALL)
    CKEYCHAIN_RV(CKR_CRYPTOKI_NOT_INITIALIZED) CKEYCHAIN_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED)
#undef CKEYCHAIN_RV
    default: return "CKR_?";
    }
}

// The status a CK_RV stands for.
static int status_of(CK_RV rv) {
    switch (rv) {
    case CKR_OK: return CKEYCHAIN_PKCS11_OK;
    case CKR_PIN_INCORRECT: case CKR_PIN_INVALID: case CKR_PIN_LEN_RANGE: return CKEYCHAIN_PKCS11_PIN_INCORRECT;
    case CKR_PIN_LOCKED: return CKEYCHAIN_PKCS11_PIN_LOCKED;
    case CKR_USER_NOT_LOGGED_IN: return CKEYCHAIN_PKCS11_NOT_LOGGED_IN;
    case CKR_TOKEN_NOT_PRESENT: case CKR_DEVICE_REMOVED: case CKR_SLOT_ID_INVALID: case CKR_TOKEN_NOT_RECOGNIZED:
        return CKEYCHAIN_PKCS11_TOKEN_NOT_FOUND;
    case CKR_MECHANISM_INVALID: case CKR_MECHANISM_PARAM_INVALID: case CKR_KEY_TYPE_INCONSISTENT:
    case CKR_KEY_FUNCTION_NOT_PERMITTED: case CKR_FUNCTION_NOT_SUPPORTED: case CKR_KEY_SIZE_RANGE:
    case CKR_TEMPLATE_INCONSISTENT: case CKR_ATTRIBUTE_VALUE_INVALID: case CKR_TOKEN_WRITE_PROTECTED:
        return CKEYCHAIN_PKCS11_UNSUPPORTED;
    case CKR_DATA_INVALID: case CKR_DATA_LEN_RANGE: case CKR_ENCRYPTED_DATA_INVALID: case CKR_ENCRYPTED_DATA_LEN_RANGE:
    case CKR_ARGUMENTS_BAD: case CKR_BUFFER_TOO_SMALL:
        return CKEYCHAIN_PKCS11_INVALID_ARGUMENT;
    case CKR_FUNCTION_CANCELED: return CKEYCHAIN_PKCS11_CANCELED;
    default: return CKEYCHAIN_PKCS11_FAILED;
    }
}

static ckeychain_pkcs11_result fail(int status, CK_RV rv, const char *step) {
    ckeychain_pkcs11_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    r.rv = rv;
    if (rv != CKR_OK) {
        snprintf(r.message, sizeof r.message, "%s: %s (0x%lx)", step, rv_name(rv), (unsigned long)rv);
    } else {
        snprintf(r.message, sizeof r.message, "%s", step);
    }
    return r;
}

static ckeychain_pkcs11_result fail_rv(CK_RV rv, const char *step) { return fail(status_of(rv), rv, step); }

static ckeychain_pkcs11_result ok(void) { return fail(CKEYCHAIN_PKCS11_OK, CKR_OK, ""); }

// ---- The registry ----

static void copy_name(char *to, const char *from) {
    snprintf(to, CKEYCHAIN_PKCS11_NAME_SIZE, "%s", from ? from : "(unnamed)");
}

static void record_skipped(ckeychain_pkcs11_registry *registry, CK_FUNCTION_LIST *module, int state) {
    if (registry->skipped_count >= MAX_MODULES) return;
    char *name = p11.p11_kit_module_get_name(module);
    copy_name(registry->skipped[registry->skipped_count], name);
    free(name);
    registry->skipped_state[registry->skipped_count++] = state;
}

// p11_kit_modules_initialize's failure callback has no context: the registry being opened, under registry_lock.
static ckeychain_pkcs11_registry *opening;

static void initialization_failed(void *module) {
    if (opening) record_skipped(opening, module, CKEYCHAIN_PKCS11_MODULE_FAILED);
    p11.p11_kit_module_release(module);
}

static int is_yes(const char *option) {
    return option && (strcasecmp(option, "yes") == 0 || strcasecmp(option, "true") == 0);
}

ckeychain_pkcs11_result ckeychain_pkcs11_open(ckeychain_pkcs11_registry **out) {
    *out = NULL;
    pthread_once(&p11_once, load_p11_kit);
    if (!p11_loaded) {
        char why[240];
        snprintf(why, sizeof why, "loading p11-kit (%s)", p11_failure);
        return fail(CKEYCHAIN_PKCS11_UNAVAILABLE, CKR_OK, why);
    }
    ckeychain_pkcs11_registry *registry = calloc(1, sizeof *registry);
    if (registry == NULL) return fail(CKEYCHAIN_PKCS11_FAILED, CKR_HOST_MEMORY, "allocating the registry");
    pthread_mutex_lock(&registry_lock);
    CK_FUNCTION_LIST **modules = p11.p11_kit_modules_load(NULL, 0);
    if (modules == NULL) {
        const char *message = p11.p11_kit_message();
        char why[240];
        snprintf(why, sizeof why, "loading p11-kit's modules (%s)", message ? message : "no reason given");
        pthread_mutex_unlock(&registry_lock);
        free(registry);
        return fail(CKEYCHAIN_PKCS11_UNAVAILABLE, CKR_OK, why);
    }
    // Trust stores (p11-kit-trust: the system's anchors as PKCS#11 objects) hold no keys: released uninitialised.
    // Past MAX_MODULES, modules are released too (no registry has that many).
    size_t kept = 0;
    for (size_t i = 0; modules[i] != NULL; i++) {
        char *trust = p11.p11_kit_config_option(modules[i], "trust-policy");
        int is_trust_store = is_yes(trust);
        free(trust);
        if (is_trust_store || kept >= MAX_MODULES) {
            record_skipped(registry, modules[i], CKEYCHAIN_PKCS11_MODULE_TRUST_STORE);
            p11.p11_kit_module_release(modules[i]);
        } else {
            modules[kept++] = modules[i];
        }
    }
    modules[kept] = NULL;
    // Modules whose C_Initialize fails are removed from the list and released (initialization_failed). The return
    // value is only a critical module's failure; the others are usable all the same.
    opening = registry;
    (void)p11.p11_kit_modules_initialize(modules, initialization_failed);
    opening = NULL;
    registry->modules = modules;
    for (size_t i = 0; modules[i] != NULL; i++) {
        char *name = p11.p11_kit_module_get_name(modules[i]);
        copy_name(registry->names[i], name);
        free(name);
        registry->usable = i + 1;
    }
    pthread_mutex_unlock(&registry_lock);
    *out = registry;
    return ok();
}

void ckeychain_pkcs11_close(ckeychain_pkcs11_registry *registry) {
    if (registry == NULL) return;
    pthread_mutex_lock(&registry_lock);
    if (registry->modules) p11.p11_kit_modules_finalize_and_release(registry->modules);
    pthread_mutex_unlock(&registry_lock);
    free(registry);
}

void ckeychain_pkcs11_modules(ckeychain_pkcs11_registry *registry,
                              void (*callback)(void *context, const char *name, int state), void *context) {
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry->usable; i++) callback(context, registry->names[i], CKEYCHAIN_PKCS11_MODULE_USABLE);
    for (size_t i = 0; i < registry->skipped_count; i++) callback(context, registry->skipped[i], registry->skipped_state[i]);
    pthread_mutex_unlock(&registry_lock);
}

// ---- Tokens ----

// A blank-padded CK_TOKEN_INFO field, NUL-terminated, its padding (and anything after a NUL) removed.
static void copy_padded(char *to, size_t to_size, const CK_UTF8CHAR *from, size_t from_size) {
    size_t length = 0;
    while (length < from_size && from[length] != 0) length++;
    while (length > 0 && from[length - 1] == ' ') length--;
    if (length >= to_size) length = to_size - 1;
    memcpy(to, from, length);
    to[length] = 0;
}

static void describe_token(ckeychain_pkcs11_token *token, const char *module, CK_SLOT_ID slot, const CK_TOKEN_INFO *info) {
    memset(token, 0, sizeof *token);
    copy_name(token->module, module);
    token->slot = slot;
    copy_padded(token->label, sizeof token->label, info->label, sizeof info->label);
    copy_padded(token->manufacturer, sizeof token->manufacturer, info->manufacturerID, sizeof info->manufacturerID);
    copy_padded(token->model, sizeof token->model, info->model, sizeof info->model);
    copy_padded(token->serial, sizeof token->serial, info->serialNumber, sizeof info->serialNumber);
    CK_FLAGS f = info->flags;
    token->flags = (f & CKF_LOGIN_REQUIRED ? CKEYCHAIN_PKCS11_TOKEN_LOGIN_REQUIRED : 0) |
        (f & CKF_PROTECTED_AUTHENTICATION_PATH ? CKEYCHAIN_PKCS11_TOKEN_PROTECTED_AUTHENTICATION_PATH : 0) |
        (f & CKF_WRITE_PROTECTED ? CKEYCHAIN_PKCS11_TOKEN_WRITE_PROTECTED : 0) |
        (f & CKF_TOKEN_INITIALIZED ? CKEYCHAIN_PKCS11_TOKEN_INITIALIZED : 0) |
        (f & CKF_USER_PIN_INITIALIZED ? CKEYCHAIN_PKCS11_TOKEN_USER_PIN_INITIALIZED : 0) |
        (f & CKF_USER_PIN_COUNT_LOW ? CKEYCHAIN_PKCS11_TOKEN_USER_PIN_COUNT_LOW : 0) |
        (f & CKF_USER_PIN_FINAL_TRY ? CKEYCHAIN_PKCS11_TOKEN_USER_PIN_FINAL_TRY : 0) |
        (f & CKF_USER_PIN_LOCKED ? CKEYCHAIN_PKCS11_TOKEN_USER_PIN_LOCKED : 0);
}

// The slots of `module` with a token present (at most MAX_SLOTS), into `slots`; their number into `*slot_count`.
static CK_RV present_slots(CK_FUNCTION_LIST *module, CK_SLOT_ID *slots, CK_ULONG *slot_count) {
    CK_RV rv = CKR_BUFFER_TOO_SMALL;
    // A reader can appear between the two calls (CKR_BUFFER_TOO_SMALL): ask again, a few times.
    for (int attempt = 0; attempt < 3 && rv == CKR_BUFFER_TOO_SMALL; attempt++) {
        CK_ULONG wanted = 0;
        rv = module->C_GetSlotList(CK_TRUE, NULL, &wanted);
        if (rv != CKR_OK) return rv;
        if (wanted > MAX_SLOTS) wanted = MAX_SLOTS;
        *slot_count = wanted;
        if (wanted == 0) return CKR_OK;
        rv = module->C_GetSlotList(CK_TRUE, slots, slot_count);
        // The count written back must fit the room given.
        if (rv == CKR_OK && *slot_count > wanted) rv = CKR_GENERAL_ERROR;
    }
    if (rv != CKR_OK) *slot_count = 0;
    return rv;
}

ckeychain_pkcs11_result ckeychain_pkcs11_tokens(ckeychain_pkcs11_registry *registry,
                                                void (*callback)(void *context, const ckeychain_pkcs11_token *token),
                                                void *context) {
    pthread_mutex_lock(&registry_lock);
    static CK_SLOT_ID slots[MAX_SLOTS];
    for (size_t m = 0; m < registry->usable; m++) {
        CK_FUNCTION_LIST *module = registry->modules[m];
        CK_ULONG slot_count = 0;
        if (present_slots(module, slots, &slot_count) != CKR_OK) continue;
        for (CK_ULONG i = 0; i < slot_count; i++) {
            CK_TOKEN_INFO info;
            memset(&info, 0, sizeof info);
            if (module->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
            ckeychain_pkcs11_token token;
            describe_token(&token, registry->names[m], slots[i], &info);
            callback(context, &token);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return ok();
}

// ---- Sessions ----

typedef struct {
    CK_FUNCTION_LIST *module;
    CK_SLOT_ID slot;
    CK_SESSION_HANDLE handle;
    int open;
    int logged_in;
    CK_TOKEN_INFO info;
} session;

// Finds the token `ref` names: a module of that name, a present token with that serial (and label, when given).
static ckeychain_pkcs11_result find_token(ckeychain_pkcs11_registry *registry, const ckeychain_pkcs11_token_ref *ref,
                                          session *s) {
    static CK_SLOT_ID slots[MAX_SLOTS];
    if (ref->module == NULL || ref->serial == NULL) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "no token named");
    for (size_t m = 0; m < registry->usable; m++) {
        if (strcmp(registry->names[m], ref->module) != 0) continue;
        CK_FUNCTION_LIST *module = registry->modules[m];
        CK_ULONG slot_count = 0;
        CK_RV rv = present_slots(module, slots, &slot_count);
        if (rv != CKR_OK) return fail_rv(rv, "C_GetSlotList");
        for (CK_ULONG i = 0; i < slot_count; i++) {
            CK_TOKEN_INFO info;
            memset(&info, 0, sizeof info);
            if (module->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
            ckeychain_pkcs11_token token;
            describe_token(&token, registry->names[m], slots[i], &info);
            if (strcmp(token.serial, ref->serial) != 0) continue;
            if (ref->label != NULL && strcmp(token.label, ref->label) != 0) continue;
            s->module = module;
            s->slot = slots[i];
            s->info = info;
            return ok();
        }
    }
    return fail(CKEYCHAIN_PKCS11_TOKEN_NOT_FOUND, CKR_OK, "the token is not present");
}

static void close_session(session *s) {
    if (!s->open) return;
    if (s->logged_in) s->module->C_Logout(s->handle);
    s->module->C_CloseSession(s->handle);
    s->open = 0;
    s->logged_in = 0;
}

// Opens a session on the token `ref` names (read-write when `read_write`) and logs in when `ref` has a PIN.
static ckeychain_pkcs11_result open_session(ckeychain_pkcs11_registry *registry, const ckeychain_pkcs11_token_ref *ref,
                                            int read_write, session *s) {
    memset(s, 0, sizeof *s);
    if (ref->pin != NULL && ref->pin_size > CKEYCHAIN_PKCS11_MAX_PIN) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "the PIN is longer than any token accepts");
    }
    ckeychain_pkcs11_result r = find_token(registry, ref, s);
    if (r.status != CKEYCHAIN_PKCS11_OK) return r;
    CK_FLAGS flags = CKF_SERIAL_SESSION | (read_write ? CKF_RW_SESSION : 0);
    CK_RV rv = s->module->C_OpenSession(s->slot, flags, NULL, NULL, &s->handle);
    if (rv != CKR_OK) return fail_rv(rv, "C_OpenSession");
    s->open = 1;
    if (ref->pin != NULL) {
        // An empty PIN: the reader's PIN pad asks (C_Login with no PIN).
        rv = s->module->C_Login(s->handle, CKU_USER, ref->pin_size ? (CK_UTF8CHAR_PTR)ref->pin : NULL, ref->pin_size);
        if (rv == CKR_OK) {
            s->logged_in = 1;
        } else if (rv != CKR_USER_ALREADY_LOGGED_IN) {
            close_session(s);
            return fail_rv(rv, "C_Login");
        }
    }
    return ok();
}

// For a key with CKA_ALWAYS_AUTHENTICATE, the login each use needs, right after the operation's C_…Init.
static CK_RV context_login(session *s, const ckeychain_pkcs11_token_ref *ref, int always_authenticate) {
    if (!always_authenticate) return CKR_OK;
    if (ref->pin == NULL) return CKR_USER_NOT_LOGGED_IN;
    return s->module->C_Login(s->handle, CKU_CONTEXT_SPECIFIC, ref->pin_size ? (CK_UTF8CHAR_PTR)ref->pin : NULL, ref->pin_size);
}

// ---- Attributes ----

// Reads one attribute of variable size into a new buffer (`*out`, `*out_size`; free it). An attribute that is
// absent, sensitive, unavailable or longer than `max` leaves `*out` NULL; an empty one gives a 1-byte buffer and
// size 0. Only session or device failures are returned.
static CK_RV read_bytes(session *s, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, size_t max, uint8_t **out, size_t *out_size) {
    *out = NULL;
    *out_size = 0;
    CK_ATTRIBUTE attribute = {type, NULL, 0};
    CK_RV rv = s->module->C_GetAttributeValue(s->handle, object, &attribute, 1);
    if (rv == CKR_ATTRIBUTE_SENSITIVE || rv == CKR_ATTRIBUTE_TYPE_INVALID) return CKR_OK;
    if (rv != CKR_OK) return rv;
    if (attribute.ulValueLen == CK_UNAVAILABLE_INFORMATION || attribute.ulValueLen > max) return CKR_OK;
    CK_ULONG allocated = attribute.ulValueLen;
    uint8_t *buffer = malloc(allocated ? allocated : 1);
    if (buffer == NULL) return CKR_HOST_MEMORY;
    attribute.pValue = buffer;
    rv = s->module->C_GetAttributeValue(s->handle, object, &attribute, 1);
    // The second answer must fit what the first promised.
    if (rv != CKR_OK || attribute.ulValueLen == CK_UNAVAILABLE_INFORMATION || attribute.ulValueLen > allocated) {
        memset(buffer, 0, allocated);
        free(buffer);
        return (rv == CKR_OK || rv == CKR_ATTRIBUTE_SENSITIVE || rv == CKR_ATTRIBUTE_TYPE_INVALID || rv == CKR_BUFFER_TOO_SMALL) ? CKR_OK : rv;
    }
    *out = buffer;
    *out_size = attribute.ulValueLen;
    return CKR_OK;
}

// A CK_BBOOL attribute; `fallback` when absent or malformed.
static int read_bool(session *s, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, int fallback) {
    CK_BBOOL answer = CK_FALSE;
    CK_ATTRIBUTE attribute = {type, &answer, sizeof answer};
    if (s->module->C_GetAttributeValue(s->handle, object, &attribute, 1) != CKR_OK || attribute.ulValueLen != sizeof answer) return fallback;
    return answer == CK_TRUE;
}

// A CK_ULONG attribute; 0 when it could not be read.
static int read_ulong(session *s, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, CK_ULONG *out) {
    CK_ULONG answer = 0;
    CK_ATTRIBUTE attribute = {type, &answer, sizeof answer};
    if (s->module->C_GetAttributeValue(s->handle, object, &attribute, 1) != CKR_OK || attribute.ulValueLen != sizeof answer) return 0;
    *out = answer;
    return 1;
}

// Reads an object of class `object_class` and passes it to `callback`. Returns a session or device failure.
static CK_RV report_object(session *s, CK_OBJECT_HANDLE object, CK_OBJECT_CLASS object_class,
                           void (*callback)(void *context, const ckeychain_pkcs11_object *object), void *context) {
    ckeychain_pkcs11_object o;
    memset(&o, 0, sizeof o);
    uint8_t *id = NULL, *label = NULL, *certificate = NULL, *modulus = NULL, *exponent = NULL, *ec_params = NULL, *ec_point = NULL;
    CK_RV rv = read_bytes(s, object, CKA_ID, CKEYCHAIN_PKCS11_MAX_ID, &id, &o.id_size);
    if (rv == CKR_OK) rv = read_bytes(s, object, CKA_LABEL, CKEYCHAIN_PKCS11_MAX_LABEL, &label, &o.label_size);
    o.id = id;
    o.label = label;
    int skip = 0;
    if (rv == CKR_OK && object_class == CKO_CERTIFICATE) {
        o.object_class = CKEYCHAIN_PKCS11_CERTIFICATE;
        rv = read_bytes(s, object, CKA_VALUE, CKEYCHAIN_PKCS11_MAX_CERTIFICATE, &certificate, &o.certificate_size);
        o.certificate = certificate;
        skip = certificate == NULL;
    } else if (rv == CKR_OK) {
        o.object_class = object_class == CKO_PRIVATE_KEY ? CKEYCHAIN_PKCS11_PRIVATE_KEY : CKEYCHAIN_PKCS11_PUBLIC_KEY;
        CK_ULONG key_type = CKK_VENDOR_DEFINED;
        read_ulong(s, object, CKA_KEY_TYPE, &key_type);
        o.raw_key_type = key_type;
        o.key_type = key_type == CKK_RSA ? CKEYCHAIN_PKCS11_KEY_RSA : key_type == CKK_EC ? CKEYCHAIN_PKCS11_KEY_EC : CKEYCHAIN_PKCS11_KEY_OTHER;
        int is_private = object_class == CKO_PRIVATE_KEY;
        o.key_flags = (read_bool(s, object, CKA_PRIVATE, is_private) ? CKEYCHAIN_PKCS11_KEY_PRIVATE : 0);
        if (is_private) {
            o.key_flags |= (read_bool(s, object, CKA_SIGN, 0) ? CKEYCHAIN_PKCS11_KEY_SIGN : 0) |
                (read_bool(s, object, CKA_DECRYPT, 0) ? CKEYCHAIN_PKCS11_KEY_DECRYPT : 0) |
                (read_bool(s, object, CKA_DERIVE, 0) ? CKEYCHAIN_PKCS11_KEY_DERIVE : 0) |
                (read_bool(s, object, CKA_UNWRAP, 0) ? CKEYCHAIN_PKCS11_KEY_UNWRAP : 0) |
                (read_bool(s, object, CKA_ALWAYS_AUTHENTICATE, 0) ? CKEYCHAIN_PKCS11_KEY_ALWAYS_AUTHENTICATE : 0) |
                (read_bool(s, object, CKA_SENSITIVE, 1) ? CKEYCHAIN_PKCS11_KEY_SENSITIVE : 0) |
                (read_bool(s, object, CKA_EXTRACTABLE, 0) ? CKEYCHAIN_PKCS11_KEY_EXTRACTABLE : 0);
        } else {
            o.key_flags |= (read_bool(s, object, CKA_VERIFY, 0) ? CKEYCHAIN_PKCS11_KEY_VERIFY : 0) |
                (read_bool(s, object, CKA_ENCRYPT, 0) ? CKEYCHAIN_PKCS11_KEY_ENCRYPT : 0) |
                (read_bool(s, object, CKA_WRAP, 0) ? CKEYCHAIN_PKCS11_KEY_WRAP : 0) |
                (read_bool(s, object, CKA_DERIVE, 0) ? CKEYCHAIN_PKCS11_KEY_DERIVE : 0);
        }
        if (key_type == CKK_RSA) {
            rv = read_bytes(s, object, CKA_MODULUS, CKEYCHAIN_PKCS11_MAX_KEY_PART, &modulus, &o.modulus_size);
            if (rv == CKR_OK) rv = read_bytes(s, object, CKA_PUBLIC_EXPONENT, CKEYCHAIN_PKCS11_MAX_KEY_PART, &exponent, &o.public_exponent_size);
        } else if (key_type == CKK_EC) {
            rv = read_bytes(s, object, CKA_EC_PARAMS, CKEYCHAIN_PKCS11_MAX_KEY_PART, &ec_params, &o.ec_params_size);
            if (rv == CKR_OK && !is_private) rv = read_bytes(s, object, CKA_EC_POINT, CKEYCHAIN_PKCS11_MAX_KEY_PART, &ec_point, &o.ec_point_size);
        }
        o.modulus = modulus;
        o.public_exponent = exponent;
        o.ec_params = ec_params;
        o.ec_point = ec_point;
    }
    if (rv == CKR_OK && !skip) callback(context, &o);
    free(id);
    free(label);
    free(certificate);
    free(modulus);
    free(exponent);
    free(ec_params);
    free(ec_point);
    return rv;
}

// The objects matching `template` (at most `max`), into `found`; their number into `*found_count`.
static CK_RV find_objects(session *s, CK_ATTRIBUTE *template, CK_ULONG template_count, CK_OBJECT_HANDLE *found, CK_ULONG max,
                          CK_ULONG *found_count) {
    *found_count = 0;
    CK_RV rv = s->module->C_FindObjectsInit(s->handle, template, template_count);
    if (rv != CKR_OK) return rv;
    while (*found_count < max) {
        CK_ULONG batch = 0;
        CK_ULONG room = max - *found_count;
        rv = s->module->C_FindObjects(s->handle, found + *found_count, room < 64 ? room : 64, &batch);
        if (rv != CKR_OK) break;
        if (batch == 0) break;
        if (batch > (room < 64 ? room : 64)) {
            rv = CKR_GENERAL_ERROR;
            break;
        }
        *found_count += batch;
    }
    CK_RV final_rv = s->module->C_FindObjectsFinal(s->handle);
    return rv != CKR_OK ? rv : final_rv;
}

ckeychain_pkcs11_result ckeychain_pkcs11_objects(ckeychain_pkcs11_registry *registry,
                                                 const ckeychain_pkcs11_token_ref *token,
                                                 void (*callback)(void *context, const ckeychain_pkcs11_object *object),
                                                 void *context) {
    static CK_OBJECT_HANDLE found[CKEYCHAIN_PKCS11_MAX_OBJECTS];
    pthread_mutex_lock(&registry_lock);
    session s;
    ckeychain_pkcs11_result r = open_session(registry, token, 0, &s);
    static const CK_OBJECT_CLASS classes[] = {CKO_CERTIFICATE, CKO_PRIVATE_KEY, CKO_PUBLIC_KEY};
    for (size_t c = 0; r.status == CKEYCHAIN_PKCS11_OK && c < sizeof classes / sizeof classes[0]; c++) {
        CK_OBJECT_CLASS object_class = classes[c];
        CK_CERTIFICATE_TYPE x509 = CKC_X_509;
        CK_ATTRIBUTE template[] = {
            {CKA_CLASS, &object_class, sizeof object_class},
            {CKA_CERTIFICATE_TYPE, &x509, sizeof x509},
        };
        CK_ULONG found_count = 0;
        CK_RV rv = find_objects(&s, template, object_class == CKO_CERTIFICATE ? 2 : 1, found, CKEYCHAIN_PKCS11_MAX_OBJECTS, &found_count);
        if (rv != CKR_OK) {
            r = fail_rv(rv, "C_FindObjects");
            break;
        }
        for (CK_ULONG i = 0; i < found_count; i++) {
            rv = report_object(&s, found[i], object_class, callback, context);
            // An object removed meanwhile is passed over.
            if (rv != CKR_OK && rv != CKR_OBJECT_HANDLE_INVALID) {
                r = fail_rv(rv, "C_GetAttributeValue");
                break;
            }
        }
    }
    close_session(&s);
    pthread_mutex_unlock(&registry_lock);
    return r;
}

ckeychain_pkcs11_result ckeychain_pkcs11_login(ckeychain_pkcs11_registry *registry,
                                               const ckeychain_pkcs11_token_ref *token) {
    if (token->pin == NULL) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "no PIN given");
    pthread_mutex_lock(&registry_lock);
    session s;
    ckeychain_pkcs11_result r = open_session(registry, token, 0, &s);
    close_session(&s);
    pthread_mutex_unlock(&registry_lock);
    return r;
}

// ---- Keys ----

// The private key with CKA_ID `id` (the first, if several have it), and whether it has CKA_ALWAYS_AUTHENTICATE.
static ckeychain_pkcs11_result find_private_key(session *s, const uint8_t *id, size_t id_size, CK_OBJECT_HANDLE *key,
                                                int *always_authenticate) {
    if (id == NULL || id_size == 0 || id_size > CKEYCHAIN_PKCS11_MAX_ID) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "a key's CKA_ID has 1 to 255 bytes");
    }
    CK_OBJECT_CLASS private_key = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &private_key, sizeof private_key},
        {CKA_ID, (void *)id, id_size},
    };
    CK_OBJECT_HANDLE found[1];
    CK_ULONG found_count = 0;
    CK_RV rv = find_objects(s, template, 2, found, 1, &found_count);
    if (rv != CKR_OK) return fail_rv(rv, "C_FindObjects");
    if (found_count == 0 && !s->logged_in && (s->info.flags & CKF_LOGIN_REQUIRED)) {
        // Private keys of such a token are CKA_PRIVATE, seen only after login: the key may well be there.
        return fail(CKEYCHAIN_PKCS11_NOT_LOGGED_IN, CKR_OK, "no private key with this CKA_ID is visible without the token's PIN");
    }
    if (found_count == 0) return fail(CKEYCHAIN_PKCS11_OBJECT_NOT_FOUND, CKR_OK, "no private key with this CKA_ID on the token");
    *key = found[0];
    *always_authenticate = read_bool(s, found[0], CKA_ALWAYS_AUTHENTICATE, 0);
    return ok();
}

static int hash_mechanism(int hash, CK_MECHANISM_TYPE *mechanism, CK_RSA_PKCS_MGF_TYPE *mgf) {
    switch (hash) {
    case CKEYCHAIN_PKCS11_SHA1: *mechanism = CKM_SHA_1; *mgf = CKG_MGF1_SHA1; return 1;
    case CKEYCHAIN_PKCS11_SHA224: *mechanism = CKM_SHA224; *mgf = CKG_MGF1_SHA224; return 1;
    case CKEYCHAIN_PKCS11_SHA256: *mechanism = CKM_SHA256; *mgf = CKG_MGF1_SHA256; return 1;
    case CKEYCHAIN_PKCS11_SHA384: *mechanism = CKM_SHA384; *mgf = CKG_MGF1_SHA384; return 1;
    case CKEYCHAIN_PKCS11_SHA512: *mechanism = CKM_SHA512; *mgf = CKG_MGF1_SHA512; return 1;
    default: return 0;
    }
}

// What runs a sign or decrypt: C_SignInit/C_Sign or C_DecryptInit/C_Decrypt.
typedef enum { SIGN, DECRYPT } operation;

static ckeychain_pkcs11_result sign_or_decrypt(operation op, ckeychain_pkcs11_registry *registry,
                                               const ckeychain_pkcs11_token_ref *token, const uint8_t *key_id, size_t key_id_size,
                                               const ckeychain_pkcs11_mechanism *mechanism, const uint8_t *input, size_t input_size,
                                               uint8_t *output, size_t output_capacity, size_t *output_size) {
    *output_size = 0;
    if (input_size > CKEYCHAIN_PKCS11_MAX_DATA || (input == NULL && input_size != 0)) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "the input is longer than any RSA or EC key takes");
    }
    CK_MECHANISM m = {0, NULL, 0};
    CK_RSA_PKCS_PSS_PARAMS pss;
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    memset(&pss, 0, sizeof pss);
    memset(&oaep, 0, sizeof oaep);
    switch (mechanism->type) {
    case CKEYCHAIN_PKCS11_RSA_PKCS: m.mechanism = CKM_RSA_PKCS; break;
    case CKEYCHAIN_PKCS11_RSA_X_509: m.mechanism = CKM_RSA_X_509; break;
    case CKEYCHAIN_PKCS11_ECDSA:
        if (op != SIGN) return fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_OK, "CKM_ECDSA only signs");
        m.mechanism = CKM_ECDSA;
        break;
    case CKEYCHAIN_PKCS11_RSA_PKCS_PSS:
        if (op != SIGN) return fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_OK, "CKM_RSA_PKCS_PSS only signs");
        if (!hash_mechanism(mechanism->hash, &pss.hashAlg, &pss.mgf)) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "PSS needs a hash");
        if (mechanism->salt_size > CKEYCHAIN_PKCS11_MAX_DATA) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "the salt is too long");
        pss.sLen = mechanism->salt_size;
        m.mechanism = CKM_RSA_PKCS_PSS;
        m.pParameter = &pss;
        m.ulParameterLen = sizeof pss;
        break;
    case CKEYCHAIN_PKCS11_RSA_PKCS_OAEP:
        if (op != DECRYPT) return fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_OK, "CKM_RSA_PKCS_OAEP only decrypts");
        if (!hash_mechanism(mechanism->hash, &oaep.hashAlg, &oaep.mgf)) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "OAEP needs a hash");
        oaep.source = CKZ_DATA_SPECIFIED;
        m.mechanism = CKM_RSA_PKCS_OAEP;
        m.pParameter = &oaep;
        m.ulParameterLen = sizeof oaep;
        break;
    default: return fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_OK, "unknown mechanism");
    }
    pthread_mutex_lock(&registry_lock);
    session s;
    ckeychain_pkcs11_result r = open_session(registry, token, 0, &s);
    CK_OBJECT_HANDLE key = CK_INVALID_HANDLE;
    int always_authenticate = 0;
    if (r.status == CKEYCHAIN_PKCS11_OK) r = find_private_key(&s, key_id, key_id_size, &key, &always_authenticate);
    if (r.status == CKEYCHAIN_PKCS11_OK) {
        CK_RV rv = op == SIGN ? s.module->C_SignInit(s.handle, &m, key) : s.module->C_DecryptInit(s.handle, &m, key);
        if (rv == CKR_ARGUMENTS_BAD) {
            // The arguments at Init are the mechanism and its parameters: the token does not take them (SoftHSM
            // 2.6 answers so to OAEP with any hash but SHA-1).
            r = fail(CKEYCHAIN_PKCS11_UNSUPPORTED, rv, op == SIGN ? "C_SignInit: the token refuses this mechanism's parameters"
                                                                : "C_DecryptInit: the token refuses this mechanism's parameters");
        } else if (rv != CKR_OK) {
            r = fail_rv(rv, op == SIGN ? "C_SignInit" : "C_DecryptInit");
        } else if ((rv = context_login(&s, token, always_authenticate)) != CKR_OK) {
            r = fail_rv(rv, "C_Login (CKU_CONTEXT_SPECIFIC)");
        } else {
            // One call with the whole buffer (no size query first: some modules end the operation on it). The
            // length the module writes back must fit what it was given.
            CK_ULONG length = output_capacity;
            rv = op == SIGN ? s.module->C_Sign(s.handle, (CK_BYTE_PTR)input, input_size, output, &length)
                            : s.module->C_Decrypt(s.handle, (CK_BYTE_PTR)input, input_size, output, &length);
            if (rv == CKR_BUFFER_TOO_SMALL) {
                r = fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, rv, op == SIGN ? "C_Sign: the signature is larger than the buffer" : "C_Decrypt: the plaintext is larger than the buffer");
            } else if (rv != CKR_OK) {
                r = fail_rv(rv, op == SIGN ? "C_Sign" : "C_Decrypt");
            } else if (length > output_capacity) {
                memset(output, 0, output_capacity);
                r = fail(CKEYCHAIN_PKCS11_FAILED, CKR_OK, "the module reported a result larger than the buffer it was given");
            } else {
                *output_size = length;
            }
        }
    }
    close_session(&s);
    pthread_mutex_unlock(&registry_lock);
    return r;
}

ckeychain_pkcs11_result ckeychain_pkcs11_sign(ckeychain_pkcs11_registry *registry, const ckeychain_pkcs11_token_ref *token,
                                              const uint8_t *key_id, size_t key_id_size, const ckeychain_pkcs11_mechanism *mechanism,
                                              const uint8_t *input, size_t input_size,
                                              uint8_t *output, size_t output_capacity, size_t *output_size) {
    return sign_or_decrypt(SIGN, registry, token, key_id, key_id_size, mechanism, input, input_size, output, output_capacity, output_size);
}

ckeychain_pkcs11_result ckeychain_pkcs11_decrypt(ckeychain_pkcs11_registry *registry, const ckeychain_pkcs11_token_ref *token,
                                                 const uint8_t *key_id, size_t key_id_size, const ckeychain_pkcs11_mechanism *mechanism,
                                                 const uint8_t *input, size_t input_size,
                                                 uint8_t *output, size_t output_capacity, size_t *output_size) {
    return sign_or_decrypt(DECRYPT, registry, token, key_id, key_id_size, mechanism, input, input_size, output, output_capacity, output_size);
}

ckeychain_pkcs11_result ckeychain_pkcs11_derive_ecdh(ckeychain_pkcs11_registry *registry, const ckeychain_pkcs11_token_ref *token,
                                                     const uint8_t *key_id, size_t key_id_size,
                                                     const uint8_t *peer_point, size_t peer_point_size,
                                                     uint8_t *output, size_t output_capacity, size_t *output_size) {
    *output_size = 0;
    // 04‖X‖Y of P-256 to P-521.
    if (peer_point == NULL || peer_point_size < 3 || peer_point_size > 133 || peer_point[0] != 0x04 || peer_point_size % 2 == 0) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "the other party's key is not an uncompressed EC point (04‖X‖Y)");
    }
    CK_ECDH1_DERIVE_PARAMS ecdh;
    memset(&ecdh, 0, sizeof ecdh);
    ecdh.kdf = CKD_NULL;
    ecdh.pPublicData = (CK_BYTE_PTR)peer_point;
    ecdh.ulPublicDataLen = peer_point_size;
    CK_MECHANISM m = {CKM_ECDH1_DERIVE, &ecdh, sizeof ecdh};
    CK_OBJECT_CLASS secret_key = CKO_SECRET_KEY;
    CK_KEY_TYPE generic = CKK_GENERIC_SECRET;
    CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
    // The secret is as long as a coordinate; a token that wants CKA_VALUE_LEN gets it on a second try.
    CK_ULONG coordinate = (peer_point_size - 1) / 2;
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &secret_key, sizeof secret_key},
        {CKA_KEY_TYPE, &generic, sizeof generic},
        {CKA_TOKEN, &no, sizeof no},
        {CKA_SENSITIVE, &no, sizeof no},
        {CKA_EXTRACTABLE, &yes, sizeof yes},
        {CKA_VALUE_LEN, &coordinate, sizeof coordinate},
    };
    pthread_mutex_lock(&registry_lock);
    session s;
    ckeychain_pkcs11_result r = open_session(registry, token, 0, &s);
    CK_OBJECT_HANDLE key = CK_INVALID_HANDLE;
    int always_authenticate = 0;
    if (r.status == CKEYCHAIN_PKCS11_OK) r = find_private_key(&s, key_id, key_id_size, &key, &always_authenticate);
    if (r.status == CKEYCHAIN_PKCS11_OK) {
        CK_OBJECT_HANDLE derived = CK_INVALID_HANDLE;
        CK_RV rv = s.module->C_DeriveKey(s.handle, &m, key, template, 5, &derived);
        if (rv == CKR_TEMPLATE_INCOMPLETE) rv = s.module->C_DeriveKey(s.handle, &m, key, template, 6, &derived);
        if (rv == CKR_USER_NOT_LOGGED_IN && always_authenticate && token->pin != NULL) {
            // C_DeriveKey has no Init for a context-specific login to follow; log in again before it.
            rv = context_login(&s, token, 1);
            if (rv == CKR_OK) rv = s.module->C_DeriveKey(s.handle, &m, key, template, 5, &derived);
        }
        if (rv != CKR_OK) {
            r = fail_rv(rv, "C_DeriveKey (CKM_ECDH1_DERIVE)");
        } else {
            uint8_t *secret = NULL;
            size_t secret_size = 0;
            rv = read_bytes(&s, derived, CKA_VALUE, CKEYCHAIN_PKCS11_MAX_DATA, &secret, &secret_size);
            if (rv != CKR_OK) {
                r = fail_rv(rv, "C_GetAttributeValue (the derived secret)");
            } else if (secret == NULL) {
                r = fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_ATTRIBUTE_SENSITIVE, "the token keeps the derived secret sensitive");
            } else if (secret_size > output_capacity) {
                r = fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "the shared secret is larger than the buffer");
            } else {
                memcpy(output, secret, secret_size);
                *output_size = secret_size;
            }
            if (secret) {
                memset(secret, 0, secret_size);
                free(secret);
            }
            s.module->C_DestroyObject(s.handle, derived);
        }
    }
    close_session(&s);
    pthread_mutex_unlock(&registry_lock);
    return r;
}

ckeychain_pkcs11_result ckeychain_pkcs11_generate_key_pair(ckeychain_pkcs11_registry *registry,
                                                           const ckeychain_pkcs11_token_ref *token,
                                                           const ckeychain_pkcs11_key_spec *spec,
                                                           void (*callback)(void *context, const ckeychain_pkcs11_object *object),
                                                           void *context) {
    static const uint8_t p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    static const uint8_t p384[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};
    static const uint8_t p521[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23};
    static CK_BYTE f4[] = {0x01, 0x00, 0x01};
    if (token->pin == NULL) return fail(CKEYCHAIN_PKCS11_NOT_LOGGED_IN, CKR_OK, "generating a key pair needs the token's PIN");
    if (spec->id == NULL || spec->id_size == 0 || spec->id_size > CKEYCHAIN_PKCS11_MAX_ID) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "a key's CKA_ID has 1 to 255 bytes");
    }
    if ((spec->label == NULL && spec->label_size != 0) || spec->label_size > CKEYCHAIN_PKCS11_MAX_LABEL) {
        return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "a key's label has at most 255 bytes");
    }
    CK_MECHANISM m = {0, NULL, 0};
    const uint8_t *curve = NULL;
    size_t curve_size = 0;
    CK_ULONG modulus_bits = spec->bits;
    if (spec->key_type == CKEYCHAIN_PKCS11_KEY_RSA) {
        if (spec->bits < 1024 || spec->bits > 8192) return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "RSA keys have 1024 to 8192 bits");
        m.mechanism = CKM_RSA_PKCS_KEY_PAIR_GEN;
    } else if (spec->key_type == CKEYCHAIN_PKCS11_KEY_EC) {
        switch (spec->bits) {
        case 256: curve = p256; curve_size = sizeof p256; break;
        case 384: curve = p384; curve_size = sizeof p384; break;
        case 521: curve = p521; curve_size = sizeof p521; break;
        default: return fail(CKEYCHAIN_PKCS11_INVALID_ARGUMENT, CKR_OK, "EC keys are P-256, P-384 or P-521");
        }
        m.mechanism = CKM_EC_KEY_PAIR_GEN;
    } else {
        return fail(CKEYCHAIN_PKCS11_UNSUPPORTED, CKR_OK, "only RSA and EC key pairs are generated");
    }
    int rsa = spec->key_type == CKEYCHAIN_PKCS11_KEY_RSA;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_BYTE empty = 0;
    void *label = spec->label_size ? (void *)spec->label : &empty;
    CK_ATTRIBUTE public_template[] = {
        {CKA_TOKEN, &yes, sizeof yes},
        {CKA_PRIVATE, &no, sizeof no},
        {CKA_LABEL, label, spec->label_size},
        {CKA_ID, (void *)spec->id, spec->id_size},
        {CKA_VERIFY, &yes, sizeof yes},
        // RSA: encrypt, the modulus size and exponent; EC: the curve.
        {rsa ? CKA_ENCRYPT : CKA_EC_PARAMS, rsa ? (void *)&yes : (void *)curve, rsa ? sizeof yes : curve_size},
        {CKA_MODULUS_BITS, &modulus_bits, sizeof modulus_bits},
        {CKA_PUBLIC_EXPONENT, f4, sizeof f4},
    };
    CK_ATTRIBUTE private_template[] = {
        {CKA_TOKEN, &yes, sizeof yes},
        {CKA_PRIVATE, &yes, sizeof yes},
        {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_EXTRACTABLE, &no, sizeof no},
        {CKA_LABEL, label, spec->label_size},
        {CKA_ID, (void *)spec->id, spec->id_size},
        {CKA_SIGN, &yes, sizeof yes},
        // RSA decrypts, EC derives (ECDH).
        {rsa ? CKA_DECRYPT : CKA_DERIVE, &yes, sizeof yes},
    };
    pthread_mutex_lock(&registry_lock);
    session s;
    ckeychain_pkcs11_result r = open_session(registry, token, 1, &s);
    if (r.status == CKEYCHAIN_PKCS11_OK) {
        CK_OBJECT_HANDLE existing = CK_INVALID_HANDLE;
        int always_authenticate = 0;
        r = find_private_key(&s, spec->id, spec->id_size, &existing, &always_authenticate);
        if (r.status == CKEYCHAIN_PKCS11_OK) {
            r = fail(CKEYCHAIN_PKCS11_DUPLICATE, CKR_OK, "a private key with this CKA_ID is already on the token");
        } else if (r.status == CKEYCHAIN_PKCS11_OBJECT_NOT_FOUND) {
            CK_OBJECT_HANDLE public_key = CK_INVALID_HANDLE, private_key = CK_INVALID_HANDLE;
            CK_RV rv = s.module->C_GenerateKeyPair(s.handle, &m, public_template, rsa ? 8 : 6, private_template, 8, &public_key, &private_key);
            if (rv != CKR_OK) {
                r = fail_rv(rv, "C_GenerateKeyPair");
            } else {
                r = ok();
                rv = report_object(&s, private_key, CKO_PRIVATE_KEY, callback, context);
                if (rv == CKR_OK) rv = report_object(&s, public_key, CKO_PUBLIC_KEY, callback, context);
                if (rv != CKR_OK) r = fail_rv(rv, "C_GetAttributeValue (the new keys)");
            }
        }
    }
    close_session(&s);
    pthread_mutex_unlock(&registry_lock);
    return r;
}
