#!/bin/sh
# Builds swift-keychain's programs as one multi-call binary, `keychain`, with the Swift runtime linked in statically
# (so that it needs nothing from the Swift toolchain's folder), and installs it as PREFIX/libexec/swift-keychain/keychain
# with the hard links PREFIX/bin/security, keychaind and git-credential-keychain (the binary picks its tool from its
# own name as the kernel reports it, which keychaind also uses to tell the three apart), with keychaind's systemd
# units, in one of keychaind's two modes:
#
#   Support/install.sh --system [--prefix /usr/local]   as root: keychaind --system, as Apple's securityd. It runs as
#       the keychain system user and keeps every local user's keychain in /var/lib/keychain/UID (0700, the keychain
#       user's), which the users' own programs cannot read; every user's programs reach it at
#       /run/keychain/keychaind.sock. Installs keychaind-system.socket/.service, sysusers.d and tmpfiles.d entries.
#   Support/install.sh --user [--prefix ~/.local]      as the user: a keychaind of this user only, serving
#       ~/.local/share/keychain (readable by this user's programs), for machines where no one can install a system
#       service. Installs keychaind.socket/.service for the systemd user manager.
#   Support/install.sh --pam [--prefix /usr/local]     as root: pam_keychain.so, which unlocks the login keychain at
#       login and re-wraps it when the login password changes, into the PAM module folder (pkg-config's libdir of
#       pam, /lib/x86_64-linux-gnu/security on Debian); prints the lines to add to /etc/pam.d/common-auth,
#       common-session and common-password. Its helper is PREFIX/bin/security (install it with --system first).
#
# Add --uninstall to any of the three (with the same --prefix and --destdir) to remove every file that installation
# put in place (--secret-service's too), and nothing else: the users' keychains (/var/lib/keychain,
# ~/.local/share/keychain) stay, and so does the keychain system user, which owns /var/lib/keychain. --pam
# --uninstall refuses while a file in /etc/pam.d still names pam_keychain.so.
#
# Other options:
#   --no-build       install the binary already built in .build/release (by this script, earlier)
#   --no-enable      install the units without enabling or starting them
#   --destdir DIR    stage everything under DIR (for packaging); nothing is enabled, no user is created
#   --build-path DIR build in DIR instead of .build (swift build --scratch-path)
#   --no-strip       keep the binary's symbols (function names in crash backtraces; about 1.6 times the size); it
#                    is stripped by default (--strip is still accepted)
#   --secret-service with --user: keychaind also serves the freedesktop Secret Service (org.freedesktop.secrets) on
#                    the session bus, started by D-Bus activation (keychaind.service.d/secret-service.conf and
#                    ~/.local/share/dbus-1/services/org.freedesktop.secrets.service; without systemd --user the bus
#                    runs keychaind --secret-service itself)
#   --ssh-agent      with --user: keychaind also serves an SSH agent on the keychain's SSH keys, on
#                    $XDG_RUNTIME_DIR/keychain/ssh-agent.sock (keychaind-ssh-agent.socket starts keychaind when ssh
#                    first connects); ~/.config/environment.d/60-keychain-ssh-agent.conf sets SSH_AUTH_SOCK for the
#                    session's next login
#
# Without a running systemd (a container, CI), --system creates the keychain user with useradd and the folders with
# install -d, and says how to start keychaind by hand. Support/package.sh builds Debian packages of the same layout
# (in /usr); do not mix them with an installation by this script in the same prefix.
set -eu

mode=""
prefix=""
build=yes
enable=yes
destdir=""
scratch=""
strip=yes
secretservice=no
sshagent=no
uninstall=no
while [ $# -gt 0 ]; do
    case "$1" in
        --system) mode=system ;;
        --user) mode=user ;;
        --pam) mode=pam ;;
        --uninstall) uninstall=yes ;;
        --prefix) prefix="$2"; shift ;;
        --prefix=*) prefix="${1#--prefix=}" ;;
        --destdir) destdir="$2"; shift ;;
        --destdir=*) destdir="${1#--destdir=}" ;;
        --build-path) scratch="$2"; shift ;;
        --build-path=*) scratch="${1#--build-path=}" ;;
        --strip) strip=yes ;;
        --no-strip) strip=no ;;
        --secret-service) secretservice=yes ;;
        --ssh-agent) sshagent=yes ;;
        --no-build) build=no ;;
        --no-enable) enable=no ;;
        -h|--help) sed -n '2,/^set -eu$/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$mode" ] || { echo "install.sh: say --system, --user or --pam (see --help)" >&2; exit 2; }
