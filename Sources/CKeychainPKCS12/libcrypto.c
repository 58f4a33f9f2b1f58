#include "libcrypto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// libcrypto is opened on the first call that needs it (a PKCS#12 file, an RSA operation, a SHA-224 digest, a Secret
// Service Diffie-Hellman exchange), not when the program starts: loading and relocating it took about a tenth of
// every tool's start.

struct ckeychain_crypto_table ckeychain_crypto;

#define CKEYCHAIN_STRING(x) #x
#define CKEYCHAIN_EXPAND_STRING(x) CKEYCHAIN_STRING(x)
/// The libcrypto this file was compiled against ("libcrypto.so.3" for OpenSSL 3).
#define CKEYCHAIN_LIBCRYPTO "libcrypto.so." CKEYCHAIN_EXPAND_STRING(OPENSSL_SHLIB_VERSION)

static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static int crypto_loaded;
static char crypto_failure[200];

// Opens libcrypto (searched for as the dynamic linker would at start: LD_LIBRARY_PATH, the program's RUNPATH, the
// system's folders) and loads OpenSSL 3's legacy provider for RC2 (legacy PKCS#12 files), which also requires
// loading the default one. The library stays open for the life of the process.
static void load_crypto(void) {
    void *library = dlopen(CKEYCHAIN_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(crypto_failure, sizeof crypto_failure, "%s", why ? why : "dlopen failed");
        return;
    }
#define CKEYCHAIN_CRYPTO_LOAD(name) \
    if ((ckeychain_crypto.name = (__typeof__(ckeychain_crypto.name))dlsym(library, #name)) == NULL) { \
        snprintf(crypto_failure, sizeof crypto_failure, "%s has no %s", CKEYCHAIN_LIBCRYPTO, #name); \
        return; \
    }
    CKEYCHAIN_CRYPTO_FUNCTIONS(CKEYCHAIN_CRYPTO_LOAD)
#undef CKEYCHAIN_CRYPTO_LOAD
    ckeychain_crypto.OSSL_PROVIDER_load(NULL, "legacy");
    ckeychain_crypto.OSSL_PROVIDER_load(NULL, "default");
    crypto_loaded = 1;
}

int ckeychain_crypto_load(void) {
    pthread_once(&crypto_once, load_crypto);
    return crypto_loaded;
}

int ckeychain_crypto_loaded(void) { return crypto_loaded; }

void ckeychain_crypto_unavailable(char *error, size_t error_length) {
    if (error == NULL || error_length == 0) return;
    snprintf(error, error_length, "OpenSSL's libcrypto (%s) could not be loaded: %s. Install OpenSSL 3 (Debian: libssl3).",
             CKEYCHAIN_LIBCRYPTO, crypto_failure);
}

void ckeychain_crypto_reason(char *error, size_t error_length, const char *what) {
    if (error != NULL && error_length > 0) {
        unsigned long code = ckeychain_crypto.ERR_peek_last_error();
        if (code != 0) {
            char reason[200];
            ckeychain_crypto.ERR_error_string_n(code, reason, sizeof reason);
            snprintf(error, error_length, "%s (%s)", what, reason);
        } else {
            snprintf(error, error_length, "%s", what);
        }
    }
    ckeychain_crypto.ERR_clear_error();
}
