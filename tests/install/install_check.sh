#!/usr/bin/env bash
# The `install` test: builds like a user of an installed jsonlw.
#   install_check.sh BUILD_DIR SOURCE_DIR MESON WITH_KAFKA(0|1)
# Installs BUILD_DIR with --destdir into a temporary directory (the .pc files and the CMake
# package are relocatable, so the copy works where it lies), copies one small program per
# library out of the source tree, builds each twice — with CMake (find_package(jsonlw
# CONFIG)) and with plain g++ and pkg-config — runs every binary and compares its output.
set -euo pipefail
build=$(readlink -f "$1") src=$(readlink -f "$2") meson=$3 with_kafka=$4

work=$(mktemp -d "${TMPDIR:-/tmp}/jsonlw-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/dest
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null

prefix=$(find "$dest" -name jsonlw.pc -path '*/pkgconfig/*' -printf '%h\n' | head -n 1)
[[ -n $prefix ]] || { echo "install: no jsonlw.pc under $dest"; exit 1; }
pcdir=$prefix
prefix=$(cd "$pcdir/../../.." && pwd)  # <prefix>/lib/<triplet>/pkgconfig
grep -q '^prefix=${pcfiledir}' "$pcdir/jsonlw.pc" ||
    { echo "install: jsonlw.pc is not relocatable (configure with -Dpkgconfig.relocatable=true)"; exit 1; }

# The programs, away from the source tree (no -I into it can help them).
app=$work/app
mkdir -p "$app"
cp "$src"/tests/install/CMakeLists.txt "$src"/tests/install/programs/*.cpp \
   "$src"/docs/snippets/writers_perf_metrics.cpp "$src"/docs/snippets/writers_raw_output.cpp \
   "$src"/docs/snippets/writers_request_trace.cpp "$app"/

programs=(core perf_metrics raw_output request_trace snapshot)
declare -A modules=([core]=jsonlw [perf_metrics]=jsonlw-perf-metrics [raw_output]=jsonlw-raw-output
                    [request_trace]=jsonlw-request-trace [snapshot]=jsonlw-snapshot [kafka]=jsonlw-kafka)
declare -A sources=([core]=core.cpp [perf_metrics]=writers_perf_metrics.cpp
                    [raw_output]=writers_raw_output.cpp [request_trace]=writers_request_trace.cpp
                    [snapshot]=snapshot.cpp [kafka]=kafka.cpp)
declare -A expect=(
    [core]='core: written 1, malformed 1'
    [perf_metrics]='perf_metrics: written 1, dropped 0'
    [raw_output]='raw_output: finished 1, written 1'
    [request_trace]='request_trace: written 2, dropped 0'
    [snapshot]='snapshot: 3 steps, 6 rows, cuda devices none'
    [kafka]='kafka: written 2')
if [[ $with_kafka == 1 ]]; then programs+=(kafka); fi
cuda_devices=$(command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -c GPU || true)
if [[ ${cuda_devices:-0} -gt 0 ]]; then expect[snapshot]='snapshot: 3 steps, 6 rows, cuda devices some'; fi

failed=0
check() {  # check HOW NAME BINARY
    local out
    out=$(cd "$work" && "$3" 2>"$work/$1-$2.err") || { echo "FAIL $1 $2: exit $?"; cat "$work/$1-$2.err"; failed=1; return; }
    if [[ $out == "${expect[$2]}" ]]; then
        echo "ok   $1 $2: $out"
    else
        echo "FAIL $1 $2: got '$out', want '${expect[$2]}'"; failed=1
    fi
}

# 1. CMake: one configure, one build of every program (-O0: compile time is all they cost).
cmake -S "$app" -B "$app/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=None \
      -DCMAKE_CXX_FLAGS=-O0 -DWITH_KAFKA=$([[ $with_kafka == 1 ]] && echo ON || echo OFF) \
      >"$work/cmake-configure.log" 2>&1 || { cat "$work/cmake-configure.log"; exit 1; }
cmake --build "$app/cmake-build" -j 2 >"$work/cmake-build.log" 2>&1 || { tail -n 60 "$work/cmake-build.log"; exit 1; }
for p in "${programs[@]}"; do check cmake "$p" "$app/cmake-build/$p"; done

# 2. pkg-config only: what `pkg-config --cflags --libs <module>` gives, nothing else.
export PKG_CONFIG_PATH=$pcdir
pids=()
for p in "${programs[@]}"; do
    # shellcheck disable=SC2046
    ${CXX:-c++} -O0 "$app/${sources[$p]}" -o "$app/pc-$p" $(pkg-config --cflags --libs "${modules[$p]}") \
        >"$work/pc-$p.log" 2>&1 &
    pids+=($!)
    if (( ${#pids[@]} == 2 )); then wait "${pids[0]}" || true; pids=("${pids[@]:1}"); fi
done
wait || true
for p in "${programs[@]}"; do
    if [[ -x $app/pc-$p ]]; then check pkg-config "$p" "$app/pc-$p"
    else echo "FAIL pkg-config $p: did not build"; tail -n 30 "$work/pc-$p.log"; failed=1; fi
done
exit "$failed"
