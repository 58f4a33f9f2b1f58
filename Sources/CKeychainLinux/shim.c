// struct ucred and SO_PEERCRED need _GNU_SOURCE; it is defined here only, so the header Swift imports stays
// free of feature macros (which would change glibc's types under Swift's other modules).
#define _GNU_SOURCE
#include "CKeychainLinux.h"
#include <sys/types.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <spawn.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/random.h>
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

#ifdef __linux__
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <linux/sockios.h>
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#endif

int ckeychain_enable_passcred(int fd) {
#ifdef __linux__
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
#else
    (void)fd;
    errno = ENOTSUP;
    return -1;
#endif
}

long ckeychain_receive(int fd, void *buffer, unsigned long length, ckeychain_sender *sender, int *passed_descriptors) {
#ifdef __linux__
    // Room for the credentials and a few descriptors: any descriptor that arrives is closed below, and those that
    // do not fit are discarded by the kernel (MSG_CTRUNC).
    union {
        char bytes[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } control;
    struct iovec io = { .iov_base = buffer, .iov_len = length };
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof(control.bytes);
    sender->present = 0;
    *passed_descriptors = 0;
    ssize_t n = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof(cred));
            sender->pid = cred.pid;
            sender->uid = cred.uid;
            sender->gid = cred.gid;
            sender->present = 1;
        } else if (c->cmsg_type == SCM_RIGHTS) {
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                close(passed);
                *passed_descriptors += 1;
            }
        }
    }
    if (message.msg_flags & MSG_CTRUNC) *passed_descriptors += 1;
    return (long)n;
#else
    (void)fd; (void)buffer; (void)length; (void)sender; (void)passed_descriptors;
    errno = ENOTSUP;
    return -1;
#endif
}

int ckeychain_peer_pidfd(int fd) {
#ifdef __linux__
    int pidfd = -1;
    socklen_t length = sizeof(pidfd);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) != 0) return -1;
    return pidfd;
#else
    (void)fd;
    errno = ENOTSUP;
    return -1;
#endif
}

int ckeychain_pidfd_open(int pid) {
#ifdef __linux__
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOTSUP;
    return -1;
#endif
}

int ckeychain_pidfd_is_running(int pidfd) {
#ifdef __linux__
    // A pidfd polls readable once its process has exited.
    struct pollfd p = { .fd = pidfd, .events = POLLIN, .revents = 0 };
    int n;
    do { n = poll(&p, 1, 0); } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if (p.revents & POLLNVAL) { errno = EBADF; return -1; }
    return n == 0 ? 1 : 0;
#else
    (void)pidfd;
    errno = ENOTSUP;
    return -1;
#endif
}

int ckeychain_pending_bytes(int fd) {
#ifdef __linux__
    int count = 0;
    if (ioctl(fd, SIOCINQ, &count) != 0) return -1;
    return count;
#else
    (void)fd;
    errno = ENOTSUP;
    return -1;
#endif
}

static int set_timeout(int fd, int option, long milliseconds) {
    struct timeval tv = { .tv_sec = milliseconds / 1000, .tv_usec = (milliseconds % 1000) * 1000 };
    return setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

int ckeychain_set_receive_timeout(int fd, long milliseconds) { return set_timeout(fd, SO_RCVTIMEO, milliseconds); }

int ckeychain_set_send_timeout(int fd, long milliseconds) { return set_timeout(fd, SO_SNDTIMEO, milliseconds); }

int ckeychain_accept(int fd) {
#ifdef __linux__
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
#else
    return accept(fd, NULL, NULL);
#endif
}

long ckeychain_random(void *buffer, unsigned long length) {
#ifdef __linux__
    return (long)getrandom(buffer, length, 0);
#else
    (void)buffer; (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

int ckeychain_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
#else
    (void)actions;
    (void)from;
    return ENOSYS;
#endif
}

short ckeychain_spawn_setsid_flag(void) {
#ifdef POSIX_SPAWN_SETSID
    return POSIX_SPAWN_SETSID;
#else
    return 0;
#endif
}

#ifdef __linux__
#include <sys/wait.h>
#include <sys/syscall.h>
#include <fcntl.h>
#endif

int ckeychain_spawn_detached(const char *path, char *const argv[], char *const envp[], int ready_fd, int log_fd) {
#ifdef __linux__
    // Everything the children call is async-signal-safe: this process may have other threads.
    pid_t middle = fork();
    if (middle < 0) return errno;
    if (middle == 0) {
        if (setsid() < 0) _exit(127);
        pid_t daemon = fork();
        if (daemon < 0) _exit(127);
        if (daemon > 0) _exit(0);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0) _exit(127);
        // Move the descriptors the daemon keeps to 0, 1, 2 and 3 (dup2 clears close-on-exec on the copies).
        int ready = fcntl(ready_fd, F_DUPFD_CLOEXEC, 10);
        int log = fcntl(log_fd, F_DUPFD_CLOEXEC, 10);
        if (ready < 0 || log < 0) _exit(127);
        if (dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 || dup2(ready, 3) < 0) _exit(127);
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
            for (int fd = 4; fd < 65536; fd++) close(fd);
        }
#else
        for (int fd = 4; fd < 65536; fd++) close(fd);
#endif
        execve(path, argv, envp);
        _exit(127);
    }
    int status = 0;
    while (waitpid(middle, &status, 0) < 0) {
        if (errno != EINTR) return errno;
    }
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : ECHILD;
#else
    (void)path; (void)argv; (void)envp; (void)ready_fd; (void)log_fd;
    return ENOSYS;
#endif
}

int ckeychain_pipe_cloexec(int fds[2]) {
#ifdef __linux__
    return pipe2(fds, O_CLOEXEC);
#else
    (void)fds;
    errno = ENOSYS;
    return -1;
#endif
}

/// The kernel's `struct procmap_query` (include/uapi/linux/fs.h, Linux 6.11), declared here for older headers.
struct ckeychain_procmap_query {
    unsigned long long size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    unsigned int dev_major, dev_minor, vma_name_size, build_id_size;
    unsigned long long vma_name_addr, build_id_addr;
};

int ckeychain_next_code_mapping(int maps_fd, unsigned long long address, ckeychain_code_mapping *out, char *name, unsigned int name_size) {
#ifdef __linux__
    /* _IOWR('f', 17, struct procmap_query); flags: covering or next, executable, file-backed. */
    const unsigned long request = (3UL << 30) | ((unsigned long)sizeof(struct ckeychain_procmap_query) << 16) | ('f' << 8) | 17;
    struct ckeychain_procmap_query query;
    memset(&query, 0, sizeof query);
    query.size = sizeof query;
    query.query_flags = 0x10 | 0x04 | 0x20;
    query.query_addr = address;
    if (name != NULL && name_size > 0) {
        query.vma_name_addr = (unsigned long long)(unsigned long)name;
        query.vma_name_size = name_size;
    }
    if (ioctl(maps_fd, request, &query) != 0) return errno == ENOENT ? 1 : -1;
    out->start = query.vma_start;
    out->end = query.vma_end;
    out->inode = query.inode;
    out->dev_major = query.dev_major;
    out->dev_minor = query.dev_minor;
    if (name != NULL && name_size > 0 && query.vma_name_size == 0) name[0] = 0;
    return 0;
#else
    (void)maps_fd; (void)address; (void)out; (void)name; (void)name_size;
    errno = ENOTTY;
    return -1;
#endif
}
