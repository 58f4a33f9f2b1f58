#include "CKeychainImport.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// zlib's stream state, laid out as zlib 1.2.x and 1.3.x declare z_stream (the layout is part of zlib's stable ABI and
// is checked by inflateInit2_ through the size passed to it).
typedef struct ckeychain_z_stream {
    const unsigned char *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    unsigned char *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    void *state;
    void *(*zalloc)(void *opaque, unsigned int items, unsigned int size);
    void (*zfree)(void *opaque, void *address);
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} ckeychain_z_stream;

typedef int (*inflate_init2_function)(ckeychain_z_stream *stream, int window_bits, const char *version, int stream_size);
typedef int (*inflate_function)(ckeychain_z_stream *stream, int flush);
typedef int (*inflate_end_function)(ckeychain_z_stream *stream);

#define ZLIB_LIBRARY "libz.so.1"
// zlib only compares the first character of the version it is given with its own.
#define ZLIB_HEADER_VERSION "1.2.13"
#define Z_OK 0
#define Z_STREAM_END 1
#define Z_NEED_DICT 2
#define Z_BUF_ERROR (-5)
#define Z_MEM_ERROR (-4)
#define Z_NO_FLUSH 0

static pthread_once_t zlib_once = PTHREAD_ONCE_INIT;
static inflate_init2_function inflate_init2_pointer;
static inflate_function inflate_pointer;
static inflate_end_function inflate_end_pointer;
static char zlib_failure[256];

static void load_zlib(void) {
    void *library = dlopen(ZLIB_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(zlib_failure, sizeof zlib_failure, "%s", why ? why : "dlopen failed");
        return;
    }
    inflate_init2_function init = (inflate_init2_function)dlsym(library, "inflateInit2_");
    inflate_function step = (inflate_function)dlsym(library, "inflate");
    inflate_end_function end = (inflate_end_function)dlsym(library, "inflateEnd");
    if (init == NULL || step == NULL || end == NULL) {
        snprintf(zlib_failure, sizeof zlib_failure, "it lacks inflateInit2_, inflate or inflateEnd");
        return;
    }
    inflate_init2_pointer = init;
    inflate_pointer = step;
    inflate_end_pointer = end;
}

static int fail(char *error, size_t error_length, int code, const char *message, const char *detail) {
    if (error != NULL && error_length > 0) {
        if (detail != NULL) snprintf(error, error_length, "%s (%s)", message, detail);
        else snprintf(error, error_length, "%s", message);
    }
    return code;
}

int ckeychain_gunzip(const void *input, size_t input_length, size_t output_limit, void **output, size_t *output_length,
                     char *error, size_t error_length) {
    *output = NULL;
    *output_length = 0;
    pthread_once(&zlib_once, load_zlib);
    if (inflate_init2_pointer == NULL) {
        if (error != NULL && error_length > 0)
            snprintf(error, error_length, "The zlib library (%s) could not be loaded: %s. Install it (Debian: zlib1g).",
                     ZLIB_LIBRARY, zlib_failure);
        return CKEYCHAIN_IMPORT_UNAVAILABLE;
    }
    ckeychain_z_stream stream = {0};
    // 15 + 16: a 32 KiB window, gzip framing only.
    int status = inflate_init2_pointer(&stream, 15 + 16, ZLIB_HEADER_VERSION, (int)sizeof stream);
    if (status != Z_OK)
        return fail(error, error_length, status == Z_MEM_ERROR ? CKEYCHAIN_IMPORT_NO_MEMORY : CKEYCHAIN_IMPORT_BAD_INPUT,
                    "zlib could not start inflating", stream.msg);

    size_t capacity = input_length < 16384 ? 65536 : input_length * 4;
    if (capacity > output_limit) capacity = output_limit > 0 ? output_limit : 1;
    unsigned char *buffer = malloc(capacity);
    if (buffer == NULL) {
        inflate_end_pointer(&stream);
        return fail(error, error_length, CKEYCHAIN_IMPORT_NO_MEMORY, "out of memory", NULL);
    }
    size_t produced = 0;
    const unsigned char *next = input;
    size_t remaining = input_length;
    int result = CKEYCHAIN_IMPORT_OK;
    for (;;) {
        if (produced == capacity) {
            if (capacity >= output_limit) {
                result = fail(error, error_length, CKEYCHAIN_IMPORT_TOO_LARGE, "the decompressed data is too large", NULL);
                break;
            }
            size_t grown = capacity > output_limit / 2 ? output_limit : capacity * 2;
            unsigned char *larger = realloc(buffer, grown);
            if (larger == NULL) {
                result = fail(error, error_length, CKEYCHAIN_IMPORT_NO_MEMORY, "out of memory", NULL);
                break;
            }
            buffer = larger;
            capacity = grown;
        }
        // avail_in and avail_out are 32-bit: feed at most 1 GiB of either at a time.
        unsigned int in_chunk = remaining > (1u << 30) ? (1u << 30) : (unsigned int)remaining;
        size_t space = capacity - produced;
        unsigned int out_chunk = space > (1u << 30) ? (1u << 30) : (unsigned int)space;
        stream.next_in = next;
        stream.avail_in = in_chunk;
        stream.next_out = buffer + produced;
        stream.avail_out = out_chunk;
        status = inflate_pointer(&stream, Z_NO_FLUSH);
        size_t consumed = in_chunk - stream.avail_in;
        next += consumed;
        remaining -= consumed;
        produced += out_chunk - stream.avail_out;
        if (status == Z_STREAM_END) break;
        if (status == Z_BUF_ERROR && remaining == 0 && stream.avail_out > 0) {
            result = fail(error, error_length, CKEYCHAIN_IMPORT_BAD_INPUT, "the compressed data is truncated", NULL);
            break;
        }
        if (status != Z_OK && status != Z_BUF_ERROR) {
            result = fail(error, error_length, status == Z_MEM_ERROR ? CKEYCHAIN_IMPORT_NO_MEMORY : CKEYCHAIN_IMPORT_BAD_INPUT,
                          status == Z_NEED_DICT ? "the compressed data needs a dictionary" : "the compressed data is damaged",
                          stream.msg);
            break;
        }
        if (remaining == 0 && stream.avail_out > 0 && status == Z_OK && consumed == 0 && out_chunk == stream.avail_out) {
            result = fail(error, error_length, CKEYCHAIN_IMPORT_BAD_INPUT, "the compressed data is truncated", NULL);
            break;
        }
    }
    inflate_end_pointer(&stream);
    if (result != CKEYCHAIN_IMPORT_OK) {
        free(buffer);
        return result;
    }
    *output = buffer;
    *output_length = produced;
    return CKEYCHAIN_IMPORT_OK;
}

void ckeychain_import_free(void *buffer) { free(buffer); }
