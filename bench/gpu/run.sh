#!/usr/bin/env bash
# The prepared GPU check: runs the GPU tests, the Python package's CUDA check
# (tests/python/gpu_check.py), the CPU snapshot tests, jsonlw-bench-gpu and the
# serializer_threads scaling cells (jsonlw-bench --scenario serializers: 1, 2, 4, 8
# serializers on the machine's cores) from prebuilt binaries and writes everything under $OUT,
# in under 4 minutes.
#
#   bench/gpu/pack.sh gpu-dist          # on the CPU machine: build sm_90 binaries, collect them
#   OUT=/some/dir gpu-dist/run.sh       # on the GPU machine (or bench/gpu/run.sh gpu-dist)
#
# $OUT/results.json  {"device": ..., "steps": [{"name","rc","status","seconds"}...],
#                     "bench": <jsonlw-bench-gpu's JSON or null>,
#                     "serializers": <jsonlw-bench's JSON or null>, "wall_s": ...}
# $OUT/*.log (profile.log, ncu-*.log: the traffic model beside the hardware's counters;
# memcheck-, racecheck-, synccheck-*.log), $OUT/*.junit.xml, $OUT/bench.json,
# $OUT/serializers.json, $OUT/nvidia-smi.txt
# Every step has its own timeout and the whole run a deadline (RUN_BUDGET_S, default 225 s).
# Exit status 0 whenever results.json was written (failures are in it); QUICK=1 passes --quick
# to the benchmark. Without a GPU the tests skip (exit 77) and the bench says "no device".
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
dist=${1:-}
if [[ -z $dist ]]; then
    if [[ -d $here/bin ]]; then dist=$here; else dist=$here/../../gpu-dist; fi
fi
dist=$(cd "$dist" && pwd) || { echo "run.sh: no dist directory" >&2; exit 2; }
OUT=${OUT:?set OUT to the directory for results}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
budget=${RUN_BUDGET_S:-225}
start=$(date +%s)
steps=()

left() { echo $((budget - ($(date +%s) - start))); }

# step NAME MAX_SECONDS CMD...: runs with min(MAX, time left - 5) and records the outcome.
step() {
    local name=$1 max=$2
    shift 2
    local t=$(($(left) - 5))
    ((t > max)) && t=$max
    if ((t < 5)); then
        steps+=("{\"name\":\"$name\",\"rc\":null,\"status\":\"not run (out of time)\",\"seconds\":0}")
        return
    fi
    local s0 rc status
    s0=$(date +%s.%N)
    timeout -k 5 "$t" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    case $rc in
        0) status=pass ;;
        77) status=skip ;;
        124 | 137) status="timeout (${t}s)" ;;
        *) status=fail ;;
    esac
    local secs
    secs=$(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
    steps+=("{\"name\":\"$name\",\"rc\":$rc,\"status\":\"$status\",\"seconds\":$secs}")
    echo "run.sh: $name: $status (${secs}s)"
}

device=null
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 20 nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
    timeout 20 nvidia-smi -q -d CLOCK,MEMORY >>"$OUT/nvidia-smi.txt" 2>&1
    name=$(timeout 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
    [[ -n $name ]] && device="\"${name//\"/}\""
else
    echo "nvidia-smi not found" >"$OUT/nvidia-smi.txt"
fi

# GPU tests first (the point of the run), then the bench, then the CPU tests.
for t in "$dist"/bin/test_snapshot_gpu_*; do
    [[ -x $t && $t != *_emulated ]] || continue
    n=$(basename "$t")
    step "$n" 90 "$t" -r console -d yes
    if [[ ${steps[-1]} == *'"status":"fail"'* ]]; then
        step "$n.junit" 60 "$t" -r junit -o "$OUT/$n.junit.xml"
    fi
done
# The Python package's CUDA path (pack.sh copies it when pybind11 was found): module-allocated
# device memory through __cuda_array_interface__, the caller's stream, results against the CPU
# reference. Needs a python3 of the version it was built for; 77 (skip) otherwise.
if [[ -f $dist/gpu_check.py ]]; then
    py=$(command -v python3.11 || command -v python3 || true)
    if [[ -n $py ]]; then
        step python-gpu-check 60 env PYTHONPATH="$dist/python" "$py" "$dist/gpu_check.py"
    fi
fi
bench_args=(--json "$OUT/bench.json")
[[ ${QUICK:-0} == 1 ]] && bench_args+=(--quick)
step jsonlw-bench-gpu 120 "$dist/bin/jsonlw-bench-gpu" "${bench_args[@]}"
# The traffic model's prediction per profile shape, then what the hardware counted for the same
# launches (ncu; Firecracker machines only, gVisor has no counters): DRAM bytes, time, the
# global loads' sectors and bytes per sector, shared-memory bank conflicts. Two ncu runs, so an
# unknown metric name in the second cannot lose the first.
step profile 30 "$dist/bin/jsonlw-bench-gpu" --profile
PATH=$PATH:/usr/local/cuda/bin:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
kernels='regex:partial_kernel|merge_kernel'
if command -v ncu >/dev/null 2>&1; then
    step ncu-time 90 ncu --clock-control none --kernel-name "$kernels" --csv --page raw \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        "$dist/bin/jsonlw-bench-gpu" --profile
    step ncu-traffic 120 ncu --clock-control none --kernel-name "$kernels" --csv --page raw \
        --metrics l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum \
        "$dist/bin/jsonlw-bench-gpu" --profile
fi
if command -v compute-sanitizer >/dev/null 2>&1; then
    for t in "$dist"/bin/test_snapshot_gpu_*; do
        [[ $t == *_emulated ]] && continue
        for tool in memcheck racecheck synccheck; do
            step "$tool-$(basename "$t")" 90 compute-sanitizer --tool "$tool" --error-exitcode 1 \
                "$t" "GPU sampled ids*,GPU special rows*,GPU tiles whose elements*"
        done
    done
fi
if [[ -x $dist/bin/jsonlw-bench ]]; then
    step serializers 90 "$dist/bin/jsonlw-bench" --scenario serializers --records 400000 \
        --pairs 3 --json "$OUT/serializers.json"
fi
for t in "$dist"/bin/test_snapshot_*; do
    [[ $(basename "$t") == test_snapshot_gpu_* ]] && continue
    step "$(basename "$t")" 60 "$t" -w NoTests
done

bench=null
[[ -s $OUT/bench.json ]] && bench=$(cat "$OUT/bench.json")
serializers=null
[[ -s $OUT/serializers.json ]] && serializers=$(cat "$OUT/serializers.json")
{
    printf '{"device":%s,"steps":[' "$device"
    (IFS=,; printf '%s' "${steps[*]}")
    printf '],"bench":%s,"serializers":%s,"wall_s":%d}\n' "$bench" "$serializers" \
        $(($(date +%s) - start))
} >"$OUT/results.json"
echo "run.sh: wrote $OUT/results.json ($(($(date +%s) - start)) s)"
exit 0
