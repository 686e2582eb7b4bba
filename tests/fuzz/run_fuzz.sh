#!/usr/bin/env bash
# Runs one libFuzzer target for JSONLW_FUZZ_SECONDS (default 30) seconds over its seed corpus,
# keeping what it learns in WORKDIR (never in the source tree). Prints one summary line,
# "fuzz NAME: N execs in S s (E exec/s), corpus C inputs", and on a crash the input's path:
# fix the bug, then copy the input into tests/fuzz/corpus/NAME/ (the replay test keeps it).
#   run_fuzz.sh NAME FUZZER SEED_DIR WORKDIR
set -uo pipefail
name=$1 fuzzer=$2 seeds=$3 work=$4
secs=${JSONLW_FUZZ_SECONDS:-30}
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/fuzz.log
# libFuzzer exits 77 on a crash by default, which meson reads as "skipped": make it 1.
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -error_exitcode=1 -timeout_exitcode=1 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$seeds" >"$log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$log" | tail -1)
execs=${runs% *} took=${runs#* }
[[ -n $runs ]] || execs=0 took=$secs
inputs=$(find "$work/corpus" -type f | wc -l)
echo "fuzz $name: $execs execs in $took s ($((execs / (took > 0 ? took : 1))) exec/s), corpus $inputs inputs"
if ((rc != 0)); then
    tail -n 60 "$log"
    for a in "$work"/artifacts/*; do
        [[ -f $a ]] && echo "crash input: $a (add it to tests/fuzz/corpus/$name/ once fixed)"
    done
fi
exit "$rc"
