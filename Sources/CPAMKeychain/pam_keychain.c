// pam_keychain.so: unlocks the login keychain with the login password, and re-wraps it (changes its passcode from
// the old password to the new) when the login password changes — what gnome-keyring's pam_gnome_keyring does for
// the login keyring.
//
//   auth      optional  pam_keychain.so   after pam_unix: keeps a copy of the password for the session (and
//                                         unlocks at once when a keychaind already listens: a screen unlock)
//   session   optional  pam_keychain.so   unlocks with the kept password, then wipes it
//   password  optional  pam_keychain.so   after pam_unix: re-wraps with the old and the new password
//
// Arguments: helper=PATH (the `security` beside keychaind; default /usr/local/bin/security; ~/PATH is in the user's
// home, for a per-user keychaind; a file of root or of the user that no one else may write), socket=PATH (the
// keychaind socket the helper talks to, as KEYCHAIN_DAEMON_SOCKET), set_if_none (a keychain with no passcode gets
// the login password as its passcode at login and at a password change), timeout=SECONDS (how long the helper may
// take; default 30).
//
// The module never fails a login or a password change (it returns PAM_IGNORE or PAM_SUCCESS), never logs a
// password (syslog gets outcomes only) and never puts one on a command line or in an environment: the helper runs
// as the user (supplementary groups, gid and uid of the user, no way back to root), with an environment of HOME,
// USER, LOGNAME, PATH and XDG_RUNTIME_DIR only, and reads the password(s) from its standard input.
#if defined(__linux__) // Linux-PAM's module API (pam_ext.h, pam_syslog); elsewhere this builds to an empty library.
#define _GNU_SOURCE
#include "pam_keychain.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define DEFAULT_HELPER "/usr/local/bin/security"
#define SYSTEM_SOCKET "/run/keychain/keychaind.sock"
#define KEPT_PASSWORD "pam_keychain_password"
#define UNLOCK_TRIED "pam_keychain_unlock_tried"
#define MAX_GROUPS 1024

struct options {
    const char *helper;
    const char *socket;
    int set_if_none;
    int timeout;
};

static int parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *options) {
    options->helper = DEFAULT_HELPER;
    options->socket = NULL;
    options->set_if_none = 0;
    options->timeout = 30;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "helper=", 7) == 0 && (argv[i][7] == '/' || strncmp(argv[i] + 7, "~/", 2) == 0)) {
            options->helper = argv[i] + 7;
        } else if (strncmp(argv[i], "socket=", 7) == 0 && argv[i][7] == '/') {
            options->socket = argv[i] + 7;
        } else if (strcmp(argv[i], "set_if_none") == 0) {
            options->set_if_none = 1;
        } else if (strncmp(argv[i], "timeout=", 8) == 0 && atoi(argv[i] + 8) > 0) {
            options->timeout = atoi(argv[i] + 8);
        } else {
            pam_syslog(pamh, LOG_ERR, "unknown argument \"%s\": use helper=/absolute/path (or ~/path), socket=/absolute/path, "
                       "set_if_none or timeout=SECONDS", argv[i]);
            return -1;
        }
    }
    return 0;
}

/// Frees a kept password after overwriting it.
static void wipe_password(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    if (data == NULL) return;
    explicit_bzero(data, strlen(data));
    free(data);
}

/// Whether the helper may be given the password: a regular file of root or of the user (it runs as the user, so the
/// user's own file learns only the user's own password) that no one else may write.
static int helper_is_trusted(pam_handle_t *pamh, const char *helper, uid_t uid) {
    struct stat info;
    if (stat(helper, &info) != 0) {
        pam_syslog(pamh, LOG_ERR, "the helper %s cannot be found (%m): install it, or name it with helper=", helper);
        return 0;
    }
    if (!S_ISREG(info.st_mode) || (info.st_uid != 0 && info.st_uid != uid) || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        pam_syslog(pamh, LOG_ERR, "the helper %s is not a file of root or the user that only its owner may write: not run", helper);
        return 0;
    }
    return 1;
}

