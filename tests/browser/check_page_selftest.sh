#!/usr/bin/env bash
# The harness checked on two fixture pages: a clean one (exit 0, every data-check value, a PNG
# screenshot) and a broken one (exit 1, each kind of problem named).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/browser_test_env.sh"
require_browser
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$here/check_page.sh" "$here/fixtures/clean.html" "$out/clean" || fail "the clean page did not pass"
python3 - "$out/clean" << 'PY' || fail "values.json or screenshot.png of the clean page is wrong"
import json, sys
out = sys.argv[1]
values = json.load(open(f"{out}/values.json"))
expected = {"ce": "15.70", "dr": "0.066188", "scripted": "42"}
assert values == expected, values
png = open(f"{out}/screenshot.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, len(png)
PY

status=0
"$here/check_page.sh" "$here/fixtures/broken.html" "$out/broken" 2> "$out/broken.err" || status=$?
[ "$status" -eq 1 ] || fail "the broken page gave exit code $status, not 1"
for expected in "console error: fixture console error" "page error: ReferenceError" \
  "failed load: net::ERR_FILE_NOT_FOUND" "data-check 'twice' is used by more than one element"; do
  grep -qF "$expected" "$out/broken.err" || fail "no '$expected' in: $(cat "$out/broken.err")"
done

status=0
"$here/check_page.sh" "$here/fixtures/no-such-page.html" "$out/none" 2> /dev/null || status=$?
[ "$status" -ne 0 ] || fail "a missing page passed"
echo "check_page self-test: clean page passed, broken page failed with every problem named"
