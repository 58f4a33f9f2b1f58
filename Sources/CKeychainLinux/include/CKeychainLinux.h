#ifndef CKEYCHAIN_LINUX_H
#define CKEYCHAIN_LINUX_H

#include <spawn.h>

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

/// Who sent the bytes of one receive, as the kernel attached them (`SCM_CREDENTIALS`): the sender's process id
/// (in the receiver's pid namespace), real uid and real gid. `present` is 0 when the bytes came without them.
typedef struct {
    int pid;
    unsigned int uid;
    unsigned int gid;
    int present;
} ckeychain_sender;

/// Asks the kernel to attach the sender's credentials to every message received on `fd` (`SO_PASSCRED`).
/// Returns 0, or -1 with errno set.
int ckeychain_enable_passcred(int fd);

/// Receives up to `length` bytes from a stream socket with the sender's credentials (`recvmsg`, one sender's bytes
/// per call). File descriptors a peer passes (`SCM_RIGHTS`) are closed at once and reported through
/// `passed_descriptors`. Returns the byte count (0 at end of stream), or -1 with errno set.
long ckeychain_receive(int fd, void *buffer, unsigned long length, ckeychain_sender *sender, int *passed_descriptors);

/// A pidfd for the process that connected a Unix socket, taken by the kernel at connect (`SO_PEERPIDFD`, Linux
/// 6.5+). Returns the descriptor (close-on-exec), or -1 with errno set.
int ckeychain_peer_pidfd(int fd);

/// A pidfd for process `pid` (`pidfd_open`). Returns the descriptor, or -1 with errno set.
int ckeychain_pidfd_open(int pid);

/// Whether the process behind a pidfd is still running: 1 yes, 0 it has exited, -1 with errno set.
int ckeychain_pidfd_is_running(int pidfd);

/// The bytes waiting unread in a socket's receive queue (`SIOCINQ`), or -1 with errno set.
int ckeychain_pending_bytes(int fd);

/// Fills `buffer` with up to `length` bytes from the kernel's random generator (getrandom(2), blocking only until
/// the generator is first seeded). Returns how many bytes were written, or -1 with errno set (ENOSYS where there is
/// no getrandom).
long ckeychain_random(void *buffer, unsigned long length);

/// Sets how long one receive may wait (`SO_RCVTIMEO`); 0 waits for ever. Returns 0, or -1 with errno set.
int ckeychain_set_receive_timeout(int fd, long milliseconds);

/// Sets how long one send may wait (`SO_SNDTIMEO`); 0 waits for ever. Returns 0, or -1 with errno set.
int ckeychain_set_send_timeout(int fd, long milliseconds);

/// Accepts a connection on a listening socket, close-on-exec (`accept4`). Returns the descriptor, or -1 with errno.
int ckeychain_accept(int fd);

/// Copies `length` bytes at `address` in process `pid`'s memory into `buffer` (`process_vm_readv`; the caller
/// must be allowed to ptrace-attach to it: the same user, or CAP_SYS_PTRACE). Returns the bytes copied (fewer at an
/// unmapped page), or -1 with errno set.
long ckeychain_read_process_memory(int pid, unsigned long address, void *buffer, unsigned long length);

/// Gives the heap's free pages back to the kernel (glibc's malloc_trim(0), in every arena): after a large answer whose
/// memory is freed, so that it does not stay in the process's resident set. Returns 1 when memory was released, 0
/// when none could be (and where the C library has no such call).
int ckeychain_release_free_memory(void);

/// Adds to `actions` the closing of every descriptor from `from` up in the child (glibc 2.34's
/// `posix_spawn_file_actions_addclosefrom_np`, declared only under _GNU_SOURCE). Returns 0, or an error number
/// (ENOSYS where the C library has none).
int ckeychain_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int from);

/// glibc's `POSIX_SPAWN_SETSID` flag (the child starts a session of its own), or 0 where the C library has none.
short ckeychain_spawn_setsid_flag(void);

/// Starts `path` detached from this process: in a session of its own, as a grandchild (so it is never this
/// process's zombie), with standard input from /dev/null, standard output and error on `log_fd`, `ready_fd` as its
/// descriptor 3 and no other descriptor. Waits only for the intermediate child. Returns 0, or an error number.
int ckeychain_spawn_detached(const char *path, char *const argv[], char *const envp[], int ready_fd, int log_fd);

/// Makes a pipe whose two ends are close-on-exec (`pipe2(O_CLOEXEC)`). Returns 0, or -1 with errno set.
int ckeychain_pipe_cloexec(int fds[2]);

/// One file-backed executable mapping of a process, as `PROCMAP_QUERY` reports it.
typedef struct {
    unsigned long long start;
    unsigned long long end;
    unsigned long long inode;
    unsigned int dev_major;
    unsigned int dev_minor;
} ckeychain_code_mapping;

/// The first file-backed executable mapping at or above `address` of the process whose `/proc/PID/maps` is open at
/// `maps_fd` (`PROCMAP_QUERY`, Linux 6.11+), with its file's path in `name` (up to `name_size` bytes, NUL-ended)
/// when `name` is not NULL. Returns 0, 1 when there is none, or -1 with errno set (ENOTTY or EINVAL: a kernel
/// without `PROCMAP_QUERY`).
int ckeychain_next_code_mapping(int maps_fd, unsigned long long address, ckeychain_code_mapping *out, char *name, unsigned int name_size);

#endif
