#!/bin/sh
# Builds keychaind in release and runs secret_service_bench.py with it: gnome-keyring and keychaind's Secret Service
# side by side, each on a private session bus, through Python's secretstorage. Every argument goes to the script:
#
#   Benchmarks/Scripts/secret-service-bench.sh [--sizes 100,1000,10000] [--json FILE] [...]   (see --help)
#
# Needs python3 with secretstorage (Debian: python3-secretstorage), dbus-daemon and gnome-keyring-daemon.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
case " $* " in
    *" -h "*|*" --help "*) ;;
    *) swift build -c release --product keychaind >&2 ;;
esac
# The system's python3: where apt's python3-secretstorage is, even when a pyenv python3 comes first on PATH.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
exec "$python" "$root/Benchmarks/Scripts/secret_service_bench.py" --keychaind "$root/.build/release/keychaind" "$@"
