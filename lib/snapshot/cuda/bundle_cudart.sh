#!/bin/sh
# meson install script: merges the static CUDA runtime into the installed snapshot archive.
#   bundle_cudart.sh LIB (relative to the install prefix) CUDART_STATIC_A AR
# A consumer that only uses the CPU backend then links libjsonlw_snapshot.a with plain g++
# (cuda_stage.o and kernels.o come along, they reference cudart; cudart comes along with them).
set -eu
lib="$MESON_INSTALL_DESTDIR_PREFIX/$1"
cudart=$2
ar=$3
[ -f "$lib" ] || { echo "bundle_cudart.sh: $lib not installed" >&2; exit 1; }
tmp="$lib.bundle.tmp"
rm -f "$tmp"
# MRI script: one archive with every member of both (duplicate member names are kept).
printf 'create %s\naddlib %s\naddlib %s\nsave\nend\n' "$tmp" "$lib" "$cudart" | "$ar" -M
mv -f "$tmp" "$lib"
[ -n "${MESON_INSTALL_QUIET:-}" ] || echo "Bundled $cudart into $lib"
