#!/usr/bin/env bash
# Installs dependencies (deploy/install-deps.sh) and builds fedanon with a CMake preset.
# Usage: deploy/build.sh [preset]   (default: "default"; "sanitize" for ASan+UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
./deploy/install-deps.sh
cmake --preset "$preset" >/dev/null
jobs="$(nproc 2>/dev/null || echo 2)"
cmake --build --preset "$preset" -j"$jobs"
