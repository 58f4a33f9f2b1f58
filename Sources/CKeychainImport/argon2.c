#include "CKeychainImport.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// libargon2's argon2_hash and argon2_error_message, declared here from the library's documented ABI (argon2_type is
// an int-sized enum: 0 Argon2_d, 1 Argon2_i, 2 Argon2_id) so that argon2.h is not needed at build time.
typedef int (*argon2_hash_function)(const uint32_t t_cost, const uint32_t m_cost, const uint32_t parallelism,
                                    const void *pwd, const size_t pwdlen, const void *salt, const size_t saltlen,
                                    void *hash, const size_t hashlen, char *encoded, const size_t encodedlen,
                                    int type, const uint32_t version);
typedef const char *(*argon2_error_message_function)(int error_code);

#define ARGON2_LIBRARY "libargon2.so.1"

static pthread_once_t argon2_once = PTHREAD_ONCE_INIT;
static argon2_hash_function argon2_hash_pointer;
static argon2_error_message_function argon2_error_message_pointer;
static char argon2_failure[256];

static void load_argon2(void) {
    void *library = dlopen(ARGON2_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(argon2_failure, sizeof argon2_failure, "%s", why ? why : "dlopen failed");
        return;
    }
    argon2_error_message_pointer = (argon2_error_message_function)dlsym(library, "argon2_error_message");
    argon2_hash_pointer = (argon2_hash_function)dlsym(library, "argon2_hash");
    if (argon2_hash_pointer == NULL) snprintf(argon2_failure, sizeof argon2_failure, "it has no argon2_hash");
}

int ckeychain_argon2_hash(uint32_t t_cost, uint32_t m_cost_kib, uint32_t parallelism, const void *pwd, size_t pwdlen,
                          const void *salt, size_t saltlen, void *hash, size_t hashlen, int type, uint32_t version,
                          char *error, size_t error_length) {
    pthread_once(&argon2_once, load_argon2);
    if (argon2_hash_pointer == NULL) {
        if (error != NULL && error_length > 0)
            snprintf(error, error_length, "The Argon2 library (%s) could not be loaded: %s. Install it (Debian: libargon2-1).",
                     ARGON2_LIBRARY, argon2_failure);
        return CKEYCHAIN_IMPORT_UNAVAILABLE;
    }
    int result = argon2_hash_pointer(t_cost, m_cost_kib, parallelism, pwd, pwdlen, salt, saltlen, hash, hashlen, NULL, 0,
                                     type, version);
    if (result == 0) return CKEYCHAIN_IMPORT_OK;
    if (error != NULL && error_length > 0) {
        const char *why = argon2_error_message_pointer ? argon2_error_message_pointer(result) : NULL;
        snprintf(error, error_length, "Argon2 failed: %s (code %d)", why ? why : "unknown error", result);
    }
    // -22 is ARGON2_MEMORY_ALLOCATION_ERROR.
    return result == -22 ? CKEYCHAIN_IMPORT_NO_MEMORY : CKEYCHAIN_IMPORT_BAD_INPUT;
}
