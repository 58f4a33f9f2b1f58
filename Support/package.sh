#!/usr/bin/env bash
# Builds swift-keychain's Debian packages (dpkg-deb --root-owner-group --build, no debian/ folder needed):
#
#   swift-keychain_VERSION_ARCH.deb
#     /usr/libexec/swift-keychain/keychain          the multi-call binary, Swift runtime linked in, stripped
#     /usr/bin/security, keychaind, git-credential-keychain   hard links to it: the binary picks its tool from its
#                                                   own name as the kernel reports it (/proc/self/exe), which is
#                                                   also how keychaind identifies the security tool beside it and
#                                                   each program's own access group (a symbolic link would make
#                                                   all three one program, /usr/libexec/swift-keychain/keychain)
#     /usr/lib/systemd/system/keychaind-system.socket, .service   the system keychaind (the socket is enabled)
#     /usr/lib/systemd/user/keychaind.socket, .service, keychaind.service.d/secret-service.conf   a per-user keychaind
#     /usr/lib/systemd/user/keychaind-ssh-agent.socket   its SSH agent (off until enabled)
#                                                   for systemd --user, serving the Secret Service (not enabled: the
#                                                   session bus starts it)
#     /usr/lib/sysusers.d/keychain.conf, /usr/lib/tmpfiles.d/keychain.conf   the keychain user, /var/lib/keychain
#     /usr/share/dbus-1/services/org.freedesktop.secrets.service   D-Bus activation of keychaind --secret-service
#     /usr/share/xdg-desktop-portal/portals/keychain.portal          keychaind as the Secret portal's backend
#                                                   (through keychaind.service where systemd --user runs the bus)
#     /lib/MULTIARCH/security/pam_keychain.so (where pam_unix.so is), /usr/share/pam-configs/swift-keychain   off until
#                                                   `pam-auth-update --enable swift-keychain`
#     man pages security(1), git-credential-keychain(1), keychaind(8); copyright, changelog
#   keychain-sync-server_VERSION_ARCH.deb           (the product keychain-sync-server, built with the Network trait)
#     /usr/bin/keychain-sync-server, /usr/lib/systemd/system/keychain-sync-server.service (not enabled),
#     /etc/keychain-sync-server/env (its settings, a conffile),
#     keychain-sync-server(8)
#
# The version is KeychainVersion.string (Sources/KeychainVersion/KeychainVersion.swift); every program built must
# print it with --version. Depends comes from the binaries' NEEDED libraries (dpkg-shlibdeps), Recommends from
# the libraries they load when needed (libcrypto for PKCS#12, tpm2-tss for the TPM) and a pinentry.
#
#   Support/package.sh [--debug] [--no-build] [--build-path DIR] [--out DIR]
#
#   --debug            build -c debug against the toolchain's shared Swift runtime, with the README's test command's
#                      flags (-Xcc -O2), so that the tests' build is reused and only the binary is linked: for CI on the machine that built it, never for a release
#                      (the package then needs the toolchain's folder; not stripped, light compression)
#   --no-build         package what is already built in the build folder (by this script, earlier)
#   --build-path DIR   SwiftPM's scratch folder (default .build)
#   --out DIR          where the .deb files go (default: BUILD-PATH/packages)
#
# Needs: dpkg-deb and dpkg-shlibdeps (dpkg-dev), a C compiler and libpam0g-dev (pam_keychain.so), binutils (strip),
# and Swift. The man pages come from the programs' own help through swift-argument-parser's generate-manual, built
# once from the package's checkout into BUILD-PATH/package-tools (or named by GENERATE_MANUAL=/path).
set -euo pipefail
umask 022

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

config=release
build=yes
scratch=""
out=""
steps=0
step_count=0

die() { echo "package.sh: $*" >&2; exit 1; }

# One line per step, on standard error.
step() {
    steps=$((steps + 1))
    if [ -t 2 ]; then
        printf '\033[1m[%d/%d]\033[0m %s\n' "$steps" "$step_count" "$*" >&2
    else
        printf '[%d/%d] %s\n' "$steps" "$step_count" "$*" >&2
    fi
}