/// Writes all of `bytes` to a socket (never raising SIGPIPE in the application).
static int send_all(int fd, const char *bytes, size_t length) {
    size_t offset = 0;
    while (offset < length) {
        ssize_t sent = send(fd, bytes + offset, length - offset, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        offset += (size_t)sent;
    }
    return 0;
}

/// Runs `helper login-keychain-pam VERB` as `user` with `input` on its standard input; returns its exit status, or
/// -1 when it could not be run, was killed or did not finish within the timeout.
static int run_helper(pam_handle_t *pamh, const struct options *options, const char *user, const char *verb,
                      const char *input, size_t input_length) {
    // Everything the child needs is prepared here: between fork and exec it makes system calls only, which is
    // safe in a threaded application.
    struct passwd entry, *found = NULL;
    char buffer[16384];
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) != 0 || found == NULL) {
        pam_syslog(pamh, LOG_ERR, "user %s not found: the keychain is left alone", user);
        return -1;
    }
    uid_t uid = entry.pw_uid;
    gid_t gid = entry.pw_gid;
    if (uid == 0) {
        pam_syslog(pamh, LOG_NOTICE, "not run for root: the helper runs as the user, never as root");
        return -1;
    }
    // helper=~/PATH names a program in the user's home (a per-user keychaind's `security`, ~/.local/bin/security).
    char helper[PATH_MAX];
    if (strncmp(options->helper, "~/", 2) == 0) {
        if (snprintf(helper, sizeof helper, "%s/%s", entry.pw_dir, options->helper + 2) >= (int)sizeof helper) return -1;
    } else if (snprintf(helper, sizeof helper, "%s", options->helper) >= (int)sizeof helper) {
        return -1;
    }
    if (!helper_is_trusted(pamh, helper, uid)) return -1;
    gid_t groups[MAX_GROUPS];
    int group_count = MAX_GROUPS;
    if (getgrouplist(entry.pw_name, gid, groups, &group_count) < 0) {
        pam_syslog(pamh, LOG_ERR, "user %s is in more than %d groups: the keychain is left alone", user, MAX_GROUPS);
        return -1;
    }
    char home[PATH_MAX + 8], user_variable[512], logname[512], runtime[64], socket_variable[PATH_MAX + 32];
    if (snprintf(home, sizeof home, "HOME=%s", entry.pw_dir) >= (int)sizeof home
        || snprintf(user_variable, sizeof user_variable, "USER=%s", entry.pw_name) >= (int)sizeof user_variable
        || snprintf(logname, sizeof logname, "LOGNAME=%s", entry.pw_name) >= (int)sizeof logname) {
        pam_syslog(pamh, LOG_ERR, "the user's name or home folder is too long: the keychain is left alone");
        return -1;
    }
    snprintf(runtime, sizeof runtime, "XDG_RUNTIME_DIR=/run/user/%lu", (unsigned long)uid);
    char *environment[8];
    int count = 0;
    environment[count++] = home;
    environment[count++] = user_variable;
    environment[count++] = logname;
    environment[count++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    environment[count++] = runtime;
    if (options->socket != NULL) {
        if (snprintf(socket_variable, sizeof socket_variable, "KEYCHAIN_DAEMON_SOCKET=%s", options->socket) >= (int)sizeof socket_variable) {
            pam_syslog(pamh, LOG_ERR, "the socket= path is too long");
            return -1;
        }
        environment[count++] = socket_variable;
    }
    environment[count] = NULL;
    char *arguments[] = { helper, "login-keychain-pam", (char *)verb,
                          options->set_if_none ? "--set-if-none" : NULL, NULL };

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        pam_syslog(pamh, LOG_ERR, "cannot make the helper's input: %m");
        return -1;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) {
        pam_syslog(pamh, LOG_ERR, "cannot open /dev/null: %m");
        close(pair[0]);
        close(pair[1]);
        return -1;
    }
    // The application may catch SIGCHLD and reap children itself; the helper is waited for here.
    struct sigaction default_action, saved_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGCHLD, &default_action, &saved_action);

    pid_t pid = fork();
    if (pid == 0) {
        // The child: standard input is the socket, output goes nowhere, nothing else stays open.
        if (dup2(pair[1], STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0 || dup2(null_fd, STDERR_FILENO) < 0) _exit(127);
        closefrom(3);
        // A session of its own: no controlling terminal, so nothing it runs can ask on the login's terminal.
        if (setsid() < 0) _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        // The user's groups, gid and uid — every one of the real, effective and saved ids — and a check that root
        // cannot be taken back.
        if (setgroups((size_t)group_count, groups) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) _exit(127);
        if (setuid(0) == 0 || geteuid() != uid || getegid() != gid) _exit(127);
        if (chdir("/") != 0) _exit(127);
        execve(helper, arguments, environment);
        _exit(127);
    }
    close(pair[1]);
    close(null_fd);
    if (pid < 0) {
        pam_syslog(pamh, LOG_ERR, "cannot start the helper: %m");
        close(pair[0]);
        sigaction(SIGCHLD, &saved_action, NULL);
        return -1;
    }
    // A helper that exits early (a missing keychain) closes its end; that is not an error here.
    (void)send_all(pair[0], input, input_length);
    close(pair[0]);

    int status = 0;
    int result = -1;
    struct timespec pause = { 0, 10 * 1000 * 1000 };
    long waited = 0, limit = (long)options->timeout * 100;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            result = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        if (done < 0 && errno != EINTR) break;
        if (waited++ >= limit) {
            pam_syslog(pamh, LOG_ERR, "the helper did not finish within %d s: stopped", options->timeout);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            break;
        }
        nanosleep(&pause, NULL);
    }
    sigaction(SIGCHLD, &saved_action, NULL);
    return result;
}

