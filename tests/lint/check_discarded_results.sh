#!/usr/bin/env bash
# Fails when project code throws away a function's result with a `(void)` cast. Most such calls
# return absl::Status / absl::StatusOr (or protobuf's util::Status), and a dropped status is a
# silent failure: handle it, return it, or log it with the reason it may be ignored.
# Allowed: `(void)name;` for an unused variable, and `(void)::call(...)` / `(void)!::call(...)` for
# C library calls whose errno result is deliberately ignored (best-effort fsync, fchmod, write in
# a forked child).
# Usage: check_discarded_results.sh SOURCE_DIR
set -euo pipefail
src="${1:?usage: check_discarded_results.sh SOURCE_DIR}"
cd "$src"
dirs=(common crypto party leader server cli bench tests)
# A (void) cast followed by a (possibly qualified) name and a call parenthesis.
pattern='\(void\)\s*!?\s*(?!::)[A-Za-z_][A-Za-z0-9_:.>\-]*\s*\('
hits="$(grep -rnP --include='*.cc' --include='*.h' "$pattern" "${dirs[@]}" || true)"
if [ -n "$hits" ]; then
  echo "discarded results (handle, return or log the status instead of casting it to void):"
  echo "$hits"
  exit 1
fi
count="$(grep -rhoP --include='*.cc' --include='*.h' '\(void\)' "${dirs[@]}" | wc -l)"
echo "discarded results: none ($count (void) casts, all on variables or C library calls)"