parse_arguments() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --debug) config=debug ;;
            --no-build) build=no ;;
            --build-path) [ $# -ge 2 ] || die "--build-path needs a folder"; scratch="$2"; shift ;;
            --build-path=*) scratch="${1#--build-path=}" ;;
            --out) [ $# -ge 2 ] || die "--out needs a folder"; out="$2"; shift ;;
            --out=*) out="${1#--out=}" ;;
            -h|--help) sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) die "unknown option $1 (see --help)" ;;
        esac
        shift
    done
    if [ -n "$scratch" ]; then
        mkdir -p "$scratch"
        scratch=$(cd "$scratch" && pwd)
    else
        scratch="$root/.build"
    fi
    [ -n "$out" ] || out="$scratch/packages"
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
}

require_tools() {
    local missing=()
    command -v dpkg-deb >/dev/null || missing+=("dpkg-deb (dpkg)")
    command -v dpkg-shlibdeps >/dev/null || missing+=("dpkg-shlibdeps (dpkg-dev)")
    command -v strip >/dev/null || missing+=("strip (binutils)")
    command -v "${CC:-cc}" >/dev/null || missing+=("${CC:-cc} (gcc)")
    [ -f /usr/include/security/pam_modules.h ] || missing+=("Linux-PAM's headers (libpam0g-dev)")
    if [ "$build" = yes ] || [ -z "${GENERATE_MANUAL:-}" ]; then
        command -v swift >/dev/null || missing+=("swift")
    fi
    [ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]}"
}

# KeychainVersion.string, the one version every program prints.
source_version() {
    local file="$root/Sources/KeychainVersion/KeychainVersion.swift" version
    version=$(sed -n 's/^ *package static let string = "\([^"]*\)".*/\1/p' "$file" 2>/dev/null | head -n 1 || true)
    [ -n "$version" ] || die "no version in $file (package static let string = \"…\")"
    printf '%s\n' "$version"
}

# The date of the sources (the last commit), for the man pages and the changelog: the same sources give the same
# files. SOURCE_DATE_EPOCH wins when set.
source_date_epoch() {
    if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
        printf '%s\n' "$SOURCE_DATE_EPOCH"
    elif git -C "$root" log -1 --format=%ct >/dev/null 2>&1; then
        git -C "$root" log -1 --format=%ct
    else
        date +%s
    fi
}

# The release build links the Swift runtime in (--static-swift-stdlib). SwiftPM does not compile again when only that
# flag changes, and objects compiled for the shared runtime (a plain `swift build -c release` in the same folder)
# then fail to link statically (undefined swift_udat_* and CF* symbols): the hint says so.
build_programs() {
    # A release binary carries the Swift runtime, and exports no symbols (nothing links against it or loads it): its
    # dynamic symbol table would be 6 MB of the binary and its start-up.
    # A debug build takes the flags of the README's test command, whose build it reuses.
    local flags=(--static-swift-stdlib -Xlinker --no-export-dynamic) hint
    [ "$config" = debug ] && flags=(-Xcc -O2)
    hint="if the link failed on undefined swift_udat_*/CF* symbols, $scratch/$config holds objects built for the shared Swift runtime: build with --build-path NEW-FOLDER, or remove $scratch/$config"
    step "Building keychain (swift build -c $config ${flags[*]} --traits Network)"
    (cd "$root" && swift build -c "$config" "${flags[@]}" --traits Network --scratch-path "$scratch" --product keychain) \
        || die "swift build failed; $hint"
    step "Building keychain-sync-server (swift build -c $config ${flags[*]} --traits Network)"
    (cd "$root" && swift build -c "$config" "${flags[@]}" --traits Network --scratch-path "$scratch" --product keychain-sync-server) \
        || die "swift build of the sync server failed; $hint"
}

# A release binary must carry the Swift runtime: no RPATH into a toolchain, no Swift library loaded at run time. A
# debug binary loads the toolchain's: it must find it.
check_self_contained() {
    local binary="$1"
    if [ "$config" = debug ]; then
        if ldd "$binary" | grep -q 'not found'; then
            ldd "$binary" | grep 'not found' >&2
            die "$binary cannot find these libraries"
        fi
        return 0
    fi
    if readelf -d "$binary" | grep -E 'R(UN)?PATH' | grep -q -e swift -e /opt/ -e /usr/share/swift; then
        readelf -d "$binary" | grep -E 'R(UN)?PATH' >&2
        die "$binary has an RPATH into a Swift toolchain (build with --static-swift-stdlib)"
    fi
    if readelf -d "$binary" | grep NEEDED | grep -q -e libswift -e libFoundation -e libdispatch -e libBlocksRuntime -e lib_Foundation; then
        readelf -d "$binary" | grep NEEDED >&2
        die "$binary loads the Swift runtime as shared libraries (build with --static-swift-stdlib)"
    fi
}