[ "$secretservice" = no ] || [ "$mode" = user ] || { echo "install.sh: --secret-service goes with --user (a --system keychaind serves every user and no session bus)" >&2; exit 2; }
[ "$sshagent" = no ] || [ "$mode" = user ] || { echo "install.sh: --ssh-agent goes with --user (an SSH agent serves one user's keys)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tools="security keychaind git-credential-keychain"
[ -n "$destdir" ] && enable=no

# A file that a Debian package (Support/package.sh's) owns is the package manager's: never replaced or removed here.
refuse_packaged() {
    [ -z "$destdir" ] && command -v dpkg-query >/dev/null 2>&1 || return 0
    owner=$(dpkg-query -S "$1" 2>/dev/null | head -n 1 | cut -d: -f1) || true
    if [ -n "$owner" ]; then
        echo "install.sh: $1 belongs to the Debian package $owner; remove that with apt, or choose another --prefix." >&2
        exit 1
    fi
}

# Removes FILE when it is there, saying so.
remove() {
    if [ -e "$1" ] || [ -L "$1" ]; then
        rm -f "$1"
        echo "Removed $1"
    fi
}

# Removes FOLDER when it is empty.
remove_empty() {
    [ -d "$1" ] && rmdir "$1" 2>/dev/null && echo "Removed $1" || true
}

# Removes FOLDER, which the installation may have made (Debian has no /usr/local/libexec or /etc/sysusers.d), when it
# is empty and no package owns it.
remove_empty_unowned() {
    if command -v dpkg-query >/dev/null 2>&1 && dpkg-query -S "$1" >/dev/null 2>&1; then return 0; fi
    remove_empty "$1"
}

# Whether FILE is one of swift-keychain's programs: the multi-call binary or one of its hard links, a program this
# script installed before the multi-call binary, or a symbolic link to the binary.
is_ours() {
    if [ -L "$1" ]; then
        [ "$(readlink "$1")" = ../libexec/swift-keychain/keychain ]
    else
        [ -f "$1" ] && grep -qaF -e '(swift-keychain)' -e 'KeychainCore' "$1"
    fi
}

if [ "$mode" = pam ]; then
    # The PAM module: C. SwiftPM builds it as the product pam_keychain for the tests, but links the Swift runtime
    # into it (its linker is swiftc's); every program that logs someone in would load that runtime, so the module
    # installed is the same file compiled by the C compiler alone, hardened, against Linux-PAM (libpam0g-dev).
    [ -n "$prefix" ] || prefix=/usr/local
    [ -n "$scratch" ] || scratch="$root/.build"
    if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: --pam installs into the system's PAM module folder; run it as root (sudo)." >&2
        exit 1
    fi
    libdir=$(pkg-config --variable=libdir pam 2>/dev/null || echo "/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)")
    installed="$destdir$libdir/security/pam_keychain.so"
    refuse_packaged "$installed"
    if [ "$uninstall" = yes ]; then
        # Lines that load this module: by its name (found in the module folder) or by its path; not comments.
        if [ -z "$destdir" ] && users=$(grep -rEn "(^|[[:space:]])($libdir/security/)?pam_keychain\.so([[:space:]]|\$)" /etc/pam.d 2>/dev/null \
                | grep -v '^[^:]*:[0-9]*:[[:space:]]*#') && [ -n "$users" ]; then
            echo "install.sh: these PAM configurations still load pam_keychain.so; remove those lines first:" >&2
            echo "$users" >&2
            exit 1
        fi
        remove "$installed"
        exit 0
    fi
    module="$scratch/release/pam_keychain.so"
    if [ "$build" = yes ]; then
        [ -f /usr/include/security/pam_modules.h ] || { echo "install.sh: Linux-PAM's headers are missing: apt-get install libpam0g-dev" >&2; exit 1; }
        install -d "$scratch/release"
        ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
            -Wl,-z,relro,-z,now -Wl,--as-needed -I "$root/Sources/CPAMKeychain/include" \
            "$root/Sources/CPAMKeychain/pam_keychain.c" -lpam -o "$module"
    fi
    [ -f "$module" ] || { echo "install.sh: $module is missing; run without --no-build." >&2; exit 1; }
    if ldd "$module" | grep -q -e 'libswift' -e 'libFoundation' -e 'libdispatch'; then
        echo "install.sh: $module loads the Swift runtime; a PAM module must not (every program that logs in would):" >&2
        ldd "$module" >&2
        exit 1
    fi
    install -d -m 0755 "$destdir$libdir/security"
    if [ "$strip" = yes ]; then
        install -s -m 0644 "$module" "$installed"
    else
        install -m 0644 "$module" "$installed"
    fi
    echo "Installed pam_keychain.so in $destdir$libdir/security"
    echo "Add these lines after the pam_unix.so block of each file (the session line after pam_systemd.so):"
    echo "  /etc/pam.d/common-auth:      auth     optional  pam_keychain.so helper=$prefix/bin/security"
    echo "  /etc/pam.d/common-session:   session  optional  pam_keychain.so helper=$prefix/bin/security"
    echo "  /etc/pam.d/common-password:  password optional  pam_keychain.so helper=$prefix/bin/security"
    exit 0
fi

if [ "$mode" = system ]; then
    [ -n "$prefix" ] || prefix=/usr/local
    if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: --system installs a system service; run it as root (sudo), or use --user." >&2
        exit 1
    fi
else
    [ -n "$prefix" ] || prefix="$HOME/.local"
fi
bindir="$prefix/bin"
libexecdir="$prefix/libexec/swift-keychain"
for tool in $tools; do refuse_packaged "$destdir$bindir/$tool"; done
refuse_packaged "$destdir$libexecdir/keychain"

if [ "$mode" = user ]; then
    units="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
    services="${XDG_DATA_HOME:-$HOME/.local/share}/dbus-1/services"
else
    units=/etc/systemd/system
fi

# --uninstall: the units stopped and disabled, then every file the installation put in place.
if [ "$uninstall" = yes ]; then
    if [ "$mode" = system ] && [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: --system --uninstall removes a system service; run it as root (sudo)." >&2
        exit 1
    fi
    if [ -z "$destdir" ]; then
        if [ "$mode" = user ] && systemctl --user show-environment >/dev/null 2>&1; then
            systemctl --user disable --now keychaind-ssh-agent.socket keychaind.socket keychaind.service 2>/dev/null || true
        elif [ "$mode" = system ] && [ -d /run/systemd/system ]; then
            systemctl disable --now keychaind-system.socket keychaind-system.service 2>/dev/null || true
        fi
    fi
    for tool in $tools; do
        if is_ours "$destdir$bindir/$tool"; then
            remove "$destdir$bindir/$tool"
        elif [ -e "$destdir$bindir/$tool" ]; then
            echo "install.sh: $destdir$bindir/$tool is not swift-keychain's; left in place." >&2
        fi
    done
    if is_ours "$destdir$libexecdir/keychain"; then remove "$destdir$libexecdir/keychain"; fi
    remove_empty "$destdir$libexecdir"
    remove_empty_unowned "$destdir$prefix/libexec"
    if [ "$mode" = user ]; then
        remove "$destdir$units/keychaind.socket"
        remove "$destdir$units/keychaind.service"
        # The SSH agent's files (--ssh-agent), when they are there.
        remove "$destdir$units/keychaind-ssh-agent.socket"
        remove "$destdir${XDG_CONFIG_HOME:-$HOME/.config}/environment.d/60-keychain-ssh-agent.conf"
        # The Secret Service's files (--secret-service), when they are there: the activation file only when it starts
        # keychaind (gnome-keyring's has the same name).
        remove "$destdir$units/keychaind.service.d/secret-service.conf"
        remove_empty "$destdir$units/keychaind.service.d"
        if grep -q '^Exec=.*keychaind' "$destdir$services/org.freedesktop.secrets.service" 2>/dev/null; then
            remove "$destdir$services/org.freedesktop.secrets.service"
        fi
        if [ -z "$destdir" ] && systemctl --user show-environment >/dev/null 2>&1; then systemctl --user daemon-reload; fi
        keychain="${KEYCHAIN_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/keychain}"
        [ ! -d "$keychain" ] || echo "Your keychain in $keychain is kept."
        exit 0
    fi
    remove "$destdir$units/keychaind-system.socket"
    remove "$destdir$units/keychaind-system.service"
    remove "$destdir/etc/sysusers.d/keychain.conf"
    remove_empty_unowned "$destdir/etc/sysusers.d"
    remove "$destdir/etc/tmpfiles.d/keychain.conf"
    if [ -z "$destdir" ]; then
        [ -d /run/systemd/system ] && systemctl daemon-reload
        if [ -S /run/keychain/keychaind.sock ]; then
            echo "A keychaind --system still listens on /run/keychain/keychaind.sock (started by hand?): stop it."
        else
            remove_empty /run/keychain
        fi
        # keychaind --system's lock is its own; the rest of /var/lib/keychain is the users' keychains.
        remove /var/lib/keychain/keychaind.lock
        if [ -d /var/lib/keychain ] && ! rmdir /var/lib/keychain 2>/dev/null; then
            echo "The users' keychains in /var/lib/keychain are kept, and so is the keychain user that owns them."
        fi
    fi
    exit 0
fi

# 1. Build the multi-call binary, with the Swift runtime (stdlib, Foundation, Dispatch) linked statically; the
#    Network trait brings sync and OCSP.
[ -n "$scratch" ] || scratch="$root/.build"
binary="$scratch/release/keychain"
if [ "$build" = yes ]; then
    (cd "$root" && swift build -c release --static-swift-stdlib -Xlinker --no-export-dynamic --traits Network --scratch-path "$scratch" --product keychain)
fi
[ -x "$binary" ] || { echo "install.sh: $binary is missing; run without --no-build." >&2; exit 1; }

# 2. Check that it does not depend on the toolchain's folder: no RPATH/RUNPATH into it, no library loaded from it.
toolchain=$(dirname "$(dirname "$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)")")
if readelf -d "$binary" | grep -E 'R(UN)?PATH' | grep -q -e "$toolchain" -e swift; then
    echo "install.sh: $binary has an RPATH into the Swift toolchain:" >&2
    readelf -d "$binary" | grep -E 'R(UN)?PATH' >&2
    exit 1
fi
if ldd "$binary" | grep -q -e "$toolchain" -e 'libswift' -e 'libFoundation' -e 'libdispatch'; then
    echo "install.sh: $binary loads the Swift runtime dynamically:" >&2
    ldd "$binary" >&2
    exit 1
fi

# 3. The binary and its hard links: keychaind beside security (the security found there is the admin tool keychaind
#    trusts). Hard, not symbolic: the kernel then reports each tool's own path (/proc/PID/exe), by which the binary
#    picks the tool and keychaind tells security, keychaind and git-credential-keychain apart. Where PREFIX/bin and
#    PREFIX/libexec are on two file systems, copies do the same.
install -d -m 0755 "$destdir$libexecdir" "$destdir$bindir"
if [ "$strip" = yes ]; then
    install -s -m 0755 "$binary" "$destdir$libexecdir/keychain"
else
    install -m 0755 "$binary" "$destdir$libexecdir/keychain"
fi
for tool in $tools; do
    rm -f "$destdir$bindir/$tool"
    ln "$destdir$libexecdir/keychain" "$destdir$bindir/$tool" 2>/dev/null \
        || install -m 0755 "$destdir$libexecdir/keychain" "$destdir$bindir/$tool"
done
echo "Installed $destdir$libexecdir/keychain and $tools (hard links to it) in $destdir$bindir"

if [ "$mode" = user ]; then
    install -d -m 0755 "$destdir$units"
    install -m 0644 "$here/systemd/keychaind.socket" "$destdir$units/keychaind.socket"
    sed "s|%h/.local/bin/keychaind|$bindir/keychaind|" "$here/systemd/keychaind.service" > "$destdir$units/keychaind.service"
    chmod 0644 "$destdir$units/keychaind.service"
    echo "Installed keychaind.socket and keychaind.service in $destdir$units"
    if [ "$secretservice" = yes ]; then
        install -d -m 0755 "$destdir$units/keychaind.service.d"
        sed "s|%h/.local/bin/keychaind|$bindir/keychaind|" "$here/systemd/keychaind.service.d/secret-service.conf" > "$destdir$units/keychaind.service.d/secret-service.conf"
        chmod 0644 "$destdir$units/keychaind.service.d/secret-service.conf"
        install -d -m 0755 "$destdir$services"
        # Exec is what the bus runs where no systemd --user starts keychaind.service for it.
        sed "s|^Exec=.*|Exec=$bindir/keychaind --foreground --secret-service|" "$here/dbus/org.freedesktop.secrets.service" \
            > "$destdir$services/org.freedesktop.secrets.service"
        chmod 0644 "$destdir$services/org.freedesktop.secrets.service"
        echo "Installed the Secret Service: keychaind.service.d/secret-service.conf and $services/org.freedesktop.secrets.service"
    fi
    if [ "$sshagent" = yes ]; then
        install -m 0644 "$here/systemd/keychaind-ssh-agent.socket" "$destdir$units/keychaind-ssh-agent.socket"
        install -d -m 0755 "$destdir${XDG_CONFIG_HOME:-$HOME/.config}/environment.d"
        install -m 0644 "$here/systemd/environment.d/60-keychain-ssh-agent.conf" "$destdir${XDG_CONFIG_HOME:-$HOME/.config}/environment.d/60-keychain-ssh-agent.conf"
        echo "Installed the SSH agent: keychaind-ssh-agent.socket, and SSH_AUTH_SOCK in environment.d (from the next login; now: eval \"\$(security ssh-agent --env)\")"
    fi
    if [ "$enable" = yes ] && systemctl --user show-environment >/dev/null 2>&1; then
        systemctl --user daemon-reload
        if [ "$sshagent" = yes ]; then systemctl --user enable --now keychaind-ssh-agent.socket; fi
        systemctl --user enable --now keychaind.socket
        echo "keychaind.socket is listening at \$XDG_RUNTIME_DIR/keychain/keychaind.sock"
    elif [ "$enable" = yes ]; then
        echo "No systemd user manager here: the first keychain call starts keychaind ($bindir/keychaind) by itself."
    fi
    exit 0
fi

# --system: units, the keychain user, its folders.
install -d -m 0755 "$destdir$units" "$destdir/etc/sysusers.d" "$destdir/etc/tmpfiles.d"
install -m 0644 "$here/systemd/keychaind-system.socket" "$destdir$units/keychaind-system.socket"
sed "s|/usr/local/bin/keychaind|$bindir/keychaind|" "$here/systemd/keychaind-system.service" > "$destdir$units/keychaind-system.service"
chmod 0644 "$destdir$units/keychaind-system.service"
install -m 0644 "$here/systemd/sysusers.d/keychain.conf" "$destdir/etc/sysusers.d/keychain.conf"
install -m 0644 "$here/systemd/tmpfiles.d/keychain.conf" "$destdir/etc/tmpfiles.d/keychain.conf"
echo "Installed keychaind-system.socket, keychaind-system.service, sysusers.d and tmpfiles.d entries under $destdir/etc"
[ -n "$destdir" ] && exit 0

if [ -d /run/systemd/system ]; then
    systemd-sysusers /etc/sysusers.d/keychain.conf
    systemd-tmpfiles --create /etc/tmpfiles.d/keychain.conf
    systemctl daemon-reload
    if [ "$enable" = yes ]; then
        systemctl enable --now keychaind-system.socket
        echo "keychaind-system.socket is listening at /run/keychain/keychaind.sock"
    fi
else
    # No systemd running (a container, CI): the same user and folders by hand.
    if ! getent passwd keychain >/dev/null; then
        useradd --system --user-group --no-create-home --home-dir /var/lib/keychain --shell /usr/sbin/nologin \
            --comment "keychaind, the system keychain daemon" keychain
    fi
    install -d -m 0700 -o keychain -g keychain /var/lib/keychain
    install -d -m 0755 -o keychain -g keychain /run/keychain
    echo "No systemd here. Start keychaind as the keychain user with the one capability it needs:"
    echo "  setpriv --reuid=keychain --regid=keychain --init-groups --inh-caps=+sys_ptrace --ambient-caps=+sys_ptrace \\"
    echo "      $bindir/keychaind --system --foreground"
fi
