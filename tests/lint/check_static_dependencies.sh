#!/usr/bin/env bash
# The four programs load no shared gRPC, Protobuf, Abseil or yaml-cpp library when they are
# linked with FEDANON_STATIC_DEPS (cmake/StaticDependencies.cmake), and do load OpenSSL (kept
# shared for Debian's security updates); a test program still loads the shared Abseil.
# Usage: check_static_dependencies.sh BIN_DIR TEST_PROGRAM ON|OFF. Exit 77 (skipped) when
# FEDANON_STATIC_DEPS is OFF or a program is not built (a build of some targets only).
set -euo pipefail
bin_dir="$1" test_program="$2" static="$3"
if [ "$static" != ON ]; then
  echo "FEDANON_STATIC_DEPS is $static: nothing to check"
  exit 77
fi
static_libs='lib(absl_[a-z0-9_]+|grpc\+\+|grpc|gpr|upb|address_sorting|protobuf|yaml-cpp)\.so'
failed=0
for program in fedanon fedanonctl fedanon-leader fedanon-party; do
  path="$bin_dir/$program"
  if [ ! -x "$path" ]; then
    echo "$path is not built"
    exit 77
  fi
  loaded="$(ldd "$path")"
  if grep -Eq "$static_libs" <<< "$loaded"; then
    echo "FAIL: $program loads shared libraries it should have linked statically:"
    grep -E "$static_libs" <<< "$loaded" | sed 's/^/  /'
    failed=1
  fi
  if ! grep -Eq 'libcrypto\.so\.3' <<< "$loaded"; then
    echo "FAIL: $program does not load the shared OpenSSL (libcrypto.so.3)"
    failed=1
  fi
  if [ "$failed" = 0 ]; then
    echo "ok: $program ($(wc -l <<< "$loaded") shared objects)"
  fi
done
# ldd's output read whole first: `ldd | grep -q` under pipefail fails when grep stops reading
# early and ldd dies of SIGPIPE (it did once, under load).
if [ -x "$test_program" ] && ! grep -q 'libabsl_' <<< "$(ldd "$test_program")"; then
  echo "FAIL: $test_program should load the shared Abseil (tests keep the shared libraries)"
  failed=1
fi
exit "$failed"