# Runs `PROGRAM --version` through a link named PROGRAM and checks it names $version.
check_version() {
    local link="$1" name line
    name=$(basename "$link")
    line=$("$link" --version 2>&1 < /dev/null) || die "$name --version failed: $line"
    case "$line" in
        "$name $version "*|"$name $version") ;;
        *) die "$name --version says \"$line\", not version $version (Sources/KeychainVersion): rebuild" ;;
    esac
}

# The multi-call binary's links, in a folder of the work area: the man pages and the checks run each tool by name.
make_links() {
    local binary="$1"
    mkdir -p "$work/links"
    for tool in security keychaind git-credential-keychain; do
        ln -sf "$binary" "$work/links/$tool"
    done
}

# swift-argument-parser's generate-manual, from the checkout this package resolved (same version as the programs'
# parser, so the --experimental-dump-help format matches), built once into BUILD-PATH/package-tools.
find_generate_manual() {
    if [ -n "${GENERATE_MANUAL:-}" ]; then
        [ -x "$GENERATE_MANUAL" ] || die "GENERATE_MANUAL=$GENERATE_MANUAL is not an executable"
        generate_manual="$GENERATE_MANUAL"
        return
    fi
    local checkout="" candidate revision tools
    for candidate in "$scratch/checkouts/swift-argument-parser" "$root/.build/checkouts/swift-argument-parser"; do
        [ -f "$candidate/Package.swift" ] && { checkout="$candidate"; break; }
    done
    [ -n "$checkout" ] || die "no swift-argument-parser checkout in $scratch/checkouts: run swift package resolve, or set GENERATE_MANUAL"
    revision=$(git -C "$checkout" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    tools="$scratch/package-tools/swift-argument-parser-$revision"
    generate_manual=$(find "$tools/.build" -path '*/debug/generate-manual' -type f -perm -u+x 2>/dev/null | head -n 1 || true)
    [ -z "$generate_manual" ] || return 0
    step_count=$((step_count + 1))
    step "Building generate-manual (swift-argument-parser $revision, once)"
    rm -rf "$tools"
    mkdir -p "$tools"
    # A copy: building in the checkout would write into SwiftPM's own folder.
    (cd "$checkout" && tar --exclude=./.build --exclude=./.git -cf - .) | tar -xf - -C "$tools"
    swift build --quiet --package-path "$tools" --scratch-path "$tools/.build" --product generate-manual >&2
    generate_manual=$(find "$tools/.build" -path '*/debug/generate-manual' -type f -perm -u+x | head -n 1)
    [ -n "$generate_manual" ] || die "generate-manual was not built in $tools/.build"
}

# PROGRAM's man page in SECTION, gzipped into FOLDER: generate-manual's mdoc from --experimental-dump-help; for a
# program whose command line is not swift-argument-parser's (git-credential-keychain), a man(7) page holding its
# --help text.
man_page() {
    local program="$1" section="$2" folder="$3" name page
    name=$(basename "$program")
    page="$work/man/$name.$section"
    mkdir -p "$work/man" "$folder"
    "$program" --experimental-dump-help > "$work/man/$name.json" 2>/dev/null < /dev/null || true
    if [ "$(head -c 1 "$work/man/$name.json")" = "{" ]; then
        "$generate_manual" "$program" --section "$section" --date "$man_date" -o "$work/man" >/dev/null
        [ -f "$page" ] || die "generate-manual wrote no $page"
        # mdoc takes an empty line for a paragraph break but warns; say it.
        sed -i 's/^$/.Pp/' "$page"
    else
        help_to_man "$program" "$section" > "$page"
    fi
    gzip -9nc "$page" > "$folder/$name.$section.gz"
    chmod 0644 "$folder/$name.$section.gz"
}

# A man(7) page from PROGRAM --help: the usage line is the synopsis, the first sentence after it the name line,
# the whole text the description (kept as written).
help_to_man() {
    local program="$1" section="$2" name help usage summary upper
    name=$(basename "$program")
    help=$("$program" --help < /dev/null)
    usage=$(printf '%s\n' "$help" | sed -n '1s/^[Uu][Ss][Aa][Gg][Ee]: *//p')
    summary=$(printf '%s\n' "$help" | sed -n '2,$p' | sed '/^$/d' | head -n 1 | sed 's/\. .*$//; s/\.$//' || true)
    upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
    escape() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/-/\\-/g'; }
    printf '.TH %s %s %s "swift-keychain %s"\n' "$upper" "$section" "$man_date" "$version"
    printf '.SH NAME\n%s \\- %s\n' "$name" "$(printf '%s' "$summary" | escape)"
    printf '.SH SYNOPSIS\n.nf\n%s\n.fi\n' "$(printf '%s\n' "${usage:-$name}" | escape)"
    printf '.SH DESCRIPTION\n.nf\n'
    printf '%s\n' "$help" | sed '1d' | escape
    printf '.fi\n.SH SEE ALSO\n.BR security (1)\n'
}

# The Debian packages of the shared libraries BINARY... need (NEEDED entries), with versions: dpkg-shlibdeps, run in
# a throwaway debian/ layout, as debhelper would.
shlib_depends() {
    local dir="$work/shlibdeps" args=() line
    # A debug build's Swift runtime is the toolchain's, which no package ships.
    [ "$config" = release ] || args+=(--ignore-missing-info)
    mkdir -p "$dir/debian"
    printf 'Source: swift-keychain\n\nPackage: swift-keychain\nArchitecture: any\n' > "$dir/debian/control"
    for binary in "$@"; do args+=("-e$binary"); done
    line=$(cd "$dir" && dpkg-shlibdeps -O "${args[@]}" 2>"$dir/warnings") || { cat "$dir/warnings" >&2; die "dpkg-shlibdeps failed"; }
    printf '%s\n' "${line#shlibs:Depends=}"
}

# Where the system's PAM modules are, as dpkg records them (merged /usr has two names for one folder, and dpkg warns
# when it removes a package that made the folder under the other name).
pam_module_folder() {
    local unix
    unix=$(dpkg-query -S "*/$multiarch/security/pam_unix.so" 2>/dev/null | head -n 1 | sed 's/^[^:]*:[^ ]* //' || true)
    if [ -n "$unix" ]; then dirname "$unix"; else printf '/usr/lib/%s/security\n' "$multiarch"; fi
}

# The package that ships SONAME here (for the libraries the programs load with dlopen); empty when none does.
package_of_soname() {
    local soname="$1" path package
    for path in $(ldconfig -p | awk -v s="$soname" '$1 == s { print $NF }'); do
        for candidate in "$path" "/usr${path#/usr}" "${path#/usr}"; do
            package=$(dpkg-query -S "$candidate" 2>/dev/null | head -n 1 | cut -d: -f1) || true
            [ -n "$package" ] && { printf '%s\n' "$package"; return; }
        done
    done
}

# The control file of a package staged in STAGE.
write_control() {
    local stage="$1" package="$2" depends="$3" recommends="$4" suggests="$5" description="$6" size
    size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
    if [ "$config" = debug ]; then
        description="$description
 .
 DEBUG BUILD (Support/package.sh --debug), for tests on the machine that built
 it: it loads the Swift runtime from the toolchain's folder."
    fi
    {
        printf 'Package: %s\n' "$package"
        printf 'Version: %s\n' "$version"
        printf 'Architecture: %s\n' "$arch"
        printf 'Maintainer: %s\n' "$maintainer"
        printf 'Installed-Size: %s\n' "$size"
        printf 'Depends: %s\n' "$depends"
        [ -z "$recommends" ] || printf 'Recommends: %s\n' "$recommends"
        [ -z "$suggests" ] || printf 'Suggests: %s\n' "$suggests"
        printf 'Section: admin\nPriority: optional\n'
        printf 'Description: %s\n' "$description"
    } > "$stage/DEBIAN/control"
}

# /usr/share/doc/PACKAGE: copyright (machine-readable format) and changelog.gz (a native package's Debian changelog).
write_docs() {
    local stage="$1" package="$2" resolved="$3" checkouts="$4" doc
    doc="$stage/usr/share/doc/$package"
    install -d -m 0755 "$doc"
    {
        printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n'
        printf 'Upstream-Name: swift-keychain\n\n'
        printf 'Files: *\nCopyright: the swift-keychain authors\nLicense: Apache-2.0\n\n'
        printf 'Files: usr/libexec/* usr/bin/*\n'
        printf 'Copyright: the swift-keychain authors, the Swift project authors, and the authors of the packages below\n'
        printf 'License: Apache-2.0\n'
        printf ' The programs are linked statically with the Swift runtime and Foundation (Apache-2.0 with the Runtime\n'
        printf ' Library Exception; Foundation carries ICU, under the Unicode license) and with these Swift packages\n'
        printf ' (Package.resolved):\n .\n'
        bundled_packages "$resolved" "$checkouts" | sed 's/^/ /'
        printf ' .\n Their license texts are in their repositories; the Apache-2.0 text is below.\n\n'
        printf 'License: Apache-2.0\n'
        printf ' On Debian systems the full text of the Apache License 2.0 is in\n'
        printf ' /usr/share/common-licenses/Apache-2.0.\n'
    } > "$doc/copyright"
    {
        printf '%s (%s) unstable; urgency=medium\n\n' "$package" "$version"
        printf '  * swift-keychain %s. What changed is in CHANGELOG.md of the sources.\n\n' "$version"
        printf ' -- %s  %s\n' "$maintainer" "$(LC_ALL=C date -u -d "@$epoch" '+%a, %d %b %Y %H:%M:%S +0000')"
    } | gzip -9n > "$doc/changelog.gz"
    chmod 0644 "$doc/copyright" "$doc/changelog.gz"
}

# "name version (license): location" for each package RESOLVED (a Package.resolved) pins, but those that only build
# documentation; the licence is read from the checkout when there is one.
bundled_packages() {
    local resolved="$1" checkouts="$2"
    [ -f "$resolved" ] || { printf '(%s is missing)\n' "$resolved"; return; }
    python3 - "$resolved" "$checkouts" <<'PYTHON' 2>/dev/null || sed -n 's/.*"identity" : "\(.*\)".*/\1/p' "$resolved"
import json, os, sys
pins = json.load(open(sys.argv[1]))["pins"]
for pin in sorted(pins, key=lambda p: p["identity"]):
    if pin["identity"] in ("swift-docc-plugin", "swift-docc-symbolkit"):
        continue
    state = pin.get("state", {})
    version = state.get("version") or state.get("revision", "")[:12]
    license = "see its repository"
    folder = os.path.join(sys.argv[2], os.path.basename(pin["location"].rstrip("/")).removesuffix(".git"))
    for name in ("LICENSE.txt", "LICENSE", "LICENSE.md", "COPYING"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            text = open(path, errors="replace").read(4000)
            license = "Apache-2.0" if "Apache License" in text else "MIT" if "Permission is hereby granted" in text else \
                      "BSD" if "Redistribution and use" in text else license
            break
    print(f"{pin['identity']} {version} ({license}): {pin['location']}")
PYTHON
}

# The checkouts folder of scratch folder DIR, else the root package's.
checkouts_of() {
    if [ -d "$1/checkouts" ]; then printf '%s\n' "$1/checkouts"; else printf '%s\n' "$root/.build/checkouts"; fi
}

# Copies a maintainer script from Support/debian.
maintainer_script() {
    local stage="$1" package="$2" script="$3"
    install -m 0755 "$here/debian/$package.$script" "$stage/DEBIAN/$script"
}

# Installs the multi-call binary and its hard links (the layout every install of swift-keychain shares). Stripped
# first: strip writes a new file, which would part the links.
stage_programs() {
    local stage="$1" binary="$2"
    install -d -m 0755 "$stage/usr/libexec/swift-keychain" "$stage/usr/bin"
    install -m 0755 "$binary" "$stage/usr/libexec/swift-keychain/keychain"
    [ "$config" = debug ] || strip --strip-all "$stage/usr/libexec/swift-keychain/keychain"
    for tool in security keychaind git-credential-keychain; do
        ln "$stage/usr/libexec/swift-keychain/keychain" "$stage/usr/bin/$tool"
    done
}

stage_swift_keychain() {
    local stage="$work/swift-keychain" units="$root/Support/systemd" pamdir depends recommends soname package
    step "Staging swift-keychain $version"
    install -d -m 0755 "$stage/DEBIAN"
    stage_programs "$stage" "$program_binary"

    # systemd: the system keychaind, and the per-user one (with the Secret Service) for systemd --user.
    install -d -m 0755 "$stage/usr/lib/systemd/system" "$stage/usr/lib/systemd/user/keychaind.service.d" \
        "$stage/usr/lib/sysusers.d" "$stage/usr/lib/tmpfiles.d" "$stage/usr/share/dbus-1/services"
    install -m 0644 "$units/keychaind-system.socket" "$stage/usr/lib/systemd/system/keychaind-system.socket"
    sed 's|/usr/local/bin/keychaind|/usr/bin/keychaind|g; s|(/usr/local/bin by default; Support/install.sh|(/usr/bin in the package; Support/install.sh|' \
        "$units/keychaind-system.service" > "$stage/usr/lib/systemd/system/keychaind-system.service"
    install -m 0644 "$units/keychaind.socket" "$stage/usr/lib/systemd/user/keychaind.socket"
    # The SSH agent's socket ships off: `systemctl --user enable --now keychaind-ssh-agent.socket` turns it on.
    install -m 0644 "$units/keychaind-ssh-agent.socket" "$stage/usr/lib/systemd/user/keychaind-ssh-agent.socket"
    sed 's|%h/.local/bin/keychaind|/usr/bin/keychaind|g; s|(~/.local/bin here)|(/usr/bin here)|' \
        "$units/keychaind.service" > "$stage/usr/lib/systemd/user/keychaind.service"
    sed 's|%h/.local/bin/keychaind|/usr/bin/keychaind|g; s|^# Installed by `Support/install.sh --user --secret-service`\.|# Installed by the swift-keychain package (an empty ~/.config/systemd/user/keychaind.service.d/secret-service.conf turns it off).|' \
        "$units/keychaind.service.d/secret-service.conf" \
        > "$stage/usr/lib/systemd/user/keychaind.service.d/secret-service.conf"
    install -m 0644 "$units/sysusers.d/keychain.conf" "$stage/usr/lib/sysusers.d/keychain.conf"
    install -m 0644 "$units/tmpfiles.d/keychain.conf" "$stage/usr/lib/tmpfiles.d/keychain.conf"
    grep -q '^ExecStart=/usr/bin/keychaind' "$stage/usr/lib/systemd/system/keychaind-system.service" \
        || die "keychaind-system.service has no ExecStart=/usr/local/bin/keychaind to point at /usr/bin"
    grep -q '^ExecStart=/usr/bin/keychaind' "$stage/usr/lib/systemd/user/keychaind.service" \
        || die "keychaind.service has no ExecStart=%h/.local/bin/keychaind to point at /usr/bin"
    # D-Bus activation: without systemd --user the bus runs Exec (a keychaind for this session's user, serving the
    # Secret Service); with it, SystemdService= has systemd start keychaind.service with the drop-in above.
    {
        printf '# D-Bus activation of the freedesktop Secret Service by keychaind (swift-keychain). With systemd --user the\n'
        printf '# bus has systemd start keychaind.service, which the drop-in keychaind.service.d/secret-service.conf makes\n'
        printf '# serve it; without, the bus runs Exec: a keychaind of this user, on the default per-user socket.\n'
        grep -v '^#' "$root/Support/dbus/org.freedesktop.secrets.service" \
            | sed 's|^Exec=.*|Exec=/usr/bin/keychaind --foreground --secret-service|'
    } > "$stage/usr/share/dbus-1/services/org.freedesktop.secrets.service"
    grep -q '^SystemdService=keychaind.service$' "$stage/usr/share/dbus-1/services/org.freedesktop.secrets.service" \
        || die "Support/dbus/org.freedesktop.secrets.service has no SystemdService=keychaind.service"
    # xdg-desktop-portal's Secret portal: keychaind's Secret Service connection is its backend (Flatpak apps' secrets).
    install -d -m 0755 "$stage/usr/share/xdg-desktop-portal/portals"
    install -m 0644 "$root/Support/portal/keychain.portal" "$stage/usr/share/xdg-desktop-portal/portals/keychain.portal"

    # PAM: in the folder of the system's own modules (pam_unix.so's, as dpkg knows it: /lib/MULTIARCH/security on
    # Debian 12, /usr/lib/MULTIARCH/security later), so that dpkg sees the folder shared with libpam-modules.
    pamdir="$stage$(pam_module_folder)"
    install -d -m 0755 "$pamdir" "$stage/usr/share/pam-configs"
    install -m 0644 "$pam_module" "$pamdir/pam_keychain.so"
    [ "$config" = debug ] || strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pamdir/pam_keychain.so"
    install -m 0644 "$here/debian/swift-keychain.pam-config" "$stage/usr/share/pam-configs/swift-keychain"

    step "Writing the man pages of security, keychaind and git-credential-keychain"
    man_page "$work/links/security" 1 "$stage/usr/share/man/man1"
    man_page "$work/links/git-credential-keychain" 1 "$stage/usr/share/man/man1"
    man_page "$work/links/keychaind" 8 "$stage/usr/share/man/man8"

    write_docs "$stage" swift-keychain "$root/Package.resolved" "$(checkouts_of "$scratch")"
    for script in preinst postinst prerm postrm; do maintainer_script "$stage" swift-keychain "$script"; done

    step "Computing swift-keychain's dependencies (dpkg-shlibdeps)"
    depends=$(shlib_depends "$program_binary" "$pam_module")
    # The postinst makes the keychain user with systemd-sysusers where systemd is, else with useradd or adduser.
    depends="$depends, passwd | adduser"
    # Loaded with dlopen when needed (Sources/CKeychainPKCS12/libcrypto.c, Sources/CKeychainTPM/ckeychain_tpm.c,
    # Sources/CKeychainImport, Sources/CKeychainPKCS11): PKCS#12 import/export, sealing the device key to a TPM,
    # importing KeePass databases and reaching smart cards through p11-kit work without them only by failing.
    recommends="pinentry-curses | pinentry"
    for soname in libcrypto.so.3 libtss2-esys.so.0 libtss2-tctildr.so.0 libtss2-mu.so.0 libtss2-rc.so.0 libargon2.so.1 libz.so.1 libp11-kit.so.0; do
        package=$(package_of_soname "$soname")
        if [ -n "$package" ]; then
            case ", $recommends, " in *", $package, "*) ;; *) recommends="$recommends, $package" ;; esac
        else
            echo "package.sh: no installed package ships $soname; it is left out of Recommends" >&2
        fi
    done
    write_control "$stage" swift-keychain "$depends" "$recommends" "fprintd, dbus-user-session" \
"Apple's Keychain for Linux: keychaind, security, git-credential-keychain
 swift-keychain keeps passwords, keys, certificates and identities in a
 keychain with Apple's Keychain Services semantics (SecItem, access groups,
 access control), served by keychaind, which identifies each calling program
 from the kernel and decides what it may reach.
 .
 This package holds keychaind (the system service for every local user, and a
 per-user daemon started on demand), the security tool with macOS's syntax,
 git's credential helper git-credential-keychain, the freedesktop Secret
 Service (org.freedesktop.secrets, started by D-Bus activation) and
 pam_keychain.so, which unlocks the login keychain at login (enable it with
 pam-auth-update --enable swift-keychain)."
    build_deb "$stage" "swift-keychain_${version}_${arch}.deb"
}

