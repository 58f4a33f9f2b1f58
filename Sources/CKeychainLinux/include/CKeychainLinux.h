#ifndef CKEYCHAIN_LINUX_H
#define CKEYCHAIN_LINUX_H

/// The credentials the kernel recorded for a Unix-socket peer when it connected (`struct ucred`).
typedef struct {
    int pid;
    unsigned int uid;
    unsigned int gid;
} ckeychain_peer_credentials;

/// Reads SO_PEERCRED for a connected Unix-domain socket. Returns 0, or -1 with errno set.
int ckeychain_peer_credentials_of(int fd, ckeychain_peer_credentials *out);

/// SO_PEERCRED's option number (0 where the platform has none).
int ckeychain_so_peercred(void);

/// Makes the process non-dumpable: no core files, and no ptrace or /proc/PID/mem by other processes of the
/// same user. Returns 0, or -1 with errno set.
int ckeychain_set_nondumpable(void);

/// Whether the process is dumpable (1), not (0), or unknown (-1).
int ckeychain_is_dumpable(void);

#endif
