#!/bin/sh
# demo_check.sh JSONLW CHECK.mjs OUT: the loss query of docs/shipping.md on the demo's own
# output — `jsonlw demo --envelope` (perf metrics rotated) writes OUT and OUT/writers.json,
# and CHECK.mjs proves from the files alone that each of the three writers lost exactly what
# it counted. Exit 77 (meson: skipped) when node or the check's npm package is missing.
set -eu
jsonlw=$1 check=$2 out=$3
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (Debian: apt-get install nodejs npm)"
    exit 77
fi
rm -rf "$out"
"$jsonlw" demo --in-process --requests 300 --rate 2000 --envelope --rotate-bytes 20000 --out "$out" >"$out.log" 2>&1 ||
    { tail -n 30 "$out.log"; echo "FAIL: jsonlw demo exited $?"; exit 1; }
node "$check" "$out" "$out/writers.json"
