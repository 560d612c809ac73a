#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: the CTest tests of the `fuzz` label
# (tests/fuzz/CMakeLists.txt, docs/fuzzing.md). The fuzzer starts from the checked-in corpus and
# crashes (inputs that once crashed it are run first) and writes the new corpus entries it finds
# to a temporary directory, removed afterwards: the source tree is never written. A crash, leak,
# timeout, out-of-memory or broken invariant fails the test; the input that caused it is kept in
# ARTIFACT_DIR (its path is printed as "Test unit written to ...").
# Usage: run_fuzzer.sh FUZZER SECONDS ARTIFACT_DIR [-flag=value...] CORPUS_DIR...
#   (flags go to libFuzzer; corpus directories that do not exist are skipped)
set -euo pipefail
fuzzer="$1"
seconds="$2"
artifacts="$3"
shift 3
work="$(mktemp -d "${TMPDIR:-/tmp}/fedanon-fuzz-corpus.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
# Stack traces with function names and lines (the sanitizers look for llvm-symbolizer).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer >/dev/null 2>&1; then
  export ASAN_SYMBOLIZER_PATH="$(readlink -f "$(command -v llvm-symbolizer)")"
fi
flags=()
dirs=()
for a in "$@"; do
  case "$a" in
    -*) flags+=("$a") ;;
    *) if [ -d "$a" ]; then dirs+=("$a"); fi ;;
  esac
done
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "${flags[@]}" "$work" "${dirs[@]}"
