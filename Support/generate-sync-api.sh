#!/bin/sh
# Generates the sync API's code (Sources/KeychainSyncAPI/Generated/: types, server and client, package access) from
# Sources/KeychainSyncAPI/openapi.yaml with swift-openapi-generator, as its build plugin would, and commits nothing.
# The code is generated here rather than by the plugin at build time so that a package depending on swift-keychain
# resolves no OpenAPI generator (a plugin cannot be conditioned on the Network trait) and builds no YAML parser.
#
#   Support/generate-sync-api.sh           rewrite Generated/ after changing openapi.yaml or the generator's config
#   Support/generate-sync-api.sh --check   fail (exit 1) when Generated/ is not what the document gives (CI)
#
# The generator (apple/swift-openapi-generator, the version below) is cloned and built once in
# .build-openapi-generator/ (a minute or two), or taken from $OPENAPI_GENERATOR when set.
# Each file is wrapped in `#if Network` (the module is empty without the trait), and its `package import`s become
# plain imports (Swift 6.3 warns about the generator's unused `package import`s; 6.4's generator silences them).
set -eu
version=1.14.3
check=no
[ "${1:-}" = --check ] && check=yes
root=$(cd "$(dirname "$0")/.." && pwd)
api="$root/Sources/KeychainSyncAPI"
generator="${OPENAPI_GENERATOR:-}"
if [ -z "$generator" ]; then
    tools="$root/.build-openapi-generator"
    # A debug build: it compiles faster than a release build (CI builds it each run, about 90 s on two cores), and
    # one small document is generated fast either way.
    generator="$tools/build/debug/swift-openapi-generator"
    if [ ! -x "$generator" ]; then
        echo "Building swift-openapi-generator $version in $tools (once)…" >&2
        [ -d "$tools/source" ] || git clone --quiet --depth 1 --branch "$version" https://github.com/apple/swift-openapi-generator.git "$tools/source"
        swift build --package-path "$tools/source" --scratch-path "$tools/build" --product swift-openapi-generator >&2
    fi
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$generator" generate --config "$api/openapi-generator-config.yaml" --output-directory "$out/raw" "$api/openapi.yaml" \
    >"$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
mkdir -p "$out/Generated"
for file in "$out"/raw/*.swift; do
    {
        echo "#if Network"
        sed 's/^@_spi(Generated) package import /@_spi(Generated) import /; s/^package import /import /' "$file"
        echo "#endif"
    } > "$out/Generated/$(basename "$file")"
done
if [ "$check" = yes ]; then
    if diff -r "$out/Generated" "$api/Generated" >/dev/null; then
        echo "Sources/KeychainSyncAPI/Generated matches openapi.yaml."
    else
        diff -r "$out/Generated" "$api/Generated" | head -40 >&2
        echo "Sources/KeychainSyncAPI/Generated is not what openapi.yaml gives: run Support/generate-sync-api.sh and commit the result." >&2
        exit 1
    fi
else
    rm -rf "$api/Generated"
    cp -r "$out/Generated" "$api/Generated"
    echo "Wrote $(ls "$api/Generated" | wc -l) files to Sources/KeychainSyncAPI/Generated."
fi
