#!/bin/sh
# run_check.sh WRITE_FILES CHECK.mjs OUT: write_files writes OUT/files and OUT/stats.json,
# then CHECK.mjs proves from the files alone that each writer lost exactly what it counted;
# then one line is deleted from a file and CHECK.mjs must report that loss.
# Exit 77 (meson: skipped) when node or the check's npm package is missing.
set -eu
write_files=$1 check=$2 out=$3
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (Debian: apt-get install nodejs npm)"
    exit 77
fi
rm -rf "$out"
mkdir -p "$out"
"$write_files" "$out/files" "$out/stats.json"
node "$check" "$out/files" "$out/stats.json"

# A loss nobody counted: line 2 of the first writer's second file (never its last line).
f=$(find "$out/files" -name '*-000001.jsonl' | sort | head -n 1)
sed -i 2d "$f"
if node "$check" "$out/files" "$out/stats.json" >"$out/tampered.log" 2>&1; then
    echo "FAIL: the check passed with a line deleted from $f"
    exit 1
fi
if ! grep -q 'but the writer counted' "$out/tampered.log"; then
    cat "$out/tampered.log"
    echo "FAIL: the check failed with a line deleted, but not for the lost line"
    exit 1
fi
echo "OK: a line deleted from $(basename "$f") is reported as lost"
