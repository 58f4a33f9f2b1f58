#!/bin/bash
# How long a new machine's first sync of N items takes through the command line, as a person runs it: the release
# `security` (the multi-call binary, as installed) on two keychains opened in its own process, and the release
# `keychain-sync-server` on a throwaway PostgreSQL (fsync on), all on this machine.
#
#   Benchmarks/Scripts/initial-sync-cli.sh [N]        (default: 10000)
#
# The first machine gets N passwords from a KeePass database (`security import-keyring`), makes them synchronizable
# (`security sync items add generic-password --all`), makes the account and uploads them; the second joins with an
# invitation and is approved; its second `security sync join` (joined, then the first round: the feed read, N records
# opened and written as items) is timed, run under `script` so that its progress is drawn on a terminal as a person
# would see it. Needs keepassxc-cli, bc, script (util-linux) and PostgreSQL's server binaries; run as root or as a
# user who may run initdb.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
count=${1:-10000}
cd "$root"
# The benchmark package's release build holds both (SyncBenchmarks depends on them).
swift build -c release --package-path Benchmarks --product SyncBenchmarks >&2
release=$root/Benchmarks/.build/release
bin=$root/Benchmarks/.build/initial-sync-bin
mkdir -p "$bin"
ln -f "$release/keychain" "$bin/security"
server=$release/keychain-sync-server
work=$(mktemp -d)
chmod 755 "$work"
pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$work/pg"
[ "$(id -u)" -ne 0 ] || chown postgres: "$work/pg"
as_postgres "$pg/initdb" -D "$work/pg/data" --auth=trust --username=postgres -E UTF8 >/dev/null
as_postgres "$pg/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w -o "-k $work/pg -c listen_addresses=''" start >/dev/null
server_pid=""
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    as_postgres "$pg/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
"$pg/createdb" -h "$work/pg" -U postgres sync
"$server" --port 0 --postgres-socket "$work/pg" --postgres-user postgres --postgres-database sync --no-metrics \
    --account-creations-per-hour 1000 --writes-per-account-per-minute 100000 > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 600); do grep -q "listening on 127.0.0.1:" "$work/server.log" && break; sleep 0.1; done
url="http://127.0.0.1:$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2)"

"$root/Benchmarks/Scripts/keepass-database.sh" "$count" "$work/db.kdbx"

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc | xargs printf '%.2f'; }
machine() {
    local name=$1; shift
    KEYCHAIN_HOME=$work/$name HOME=$work/$name KEYCHAIN_DAEMON_SOCKET=off "$bin/security" "$@"
}
mkdir -p "$work/alpha" "$work/beta"
s=$(now); printf 'pw\n' | machine alpha import-keyring --password-stdin "$work/db.kdbx" >/dev/null; e=$(now)
echo "first machine: import-keyring of $count entries: $(secs "$s" "$e") s"
s=$(now); machine alpha sync items add generic-password --all; e=$(now)
echo "first machine: sync items add --all: $(secs "$s" "$e") s"
account=$(machine alpha sync create-account --server "$url" --name alpha | sed -n 's/^account: //p')
s=$(now); machine alpha sync now | tr '\n' ' '; e=$(now)
echo "- first machine's upload: $(secs "$s" "$e") s"
uri=$(machine alpha sync invite | sed -n 's/^uri: //p')
code=$(machine beta sync join --invitation "$uri" | sed -n 's/^code: //p')
machine alpha sync approve "$code" --name beta >/dev/null
# The timed part, on a terminal: joined, then the first round with its progress line.
s=$(now)
KEYCHAIN_HOME=$work/beta HOME=$work/beta KEYCHAIN_DAEMON_SOCKET=off \
    script -qec "$bin/security sync join --server $url --account $account" "$work/join.typescript" > /dev/null
e=$(now)
echo "second machine: sync join (joined + first round of $count items), on a terminal: $(secs "$s" "$e") s"
lines=$(tr '\r' '\n' < "$work/join.typescript" | sed 's/\x1b\[K//g')
echo "progress lines drawn: $(grep -c '^syncing:' <<< "$lines" || true); the last: $(grep '^syncing:' <<< "$lines" | tail -1)"
grep -E '^(join:|applied:|received:|sent:)' <<< "$lines"
found=$(machine beta find-generic-password -l "entry 7" -w 2>/dev/null || true)
echo "second machine reads entry 7: ${found:-nothing}"
