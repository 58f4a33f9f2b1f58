#!/bin/bash
# Makes a KeePass database of N entries (titles "entry I", users "userI", URLs https://siteI.example.com, passwords
# "secret-I"), protected by the password "pw", with keepassxc-cli: the store the import and sync scripts start from.
#
#   Benchmarks/Scripts/keepass-database.sh N OUTPUT.kdbx
set -euo pipefail
count=$1 output=$2
xml=$(mktemp)
trap 'rm -f "$xml"' EXIT
python3 - "$count" "$xml" <<'PY'
import base64, os, sys
n, path = int(sys.argv[1]), sys.argv[2]
entries = "".join(
    "<Entry><UUID>%s</UUID><String><Key>Title</Key><Value>entry %d</Value></String>"
    "<String><Key>UserName</Key><Value>user%d</Value></String><String><Key>URL</Key><Value>https://site%d.example.com</Value></String>"
    "<String><Key>Password</Key><Value>secret-%d</Value></String></Entry>" % (base64.b64encode(os.urandom(16)).decode(), i, i, i, i)
    for i in range(n))
open(path, "w").write('<?xml version="1.0" encoding="UTF-8"?><KeePassFile><Meta><DatabaseName>Bench</DatabaseName></Meta>'
                      '<Root><Group><Name>Root</Name>' + entries + '</Group></Root></KeePassFile>')
PY
printf 'pw\npw\n' | QT_QPA_PLATFORM=offscreen keepassxc-cli import -q -p "$xml" "$output" >/dev/null 2>&1
