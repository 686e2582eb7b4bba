#!/bin/sh
# otlp_demo_check.sh JSONLW CHECK.mjs OUT: `jsonlw demo --format otlp` writes OUT, then
# OpenTelemetry JS's protobuf types decode every line strictly (CHECK.mjs) and each writer's
# log records equal the records it counted written; `jsonlw validate` and `jsonlw report`
# read the same files; then a line broken against the OTLP JSON rules (an intValue as a
# number, an upper-case traceId) must fail both the consumer and validate.
# Exit 77 (meson: skipped) when node or the npm package is missing.
set -eu
jsonlw=$1 check=$2 out=$3
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (Debian: apt-get install nodejs npm)"
    exit 77
fi
rm -rf "$out" "$out.bad"
"$jsonlw" demo --in-process --requests 200 --rate 2000 --format otlp --out "$out" \
    --summary-json "$out.summary.json" >"$out.log" 2>&1 ||
    { tail -n 30 "$out.log"; echo "FAIL: jsonlw demo --format otlp exited $?"; exit 1; }
set +e
node "$check" "$out" "$out.summary.json"
rc=$?
set -e
[ "$rc" -eq 0 ] || exit "$rc"
"$jsonlw" validate --quiet "$out" || { echo "FAIL: jsonlw validate rejected the OTLP files"; exit 1; }
"$jsonlw" report --quiet "$out" >"$out.report" 2>&1 || { cat "$out.report"; echo "FAIL: jsonlw report failed"; exit 1; }
grep -q "lines are OTLP LogsData" "$out.report" || { cat "$out.report"; echo "FAIL: report did not read OTLP"; exit 1; }
echo "OK: validate and report read the OTLP files"

# With the hash chain too: every OTLP line sealed whole, nothing dropped, the chain verifies.
rm -rf "$out.chain"
"$jsonlw" demo --in-process --requests 100 --rate 2000 --format otlp --chain sha256 --out "$out.chain" \
    >"$out.chain.log" 2>&1 || { tail -n 30 "$out.chain.log"; echo "FAIL: demo --format otlp --chain sha256"; exit 1; }
"$jsonlw" verify "$out.chain" || { echo "FAIL: jsonlw verify rejected the chained OTLP files"; exit 1; }
echo "OK: OTLP lines with the hash chain verify"

# Broken copies: each must fail the consumer and validate.
for breakage in 's/"intValue":"\([0-9]*\)"/"intValue":\1/' 's/"traceId":"\([0-9a-f]\)/"traceId":"A/'; do
    rm -rf "$out.bad" && cp -r "$out" "$out.bad"
    f=$(grep -rl '"traceId"' "$out.bad" --include='*.jsonl' | sort | head -n 1)
    sed -i "1$breakage" "$f"
    if cmp -s "$f" "$out/${f#"$out.bad/"}"; then echo "FAIL: '$breakage' changed nothing in $f"; exit 1; fi
    if node "$check" "$out.bad" >"$out.bad.log" 2>&1; then
        echo "FAIL: the consumer accepted $f after '$breakage'"; exit 1
    fi
    grep -E "FAIL: .*:1: " "$out.bad.log" | head -n 1
    if "$jsonlw" validate --quiet "$out.bad" >"$out.bad.validate" 2>&1; then
        echo "FAIL: validate accepted $f after '$breakage'"; exit 1
    fi
    grep -m1 "malformed: OTLP" "$out.bad.validate" || { cat "$out.bad.validate"; echo "FAIL: validate did not name the OTLP rule"; exit 1; }
done
echo "OK: a line broken against the OTLP JSON rules fails the consumer and validate"
