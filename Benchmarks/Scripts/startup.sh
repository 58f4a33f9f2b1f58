#!/bin/sh
# What a script or git pays to start the tools: `security find-generic-password -w` and
# `git-credential-keychain get` as whole processes, timed with hyperfine and their peak resident memory read by GNU
# time (`%M`, the median of 5 runs), beside `/bin/true` and `security help`, with the keychain opened in the process
# (KEYCHAIN_HOME, no keychaind) and through a keychaind found the default way ($XDG_RUNTIME_DIR/keychain/keychaind.sock),
# warm (running) and cold (the call starts it); and, as the floor of what Linux users run today, `secret-tool lookup` against gnome-keyring on a private session bus
# and `pass show` with a throwaway GnuPG key. Prints a markdown table: median, mean ± σ, min, max, peak RSS.
#
#   Benchmarks/Scripts/startup.sh [--bin DIR] [--build-path DIR] [--runs N] [--warmup N] [--json FILE]
#
#   --bin DIR         time the multi-call binary DIR/keychain instead of building it
#   --build-path DIR  build in DIR (swift build --scratch-path); default .build
#   --runs N          runs per command (default 200); --warmup N runs first, untimed (default 20)
#   --json FILE       also keep hyperfine's JSON export
#
# Without --bin it builds the installed binary as Support/package.sh does (`swift build -c release
# --static-swift-stdlib -Xlinker --no-export-dynamic --traits Network --product keychain`, stripped) and runs it by hard links named security,
# git-credential-keychain and keychaind, as installed. Everything runs in a temporary folder (two keychains, one
# keychaind, a gnome-keyring, a password store), removed at the end; your own keychain is never touched. Needs
# hyperfine, GNU time, python3 (Debian: apt-get install hyperfine time), and for the floor rows gnome-keyring,
# libsecret-tools, dbus-daemon and pass (rows left out without them); a C compiler when hyperfine is older than 1.16
# (for `--input`): then a five-line program feeds standard input by one exec.
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
    (cd "$root" && swift build -c release --static-swift-stdlib -Xlinker --no-export-dynamic --traits Network --scratch-path "$scratch" --product keychain >&2)
    bin="$scratch/release"
fi
bin=$(cd "$bin" && pwd)
command -v /usr/bin/time >/dev/null || { echo "startup.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/keychain-startup.XXXXXX")
daemon=""
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    [ -x "$work/stop-cold" ] && "$work/stop-cold"
    [ -n "${bus_pid:-}" ] && kill "$bus_pid" 2>/dev/null
    [ -n "${keyring_pid:-}" ] && kill "$keyring_pid" 2>/dev/null
    gpgconf --homedir "$work/gnupg" --kill all 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The multi-call binary, stripped, under the tools' names as hard links, as the package installs it (keychaind trusts
# the security beside it as the admin tool).
mkdir -p "$work/bin"
cp "$bin/keychain" "$work/bin/keychain"
strip --strip-all "$work/bin/keychain"
for program in security git-credential-keychain keychaind; do ln "$work/bin/keychain" "$work/bin/$program"; done
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

# Peak resident memory of one command (KiB, GNU time's %M), the median of 5 runs, kept for the table as JSON lines.
peak_rss() { # $1: label, $2: stdin file or "", then the command
    local label="$1" input="$2" i values=""
    shift 2
    for i in 1 2 3 4 5; do
        if [ -n "$input" ]; then
            /usr/bin/time -f %M -o "$work/rss.txt" "$@" < "$input" > /dev/null
        else
            /usr/bin/time -f %M -o "$work/rss.txt" "$@" > /dev/null
        fi
        values="$values $(tail -n 1 "$work/rss.txt")"
    done
    python3 -c 'import json,statistics,sys; print(json.dumps({"command": sys.argv[1], "kib": statistics.median(int(v) for v in sys.argv[2:])}))' "$label" $values >> "$work/rss.jsonl"
}
rss_rows() { # $1: label suffix
    peak_rss "/bin/true" "" /bin/true
    peak_rss "security help$1" "" "$security" help
    peak_rss "security find-generic-password -w$1" "" "$security" find-generic-password -a A -s S -w
    peak_rss "git-credential-keychain get$1" "$work/get.txt" "$helper" get
}

# (a) The keychain opened in each process.
export KEYCHAIN_HOME="$work/embedded"
seed
time_rows " (in-process)" "$work/embedded.json"
rss_rows " (in-process)"

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
rss_rows " (keychaind)"
python3 - "$daemon" >> "$work/rss.jsonl" <<'EOF'
import json, sys
status = open(f"/proc/{sys.argv[1]}/status").read()
hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
print(json.dumps({"command": "keychaind (serving, peak after the runs)", "kib": hwm}))
EOF

# (b') A cold first call: no keychaind runs, and the call starts one (autostart: spawn, open the keychain, identify
# the caller, answer). Each run is prepared by stopping the keychaind the run before started; fewer runs, as each
# takes a few hundred milliseconds.
export XDG_RUNTIME_DIR="$work/cold/run" XDG_DATA_HOME="$work/cold/data"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR" "$XDG_DATA_HOME"
cold_socket="$XDG_RUNTIME_DIR/keychain/keychaind.sock"
cat > "$work/stop-cold" <<EOF
#!/bin/sh
# Stops the keychaind serving $cold_socket and waits until it is gone.
for pid in \$(pgrep -f -- "--socket $cold_socket"); do
    kill "\$pid" 2>/dev/null
    while kill -0 "\$pid" 2>/dev/null; do sleep 0.01; done
