#!/bin/sh
# What a script or git pays to start the tools: `security find-generic-password -w` and
# `git-credential-keychain get` as whole processes, timed with hyperfine, beside `/bin/true` and `security help`,
# with the keychain opened in the process (KEYCHAIN_HOME, no keychaind) and through a keychaind found the default
# way ($XDG_RUNTIME_DIR/keychain/keychaind.sock). Prints a markdown table: median, mean ± σ, min, max.
#
#   Benchmarks/Scripts/startup.sh [--bin DIR] [--build-path DIR] [--runs N] [--warmup N] [--json FILE]
#
#   --bin DIR         time the programs in DIR (security, git-credential-keychain, keychaind) instead of building
#   --build-path DIR  build in DIR (swift build --scratch-path); default .build
#   --runs N          runs per command (default 200); --warmup N runs first, untimed (default 20)
#   --json FILE       also keep hyperfine's JSON export
#
# Without --bin it builds the release programs as Support/install.sh does (`swift build -c release
# --static-swift-stdlib`). Everything runs in a temporary folder (two keychains, one keychaind), removed at the end;
# your own keychain is never touched. Needs hyperfine (Debian: apt-get install hyperfine), python3, and a C compiler
# when hyperfine is older than 1.16 (for `--input`): then a five-line program feeds standard input by one exec.
set -eu

bin=""
scratch=""
runs=200
warmup=20
json_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift ;;
        --build-path) scratch="$2"; shift ;;
        --runs) runs="$2"; shift ;;
        --warmup) warmup="$2"; shift ;;
        --json) json_out="$2"; shift ;;
        -h|--help) sed -n '2,/^set -eu$/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "startup.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
command -v hyperfine >/dev/null || { echo "startup.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "$bin" ]; then
    [ -n "$scratch" ] || scratch="$root/.build"
    for program in security git-credential-keychain keychaind; do
        (cd "$root" && swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$program" >&2)
    done
    bin="$scratch/release"
fi
bin=$(cd "$bin" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/keychain-startup.XXXXXX")
daemon=""
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The programs side by side in one folder (keychaind trusts the security beside it as the admin tool).
mkdir -p "$work/bin"
for program in security git-credential-keychain keychaind; do cp "$bin/$program" "$work/bin/"; done
security="$work/bin/security"
helper="$work/bin/git-credential-keychain"
printf 'protocol=https\nhost=example.com\n\n' > "$work/get.txt"

# Standard input from a file without a shell: hyperfine's --input (1.16+), else a tiny exec wrapper.
if hyperfine --help 2>/dev/null | grep -q -- '--input'; then
    stdin_note="hyperfine --input"
    with_input() { echo "--input $work/get.txt"; }
    run_get() { echo "$helper get"; }
else
    stdin_note="a one-exec wrapper (hyperfine $(hyperfine --version | cut -d' ' -f2) has no --input), whose own cost is the \`stdin-from /bin/true\` row"
    cat > "$work/stdin-from.c" <<'EOF'
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = argc > 2 ? open(argv[1], O_RDONLY) : -1;
    if (fd < 0 || dup2(fd, 0) < 0) return 127;
    execv(argv[2], argv + 2);
    return 127;
}
EOF
    ${CC:-cc} -O2 -static -o "$work/stdin-from" "$work/stdin-from.c" 2>/dev/null || ${CC:-cc} -O2 -o "$work/stdin-from" "$work/stdin-from.c"
    with_input() { :; }
    run_get() { echo "$work/stdin-from $work/get.txt $helper get"; }
fi

# A temporary keychain is never sealed to this machine's TPM (which would time the TPM, not the start).
unset KEYCHAIN_DAEMON_SOCKET KEYCHAIN_ENTITLEMENTS
export KEYCHAIN_TPM_TCTI=none
seed() {
    printf 'secret\n' | "$security" add-generic-password -a A -s S --password-stdin
    printf 'protocol=https\nhost=example.com\nusername=bob\npassword=pw1\n\n' | "$helper" store
    [ "$("$security" find-generic-password -a A -s S -w)" = secret ]
    "$helper" get < "$work/get.txt" | grep -q '^password=pw1$' \
        || { echo "startup.sh: git-credential-keychain get did not return the stored credential" >&2; exit 1; }
}

time_rows() { # $1: label suffix, $2: JSON file
    # shellcheck disable=SC2046
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$2" \
        -n "/bin/true" "/bin/true" \
        -n "security help$1" "$security help" \
        -n "security find-generic-password -w$1" "$security find-generic-password -a A -s S -w" \
        -n "git-credential-keychain get$1" $(with_input) "$(run_get)" >&2
}

# (a) The keychain opened in each process.
export KEYCHAIN_HOME="$work/embedded"
seed
time_rows " (in-process)" "$work/embedded.json"

# (b) Through keychaind, found the default way: $XDG_RUNTIME_DIR/keychain/keychaind.sock.
unset KEYCHAIN_HOME
export XDG_RUNTIME_DIR="$work/run" XDG_DATA_HOME="$work/data"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR"
"$work/bin/keychaind" --foreground 2> "$work/keychaind.log" &
daemon=$!
for _ in $(seq 100); do grep -q 'ready' "$work/keychaind.log" 2>/dev/null && break; sleep 0.1; done
grep -q 'ready' "$work/keychaind.log" || { cat "$work/keychaind.log" >&2; echo "startup.sh: keychaind did not start" >&2; exit 1; }
seed
time_rows " (keychaind)" "$work/daemon.json"

extra=""
[ -x "$work/stdin-from" ] && extra="$work/stdin-from $work/get.txt /bin/true"
if [ -n "$extra" ]; then
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$work/wrapper.json" -n "stdin-from /bin/true" "$extra" >&2
fi

python3 - "$work" "$stdin_note" "$bin" <<'EOF'
import json, os, statistics, sys
work, note, binary = sys.argv[1], sys.argv[2], sys.argv[3]
rows, seen = [], set()
for name in ("embedded.json", "daemon.json", "wrapper.json"):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        continue
    for r in json.load(open(path))["results"]:
        if r["command"] in seen:
            continue
        seen.add(r["command"])
        rows.append(r)
print(f"Programs: {binary}; standard input: {note}.\n")
print("| command | median ms | mean ± σ ms | min ms | max ms |")
print("|---|---:|---:|---:|---:|")
for r in rows:
    ms = [t * 1000 for t in r["times"]]
    print(f"| `{r['command']}` | {statistics.median(ms):.1f} | {statistics.mean(ms):.1f} ± {statistics.stdev(ms):.1f} | {min(ms):.1f} | {max(ms):.1f} |")
EOF
if [ -n "$json_out" ]; then
    python3 -c 'import json,sys; print(json.dumps([json.load(open(p)) for p in sys.argv[1:]]))' "$work"/*.json > "$json_out"
fi