/// Logs what became of the login keychain (never a password).
static void report(pam_handle_t *pamh, const char *user, const char *action, int outcome) {
    switch (outcome) {
    case PAM_KEYCHAIN_DONE:
        pam_syslog(pamh, LOG_INFO, "login keychain of %s %s", user, strcmp(action, "change") == 0 ? "re-wrapped with the new password" : "unlocked");
        break;
    case PAM_KEYCHAIN_NO_PASSCODE:
        pam_syslog(pamh, LOG_INFO, "login keychain of %s has no passcode: nothing to %s", user, strcmp(action, "change") == 0 ? "re-wrap" : "unlock");
        break;
    case PAM_KEYCHAIN_PASSCODE_SET:
        pam_syslog(pamh, LOG_INFO, "login keychain of %s had no passcode: the login password is now its passcode", user);
        break;
    case PAM_KEYCHAIN_EMPTY_NEW:
        pam_syslog(pamh, LOG_NOTICE, "login keychain of %s not re-wrapped: the new password is empty", user);
        break;
    case PAM_KEYCHAIN_WRONG_PASSWORD:
        pam_syslog(pamh, LOG_NOTICE, "login keychain of %s %s: the %s password is not its passcode", user,
                   strcmp(action, "change") == 0 ? "not re-wrapped" : "not unlocked", strcmp(action, "change") == 0 ? "old" : "login");
        break;
    case PAM_KEYCHAIN_NO_DAEMON:
        pam_syslog(pamh, LOG_INFO, "login keychain of %s not %s: keychaind is not running", user,
                   strcmp(action, "change") == 0 ? "re-wrapped" : "unlocked yet");
        break;
    default:
        pam_syslog(pamh, LOG_ERR, "login keychain of %s: the helper failed (status %d); run `security %s` by hand", user, outcome,
                   strcmp(action, "change") == 0 ? "set-keychain-password" : "unlock-keychain");
        break;
    }
}

/// Whether a keychaind may be listening for the user now (so an unlock at `auth` time lasts).
static int daemon_may_listen(const struct options *options, const char *user) {
    struct stat info;
    if (options->socket != NULL) return stat(options->socket, &info) == 0;
    if (stat(SYSTEM_SOCKET, &info) == 0) return 1;
    struct passwd entry, *found = NULL;
    char buffer[16384], path[128];
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) != 0 || found == NULL) return 0;
    snprintf(path, sizeof path, "/run/user/%lu/keychain/keychaind.sock", (unsigned long)entry.pw_uid);
    return stat(path, &info) == 0;
}