stage_sync_server() {
    local stage="$work/keychain-sync-server" depends
    step "Staging keychain-sync-server $version"
    install -d -m 0755 "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/systemd/system"
    install -m 0755 "$server_binary" "$stage/usr/bin/keychain-sync-server"
    [ "$config" = debug ] || strip --strip-all "$stage/usr/bin/keychain-sync-server"
    sed 's|/usr/local/bin/keychain-sync-server|/usr/bin/keychain-sync-server|g' "$root/Support/systemd/keychain-sync-server.service" \
        > "$stage/usr/lib/systemd/system/keychain-sync-server.service"
    grep -q '^ExecStart=/usr/bin/keychain-sync-server' "$stage/usr/lib/systemd/system/keychain-sync-server.service" \
        || die "keychain-sync-server.service has no ExecStart=/usr/local/bin/keychain-sync-server to point at /usr/bin"
    # The unit's settings, commented out: a conffile, so that an upgrade keeps the operator's.
    install -d -m 0755 "$stage/etc/keychain-sync-server"
    install -m 0600 "$root/Support/systemd/keychain-sync-server.env" "$stage/etc/keychain-sync-server/env"
    echo /etc/keychain-sync-server/env > "$stage/DEBIAN/conffiles"
    man_page "$stage/usr/bin/keychain-sync-server" 8 "$stage/usr/share/man/man8"
    write_docs "$stage" keychain-sync-server "$root/Package.resolved" "$(checkouts_of "$scratch")"
    for script in postinst prerm postrm; do maintainer_script "$stage" keychain-sync-server "$script"; done
    depends=$(shlib_depends "$stage/usr/bin/keychain-sync-server")
    write_control "$stage" keychain-sync-server "$depends" "" "postgresql" \
"swift-keychain's end-to-end-encrypted sync server
 keychain-sync-server lets swift-keychain's keychains sync between a user's
 machines. It stores only opaque bytes (ciphertexts, wrapped keys, signed
 device lists, public keys) in PostgreSQL and keeps nothing on local disk.
 .
 The systemd unit keychain-sync-server.service is installed but not enabled:
 set the database in /etc/keychain-sync-server/env and run
 keychain-sync-server setup-database first (see the unit's comments)."
    build_deb "$stage" "keychain-sync-server_${version}_${arch}.deb"
}

build_deb() {
    local stage="$1" file="$2" compression=()
    # DEBIAN/md5sums, as dh_md5sums writes it (dpkg --verify and debsums read it).
    (cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 -r md5sum > DEBIAN/md5sums)
    chmod 0644 "$stage/DEBIAN/md5sums"
    # A debug build's binary is large and thrown away after the test: light compression, fast.
    [ "$config" = debug ] && compression=(-Zgzip -z1)
    step "Building $file"
    SOURCE_DATE_EPOCH="$epoch" dpkg-deb --root-owner-group "${compression[@]}" --build "$stage" "$out/$file" >/dev/null
    built+=("$out/$file")
}

main() {
    parse_arguments "$@"
    require_tools
    version=$(source_version)
    epoch=$(source_date_epoch)
    man_date=$(date -u -d "@$epoch" +%F)
    arch=$(dpkg --print-architecture)
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || "${CC:-cc}" -print-multiarch)
    maintainer="${DEBFULLNAME:-$(git -C "$root" config user.name 2>/dev/null || echo swift-keychain)} <${DEBEMAIL:-$(git -C "$root" config user.email 2>/dev/null || echo "root@localhost")}>"
    local sync=yes
    # Steps: build (1, or 2 with the server), PAM, checks, staging, man pages, dependencies, deb (+ server: staging, deb).
    step_count=6
    [ "$build" = yes ] && step_count=$((step_count + 1))
    [ "$sync" = yes ] && step_count=$((step_count + 2))
    [ "$build" = yes ] && [ "$sync" = yes ] && step_count=$((step_count + 1))
    built=()

    work=$(mktemp -d "${TMPDIR:-/tmp}/swift-keychain-package.XXXXXX")
    trap 'rm -rf "$work"' EXIT

    [ "$build" = no ] || build_programs
    local products="$scratch/$config"
    program_binary="$products/keychain"
    [ -x "$program_binary" ] || die "$program_binary is missing: build it (run without --no-build)"

    step "Building pam_keychain.so (cc, against Linux-PAM)"
    pam_module="$work/pam_keychain.so"
    # The same file install.sh --pam builds: C only, no Swift runtime (every program that logs someone in loads it).
    "${CC:-cc}" -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
        -Wl,-z,relro,-z,now -Wl,--as-needed -I "$root/Sources/CPAMKeychain/include" \
        "$root/Sources/CPAMKeychain/pam_keychain.c" -lpam -o "$pam_module"

    step "Checking the programs (their libraries, version $version)"
    check_self_contained "$program_binary"
    make_links "$program_binary"
    for tool in security keychaind git-credential-keychain; do check_version "$work/links/$tool"; done
    find_generate_manual
    stage_swift_keychain

    if [ "$sync" = yes ]; then
        server_binary="$scratch/$config/keychain-sync-server"
        [ -x "$server_binary" ] || die "$server_binary is missing: build it (run without --no-build)"
        check_self_contained "$server_binary"
        ln -sf "$server_binary" "$work/links/keychain-sync-server"
        check_version "$work/links/keychain-sync-server"
        stage_sync_server
    fi

    echo "Built ($config):"
    for file in "${built[@]}"; do
        printf '  %-60s %6s  (installed %s MiB)\n' "$file" "$(du -h "$file" | cut -f1)" \
            "$(( ($(dpkg-deb -f "$file" Installed-Size) + 1023) / 1024 ))"
    done
    for file in "$work/swift-keychain/usr/libexec/swift-keychain/keychain" "$work/keychain-sync-server/usr/bin/keychain-sync-server"; do
        [ -f "$file" ] && printf '  %-60s %6s\n' "${file#"$work"/*/}" "$(du -h "$file" | cut -f1)"
    done
    return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
