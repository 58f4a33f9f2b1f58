#!/bin/sh
# Builds swift-keychain's programs (keychaind, security, git-credential-keychain) with the Swift runtime linked in
# statically, so that they need nothing from the Swift toolchain's folder, and installs them with keychaind's
# systemd units, in one of keychaind's two modes:
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
# Other options:
#   --no-build       install the binaries already built in .build/release (by this script, earlier)
#   --no-enable      install the units without enabling or starting them
#   --destdir DIR    stage everything under DIR (for packaging); nothing is enabled, no user is created
#   --build-path DIR build in DIR instead of .build (swift build --scratch-path)
#   --strip          strip the installed binaries (about 120 MB each with symbols, 70 MB without)
#   --secret-service with --user: keychaind also serves the freedesktop Secret Service (org.freedesktop.secrets) on
#                    the session bus, started by D-Bus activation (keychaind.service.d/secret-service.conf and
#                    ~/.local/share/dbus-1/services/org.freedesktop.secrets.service)
#
# Without a running systemd (a container, CI), --system creates the keychain user with useradd and the folders with
# install -d, and says how to start keychaind by hand.
set -eu

mode=""
prefix=""
build=yes
enable=yes
destdir=""
scratch=""
strip=""
secretservice=no
while [ $# -gt 0 ]; do
    case "$1" in
        --system) mode=system ;;
        --user) mode=user ;;
        --pam) mode=pam ;;
        --prefix) prefix="$2"; shift ;;
        --prefix=*) prefix="${1#--prefix=}" ;;
        --destdir) destdir="$2"; shift ;;
        --destdir=*) destdir="${1#--destdir=}" ;;
        --build-path) scratch="$2"; shift ;;
        --build-path=*) scratch="${1#--build-path=}" ;;
        --strip) strip=-s ;;
        --secret-service) secretservice=yes ;;
        --no-build) build=no ;;
        --no-enable) enable=no ;;
        -h|--help) sed -n '2,/^set -eu$/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$mode" ] || { echo "install.sh: say --system, --user or --pam (see --help)" >&2; exit 2; }
[ "$secretservice" = no ] || [ "$mode" = user ] || { echo "install.sh: --secret-service goes with --user (a --system keychaind serves every user and no session bus)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
programs="keychaind security git-credential-keychain"
[ -n "$destdir" ] && enable=no

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
    libdir=$(pkg-config --variable=libdir pam 2>/dev/null || echo "/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)")
    install -d -m 0755 "$destdir$libdir/security"
    install $strip -m 0644 "$module" "$destdir$libdir/security/pam_keychain.so"
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

# 1. Build, with the Swift runtime (stdlib, Foundation, Dispatch) linked statically.
[ -n "$scratch" ] || scratch="$root/.build"
products="$scratch/release"
if [ "$build" = yes ]; then
    for program in $programs; do
        (cd "$root" && swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$program")
    done
fi

# 2. Check that no binary depends on the toolchain's folder: no RPATH/RUNPATH into it, no library loaded from it.
toolchain=$(dirname "$(dirname "$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)")")
for program in $programs; do
    binary="$products/$program"
    [ -x "$binary" ] || { echo "install.sh: $binary is missing; run without --no-build." >&2; exit 1; }
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
done

# 3. The binaries: keychaind beside security (the security found there is the admin tool keychaind trusts).
install -d -m 0755 "$destdir$bindir"
for program in $programs; do
    install $strip -m 0755 "$products/$program" "$destdir$bindir/$program"
done
echo "Installed $programs in $destdir$bindir"

if [ "$mode" = user ]; then
    units="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
    install -d -m 0755 "$destdir$units"
    install -m 0644 "$here/systemd/keychaind.socket" "$destdir$units/keychaind.socket"
    sed "s|%h/.local/bin/keychaind|$bindir/keychaind|" "$here/systemd/keychaind.service" > "$destdir$units/keychaind.service"
    chmod 0644 "$destdir$units/keychaind.service"
    echo "Installed keychaind.socket and keychaind.service in $destdir$units"
    if [ "$secretservice" = yes ]; then
        install -d -m 0755 "$destdir$units/keychaind.service.d"
        sed "s|%h/.local/bin/keychaind|$bindir/keychaind|" "$here/systemd/keychaind.service.d/secret-service.conf" > "$destdir$units/keychaind.service.d/secret-service.conf"
        chmod 0644 "$destdir$units/keychaind.service.d/secret-service.conf"
        services="${XDG_DATA_HOME:-$HOME/.local/share}/dbus-1/services"
        install -d -m 0755 "$destdir$services"
        install -m 0644 "$here/dbus/org.freedesktop.secrets.service" "$destdir$services/org.freedesktop.secrets.service"
        echo "Installed the Secret Service: keychaind.service.d/secret-service.conf and $services/org.freedesktop.secrets.service"
    fi
    if [ "$enable" = yes ] && systemctl --user show-environment >/dev/null 2>&1; then
        systemctl --user daemon-reload
        systemctl --user enable --now keychaind.socket
        echo "keychaind.socket is listening at \$XDG_RUNTIME_DIR/keychain/keychaind.sock"
    elif [ "$enable" = yes ]; then
        echo "No systemd user manager here: start keychaind yourself with $bindir/keychaind --foreground"
    fi
    exit 0
fi

# --system: units, the keychain user, its folders.
units=/etc/systemd/system
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
