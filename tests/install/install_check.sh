#!/usr/bin/env bash
# The `install` test: builds like a user of an installed jsonlw.
#   install_check.sh BUILD_DIR SOURCE_DIR MESON WITH_KAFKA(0|1)
# Installs BUILD_DIR with --destdir into a temporary directory (the .pc files and the CMake
# package are relocatable, so the copy works where it lies), copies one small program per
# library out of the source tree, builds each twice — with CMake (find_package(jsonlw
# CONFIG)) and with plain g++ and pkg-config — runs every binary and compares its output.
# Any prefix and libdir (lib/<triplet>, lib, lib64): to check one, configure a build of the
# libraries alone and pass it, e.g.
#   meson setup B --prefix=/opt/x --libdir=lib -Dtests=false -Dtools=false -Dbench=false
#   ninja -C B && tests/install/install_check.sh B . "$(command -v meson)" 0
set -euo pipefail
build=$(readlink -f "$1") src=$(readlink -f "$2") meson=$3 with_kafka=$4

work=$(mktemp -d "${TMPDIR:-/tmp}/jsonlw-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/dest
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null

# Where things went, as meson reports it (never guessed from the layout: libdir may be
# lib/<triplet>, lib, lib64 or an absolute path): the prefix from the build options, the .pc
# and CMake package folders from the installed-files map.
IFS=$'\t' read -r prefix pc cmake_config < <("$meson" introspect "$build" --buildoptions --installed | python3 -c '
import json, sys
d = json.load(sys.stdin)
prefix = next(o["value"] for o in d["buildoptions"] if o["name"] == "prefix")
def installed(suffix):
    return next((v for v in d["installed"].values() if v.endswith(suffix)), "-")
print(prefix, installed("/pkgconfig/jsonlw.pc"), installed("/cmake/jsonlw/jsonlwConfig.cmake"), sep="\t")')
[[ -n $pc && $pc != - ]] || { echo "install: meson installs no jsonlw.pc"; exit 1; }
[[ -n $cmake_config && $cmake_config != - ]] || { echo "install: meson installs no jsonlwConfig.cmake"; exit 1; }
prefix=$dest$prefix pcdir=$dest${pc%/jsonlw.pc} cmakedir=$dest${cmake_config%/jsonlwConfig.cmake}
for f in "$pcdir/jsonlw.pc" "$cmakedir/jsonlwConfig.cmake"; do
    [[ -f $f ]] || { echo "install: no $f after meson install"; exit 1; }
done
echo "prefix ${prefix#"$dest"}, pkg-config files in ${pcdir#"$dest"}, CMake package in ${cmakedir#"$dest"}"
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
# jsonlw_DIR names the package folder: CMAKE_PREFIX_PATH alone does not reach <prefix>/lib64
# on Debian, whose CMake turns lib64 searching off (Modules/Platform/Linux.cmake).
cmake -S "$app" -B "$app/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -Djsonlw_DIR="$cmakedir" \
      -DCMAKE_BUILD_TYPE=None \
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
