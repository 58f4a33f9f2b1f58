#!/bin/bash
# How long `security import-keyring` takes to bring a KeePass database of N entries into a keychaind with its Secret
# Service (and a second, idempotent run), how long `security lock-keychain` then takes (keychaind keeps the Secret
# Service items' labels and attributes across the lock) against the same lock with no items, how much keychaind's
# resident memory grows, and a `secret-tool search` of the locked keychain.
#
#   Benchmarks/Scripts/import-and-lock.sh [N ...]        (default: 1000 10000)
#
# Builds the installed binary in release (as startup.sh does) and the tests' scripted pinentry, which approves the
# import as the person would. Needs keepassxc-cli, secret-tool, dbus-launch (dbus-x11) and bc.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
swift build -c release --static-swift-stdlib -Xlinker --no-export-dynamic --traits Network --product keychain >&2
swift build --traits Network -Xcc -O2 --product scripted-pinentry >&2
bin=$root/.build/import-bench-bin
mkdir -p "$bin"
for name in security keychaind; do ln -f "$root/.build/release/keychain" "$bin/$name"; done
pinentry=$root/.build/debug/scripted-pinentry
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen
now() { date +%s.%N; }
ms() { echo "($2 - $1) * 1000" | bc | xargs printf '%.1f'; }

for count in "${@:-1000 10000}"; do
    for n in $count; do
        dir=$work/$n
        mkdir -p "$dir/run"
        chmod 700 "$dir/run"
        "$root/Benchmarks/Scripts/keepass-database.sh" "$n" "$dir/db.kdbx"
        printf '#!/bin/sh\nSCRIPTED_PINENTRY_DEFAULT=%s/person exec %s\n' "$dir" "$pinentry" > "$dir/pinentry"
        chmod +x "$dir/pinentry"
        echo "pin pw-1" > "$dir/person"
        (
            export KEYCHAIN_HOME=$dir/kc HOME=$dir XDG_RUNTIME_DIR=$dir/run KEYCHAIN_DAEMON_SOCKET=$dir/d.sock
            export KEYCHAIN_SECRET_SERVICE_UNREGISTERED=allow
            eval "$(dbus-launch --sh-syntax)"
            KEYCHAIN_PINENTRY=$dir/pinentry "$bin/keychaind" --secret-service --socket "$dir/d.sock" > "$dir/keychaind.log" 2>&1 &
            daemon=$!
            trap 'kill $daemon $DBUS_SESSION_BUS_PID 2>/dev/null' EXIT
            for _ in $(seq 200); do busctl --user status org.freedesktop.secrets >/dev/null 2>&1 && break; sleep 0.05; done
            rss() { awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' /proc/$daemon/status; }
            printf 'pw-1\n' | "$bin/security" set-keychain-password --new-password-stdin
            echo "== $n entries"
            for _ in 1 2 3; do
                s=$(now); "$bin/security" lock-keychain; e=$(now)
                echo "lock-keychain, no items (floor): $(ms "$s" "$e") ms"
                printf 'pw-1\n' | "$bin/security" unlock-keychain --password-stdin
            done
            before=$(rss)
            s=$(now); printf 'pw\n' | "$bin/security" import-keyring --password-stdin "$dir/db.kdbx"; e=$(now)
            echo "import-keyring: $(ms "$s" "$e") ms"
            s=$(now); printf 'pw\n' | "$bin/security" import-keyring --password-stdin "$dir/db.kdbx"; e=$(now)
            echo "import-keyring again (nothing new): $(ms "$s" "$e") ms"
            imported=$(rss)
            for _ in 1 2 3; do
                s=$(now); "$bin/security" lock-keychain; e=$(now)
                locked=$(rss)
                s2=$(now); found=$(secret-tool search UserName user7 2>/dev/null | grep -c "label = entry 7" || true); e2=$(now)
                echo "lock-keychain with the items: $(ms "$s" "$e") ms (keychaind $locked MiB); locked search: $(ms "$s2" "$e2") ms, found $found"
                printf 'pw-1\n' | "$bin/security" unlock-keychain --password-stdin
            done
            echo "keychaind RSS: $before MiB before the import, $imported after it"
        )
    done
done
