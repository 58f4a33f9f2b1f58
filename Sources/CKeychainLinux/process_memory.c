// process_vm_readv needs _GNU_SOURCE; it is defined here only (as in shim.c), so the header Swift imports stays
// free of feature macros.
#define _GNU_SOURCE
#include "CKeychainLinux.h"
#include <errno.h>
#include <sys/types.h>
#ifdef __linux__
#include <sys/uio.h>
#endif

long ckeychain_read_process_memory(int pid, unsigned long address, void *buffer, unsigned long length) {
#ifdef __linux__
    struct iovec local = { .iov_base = buffer, .iov_len = length };
    struct iovec remote = { .iov_base = (void *)address, .iov_len = length };
    return (long)process_vm_readv(pid, &local, 1, &remote, 1, 0);
#else
    (void)pid; (void)address; (void)buffer; (void)length;
    errno = ENOTSUP;
    return -1;
#endif
}
