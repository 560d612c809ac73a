#!/usr/bin/env bash
# Installs dependencies (deploy/install-deps.sh) and builds fedanon with a CMake preset.
# Usage: deploy/build.sh [preset] [target...]
#   preset: "default" (developer/CI build), "sanitize" (ASan+UBSan; unit and malicious tests),
#   "fuzz" (clang 16: libFuzzer targets, -Wthread-safety), "release" (plain Release, no -Werror).
#   Targets: the preset's own (CMakePresets.json) when none are given.
# An existing build directory is reused (only what changed is rebuilt). Progress goes to stderr as
# "build: NN% ..." lines (compiler messages and errors in full).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
./deploy/install-deps.sh >&2
echo "build: configuring preset '$preset'" >&2
cmake --preset "$preset" >/dev/null
jobs="$(nproc 2>/dev/null || echo 2)"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
# Make prints "[ 42%] Building CXX object ..." lines: keep them short, pass everything else on.
if ! cmake --build --preset "$preset" -j"$jobs" "${targets[@]}" 2>&1 |
  awk '/^\[ *[0-9]+%\] Built target/ { next }
       /^\[ *[0-9]+%\] (Building|Linking)/ {
         match($0, /[0-9]+%/); pct = substr($0, RSTART, RLENGTH)
         sub(/^\[ *[0-9]+%\] /, ""); n = split($NF, path, "/")
         printf "build: %4s %s %s\n", pct, $1, path[n]; fflush(); next }
       { print; fflush() }' >&2; then
  echo "build: failed (preset '$preset')" >&2
  exit 1
fi
echo "build: done (build/$preset)" >&2
