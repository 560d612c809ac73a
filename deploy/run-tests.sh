#!/usr/bin/env bash
# README's test command: install dependencies, build, run the whole test suite with CTest.
# Usage: deploy/run-tests.sh [preset] [extra ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
./deploy/build.sh "$preset"
jobs="$(nproc 2>/dev/null || echo 2)"
ctest --preset "$preset" -j"$jobs" "$@"