done
exit 0
EOF
chmod +x "$work/stop-cold"
seed
pgrep -f -- "--socket $cold_socket" >/dev/null || { echo "startup.sh: the first call did not start a keychaind" >&2; exit 1; }
cold_runs=$(( runs / 4 )); [ "$cold_runs" -ge 10 ] || cold_runs=10
hyperfine -N --style basic --warmup 1 --runs "$cold_runs" --prepare "$work/stop-cold" --export-json "$work/cold.json" \
    -n "security find-generic-password -w (cold: starts keychaind)" "$security find-generic-password -a A -s S -w" >&2
"$work/stop-cold"
export XDG_RUNTIME_DIR="$work/run" XDG_DATA_HOME="$work/data"

# (c) The floor: gnome-keyring's Secret Service through libsecret's secret-tool, on a private session bus.
if command -v secret-tool >/dev/null && command -v gnome-keyring-daemon >/dev/null && command -v dbus-daemon >/dev/null; then
    mkdir -m 0700 -p "$work/gk/run" "$work/gk/home"
    dbus-daemon --session --fork --print-address=3 --print-pid=4 3> "$work/gk/address" 4> "$work/gk/pid"
    bus_pid=$(cat "$work/gk/pid")
    export DBUS_SESSION_BUS_ADDRESS
    DBUS_SESSION_BUS_ADDRESS=$(cat "$work/gk/address")
    (export HOME="$work/gk/home" XDG_RUNTIME_DIR="$work/gk/run" XDG_DATA_HOME="$work/gk/home/.local/share"
     printf 'login
' | gnome-keyring-daemon --unlock --components=secrets > "$work/gk/env" 2>/dev/null)
    keyring_pid=$(sed -n 's/^GNOME_KEYRING_PID=//p' "$work/gk/env")
    printf 'secret' | HOME="$work/gk/home" secret-tool store --label=bench service S account A
    [ "$(secret-tool lookup service S account A)" = secret ] || { echo "startup.sh: secret-tool lookup did not return the stored secret" >&2; exit 1; }
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$work/gk.json" \
        -n "secret-tool lookup (gnome-keyring)" "secret-tool lookup service S account A" >&2
    peak_rss "secret-tool lookup (gnome-keyring)" "" secret-tool lookup service S account A
fi

# (d) The floor: pass, with a throwaway GnuPG key that has no passphrase (gpg-agent started by the first run).
if command -v pass >/dev/null && command -v gpg >/dev/null; then
    export GNUPGHOME="$work/gnupg" PASSWORD_STORE_DIR="$work/pass"
    mkdir -m 0700 -p "$GNUPGHOME"
    gpg --batch --quiet --passphrase '' --quick-gen-key "bench <bench@localhost>" ed25519 default never 2>/dev/null
    gpg --batch --quiet --passphrase '' --quick-add-key "$(gpg --list-keys --with-colons | awk -F: '/^fpr/ {print $10; exit}')" cv25519 encr never 2>/dev/null
    pass init bench@localhost >/dev/null
    printf 'secret\n' | pass insert -e S >/dev/null
    [ "$(pass show S)" = secret ] || { echo "startup.sh: pass show did not return the stored secret" >&2; exit 1; }
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$work/pass.json" -n "pass show" "pass show S" >&2
    peak_rss "pass show" "" pass show S
fi

extra=""
[ -x "$work/stdin-from" ] && extra="$work/stdin-from $work/get.txt /bin/true"
if [ -n "$extra" ]; then
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$work/wrapper.json" -n "stdin-from /bin/true" "$extra" >&2
fi

python3 - "$work" "$stdin_note" "$bin" <<'EOF'
import json, os, statistics, sys
work, note, binary = sys.argv[1], sys.argv[2], sys.argv[3]
rows, seen = [], set()
rss = {}
if os.path.exists(os.path.join(work, "rss.jsonl")):
    for line in open(os.path.join(work, "rss.jsonl")):
        entry = json.loads(line)
        rss[entry["command"]] = entry["kib"]
for name in ("embedded.json", "daemon.json", "cold.json", "gk.json", "pass.json", "wrapper.json"):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        continue
    for r in json.load(open(path))["results"]:
        if r["command"] in seen:
            continue
        seen.add(r["command"])
        rows.append(r)
print(f"Programs: {binary}; standard input: {note}.\n")
size = os.path.getsize(os.path.join(work, "bin", "keychain"))
print(f"The multi-call binary, stripped: {size / 1e6:.1f} MB.\n")
print("| command | median ms | mean ± σ ms | min ms | max ms | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|")
for r in rows:
    ms = [t * 1000 for t in r["times"]]
    name = r.get("command")
    peak = rss.get(name)
    peak_text = f"{peak / 1024:.1f}" if peak is not None else ""
    print(f"| `{name}` | {statistics.median(ms):.1f} | {statistics.mean(ms):.1f} ± {statistics.stdev(ms):.1f} | {min(ms):.1f} | {max(ms):.1f} | {peak_text} |")
for name, kib in rss.items():
    if name.startswith("keychaind"):
        print(f"| `{name}` | | | | | {kib / 1024:.1f} |")
EOF
if [ -n "$json_out" ]; then
    python3 -c 'import json,sys; print(json.dumps([json.load(open(p)) for p in sys.argv[1:]]))' "$work"/*.json > "$json_out"
fi
