#!/usr/bin/env bash
# Builds what the GPU machine runs (on this CPU machine; sm_90 code, static cudart) and copies
# it into one directory for bench/gpu/run.sh:
#
#   bench/gpu/pack.sh [DIST=gpu-dist] [BUILDDIR=build-gpu-dist]
#
# DIST/bin: the GPU tests (test_snapshot_gpu_*), jsonlw-bench-gpu, jsonlw-bench, the CPU
# snapshot tests;
# DIST/lib: the shared libraries they need that a bare machine may lack (simdjson, fmt, ...);
# DIST/run.sh. Builds with -j1 (shared 2-core machines) unless JOBS is set.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
dist=$(readlink -m "${1:-$root/gpu-dist}")
build=$(readlink -m "${2:-$root/build-gpu-dist}")
jobs=${JOBS:-1}

if [[ ! -f $build/build.ninja ]]; then
    meson setup "$build" "$root" -Dcuda=enabled -Dbench=true -Dtools=false -Dtests=true
fi
grep -q 'have_snapshot_cuda\|jsonlw_snapshot_kernels' "$build/build.ninja" ||
    { echo "pack.sh: $build was not configured with the CUDA backend" >&2; exit 1; }

# The snapshot test executables, by name from meson (a fresh build dir has no outputs yet),
# but those built against the emulated device: CI runs them, a GPU adds nothing to them.
mapfile -t tests < <(meson introspect "$build" --targets | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    emulated = t["name"].startswith("test_snapshot_emu_") or t["name"].endswith("_emulated")
    if t["name"].startswith("test_snapshot_") and t["type"] == "executable" and not emulated:
        print(os.path.relpath(t["filename"][0], sys.argv[1]))' "$build" | sort)
# jsonlw-bench too: run.sh measures the serializer_threads scaling on the machine's cores.
targets=(bench/gpu/jsonlw-bench-gpu bench/jsonlw-bench "${tests[@]}")
ninja -C "$build" -j"$jobs" "${targets[@]}"
# The Python package (when the build has it: pybind11 found), for tests/python/gpu_check.py.
mapfile -t pytargets < <(meson introspect "$build" --targets | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if t["subproject"] is None and t["filename"] and "/python/jsonlw/" in t["filename"][0]:
        print(os.path.relpath(t["filename"][0], sys.argv[1]))' "$build" | sort -u)
((${#pytargets[@]})) && ninja -C "$build" -j"$jobs" "${pytargets[@]}"

rm -rf "$dist"
mkdir -p "$dist/bin" "$dist/lib"
for t in "${targets[@]}"; do cp "$build/$t" "$dist/bin/"; done
strip --strip-debug "$dist"/bin/* 2>/dev/null || true
# Shared libraries outside the C/C++ runtime (a bare GPU machine may not have them).
for b in "$dist"/bin/*; do
    ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dist/lib/"; done
if ((${#pytargets[@]})); then
    mkdir -p "$dist/python/jsonlw"
    cp "$build"/python/jsonlw/*.py "$build"/python/jsonlw/_native*.so "$dist/python/jsonlw/"
    strip --strip-debug "$dist"/python/jsonlw/_native*.so  # 63 MB with debug info; the tree travels in 64 MiB
    cp "$root/tests/python/gpu_check.py" "$dist/"
fi
cp "$root/bench/gpu/run.sh" "$dist/run.sh"
chmod +x "$dist/run.sh"
echo "pack.sh: $(du -sh "$dist" | cut -f1) in $dist:"
ls -la "$dist/bin" "$dist/lib"
