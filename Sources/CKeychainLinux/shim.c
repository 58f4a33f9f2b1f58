// struct ucred and SO_PEERCRED need _GNU_SOURCE; it is defined here only, so the header Swift imports stays
// free of feature macros (which would change glibc's types under Swift's other modules).
#define _GNU_SOURCE
#include "CKeychainLinux.h"
#include <sys/types.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

_Static_assert(sizeof(ckeychain_peer_credentials) == 12, "layout of struct ucred");

int ckeychain_peer_credentials_of(int fd, ckeychain_peer_credentials *out) {
#ifdef __linux__
    struct ucred cred;
    socklen_t length = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    out->pid = cred.pid;
    out->uid = cred.uid;
    out->gid = cred.gid;
    return 0;
#else
    (void)fd; (void)out;
    return -1;
#endif
}

int ckeychain_so_peercred(void) {
#ifdef __linux__
    return SO_PEERCRED;
#else
    return 0;
#endif
}

int ckeychain_set_nondumpable(void) {
#ifdef __linux__
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#else
    return 0;
#endif
}

int ckeychain_is_dumpable(void) {
#ifdef __linux__
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
#else
    return -1;
#endif
}