/// Unlocks with `password`; returns the helper's outcome.
static int unlock(pam_handle_t *pamh, const struct options *options, const char *user, const char *password) {
    size_t length = strlen(password);
    if (memchr(password, '\n', length) != NULL) return PAM_KEYCHAIN_WRONG_PASSWORD;
    char *input = malloc(length + 2);
    if (input == NULL) return -1;
    memcpy(input, password, length);
    input[length] = '\n';
    int outcome = run_helper(pamh, options, user, "unlock", input, length + 1);
    explicit_bzero(input, length + 2);
    free(input);
    return outcome;
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct options options;
    const char *user = NULL;
    const void *item = NULL;
    if (parse_options(pamh, argc, argv, &options) != 0) return PAM_IGNORE;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL) return PAM_IGNORE;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "no password from an earlier module: put pam_keychain.so after pam_unix.so");
        return PAM_IGNORE;
    }
    const char *password = item;
    if (daemon_may_listen(&options, user)) {
        int outcome = unlock(pamh, &options, user, password);
        if (outcome != PAM_KEYCHAIN_NO_DAEMON) {
            report(pamh, user, "unlock", outcome);
            // Tried with this password: the session does not try again (a wrong one would count twice).
            pam_set_data(pamh, UNLOCK_TRIED, (void *)1, NULL);
            return PAM_IGNORE;
        }
    }
    // Kept for pam_sm_open_session, when the user's keychaind has started; wiped when the session has used it,
    // or when the application ends the PAM transaction.
    char *kept = strdup(password);
    if (kept == NULL) return PAM_IGNORE;
    if (pam_set_data(pamh, KEPT_PASSWORD, kept, wipe_password) != PAM_SUCCESS) wipe_password(pamh, kept, 0);
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    struct options options;
    const char *user = NULL;
    const void *tried = NULL, *kept = NULL;
    if (parse_options(pamh, argc, argv, &options) != 0) return PAM_IGNORE;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL) return PAM_IGNORE;
    if (pam_get_data(pamh, UNLOCK_TRIED, &tried) == PAM_SUCCESS && tried != NULL) return PAM_IGNORE;
    if (pam_get_data(pamh, KEPT_PASSWORD, &kept) != PAM_SUCCESS || kept == NULL) {
        pam_syslog(pamh, LOG_INFO, "no password kept from authentication (pam_keychain.so is not in the auth stack, "
                   "or another process authenticated): the login keychain of %s is not unlocked", user);
        return PAM_IGNORE;
    }
    report(pamh, user, "unlock", unlock(pamh, &options, user, kept));
    // Replacing the data runs its cleanup: the password is overwritten and freed now.
    pam_set_data(pamh, KEPT_PASSWORD, NULL, NULL);
    pam_set_data(pamh, UNLOCK_TRIED, (void *)1, NULL);
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct options options;
    const char *user = NULL;
    const void *old_item = NULL, *new_item = NULL;
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE; // the preliminary pass: nothing to check here
    if (parse_options(pamh, argc, argv, &options) != 0) return PAM_IGNORE;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL) return PAM_IGNORE;
    if (pam_get_item(pamh, PAM_OLDAUTHTOK, &old_item) != PAM_SUCCESS || old_item == NULL
        || pam_get_item(pamh, PAM_AUTHTOK, &new_item) != PAM_SUCCESS || new_item == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "login keychain of %s not re-wrapped: the old password is not known (changed by root?); "
                   "run `security set-keychain-password` as the user", user);
        return PAM_IGNORE;
    }
    const char *old_password = old_item, *new_password = new_item;
    size_t old_length = strlen(old_password), new_length = strlen(new_password);
    if (memchr(old_password, '\n', old_length) != NULL || memchr(new_password, '\n', new_length) != NULL) {
        pam_syslog(pamh, LOG_NOTICE, "login keychain of %s not re-wrapped: a password holds a line break", user);
        return PAM_IGNORE;
    }
    size_t length = old_length + new_length + 2;
    char *input = malloc(length);
    if (input == NULL) return PAM_IGNORE;
    memcpy(input, old_password, old_length);
    input[old_length] = '\n';
    memcpy(input + old_length + 1, new_password, new_length);
    input[length - 1] = '\n';
    int outcome = run_helper(pamh, &options, user, "change", input, length);
    explicit_bzero(input, length);
    free(input);
    report(pamh, user, "change", outcome);
    return PAM_IGNORE;
}

#endif
